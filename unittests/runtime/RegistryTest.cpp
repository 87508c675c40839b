//===- RegistryTest.cpp - The function registry and its C API -------------===//

#include "vmjit/runtime/registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace vmjit;

namespace {

Function constant(int64_t V) {
  return Function::fromTyped("const", [V] { return V; });
}

TEST(RegistryTest, AddFindRemove) {
  Registry R;
  EXPECT_FALSE(R.find("a").has_value());
  R.add("a", constant(1));
  std::optional<Function> F = R.find("a");
  ASSERT_TRUE(F.has_value());
  EXPECT_EQ((*F)().cast<int64_t>(), 1);
  EXPECT_TRUE(R.remove("a"));
  EXPECT_FALSE(R.remove("a"));
  EXPECT_FALSE(R.find("a").has_value());
}

TEST(RegistryTest, NamesAreSorted) {
  Registry R;
  for (const char *Name : {"vm.builtin.copy", "add", "tensor.add", "Zeta"})
    R.add(Name, constant(0));
  EXPECT_EQ(R.names(), (std::vector<std::string>{"Zeta", "add", "tensor.add",
                                                 "vm.builtin.copy"}));
}

TEST(RegistryTest, DuplicateNeedsOverride) {
  Registry R;
  R.add("f", constant(1));
  try {
    R.add("f", constant(2));
    FAIL() << "duplicate add did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "ValueError");
    EXPECT_NE(E.message().find("'f'"), std::string::npos) << E.message();
  }
  EXPECT_EQ((*R.find("f"))().cast<int64_t>(), 1);
  R.add("f", constant(2), /*AllowOverride=*/true);
  EXPECT_EQ((*R.find("f"))().cast<int64_t>(), 2);
  EXPECT_EQ(R.names().size(), 1u);
}

TEST(RegistryTest, NullFunctionIsRejected) {
  Registry R;
  EXPECT_THROW(R.add("null", Function()), Error);
  EXPECT_TRUE(R.names().empty());
}

TEST(RegistryTest, AddTyped) {
  Registry R;
  R.addTyped("mul", [](int64_t A, int64_t B) { return A * B; });
  std::optional<Function> F = R.find("mul");
  ASSERT_TRUE(F.has_value());
  EXPECT_EQ(F->name(), "mul");
  EXPECT_EQ((*F)(6, 7).cast<int64_t>(), 42);
}

TEST(RegistryTest, RegistryHoldsAReference) {
  Registry R;
  Function F = constant(3);
  R.add("f", F);
  EXPECT_EQ(F.useCount(), 2u);
  R.remove("f");
  EXPECT_EQ(F.useCount(), 1u);
}

TEST(RegistryTest, GlobalCApi) {
  const char *Name = "test.RegistryTest.GlobalCApi";
  Function F = constant(11);
  ASSERT_EQ(VMJITFunctionSetGlobal(Name, F.get()->raw(), 0), 0);
  EXPECT_TRUE(Registry::global().find(Name).has_value());
  // A second registration fails without override, succeeds with it.
  Function G = constant(12);
  EXPECT_EQ(VMJITFunctionSetGlobal(Name, G.get()->raw(), 0), -1);
  EXPECT_EQ(takeRaisedError().kind(), "ValueError");
  ASSERT_EQ(VMJITFunctionSetGlobal(Name, G.get()->raw(), 1), 0);
  VMJITObject *Out = nullptr;
  ASSERT_EQ(VMJITFunctionGetGlobal(Name, &Out), 0);
  ASSERT_NE(Out, nullptr);
  EXPECT_EQ(Out, G.get()->raw());
  EXPECT_EQ(G.useCount(), 3u); // G, the registry and Out
  VMJITObjectDecRef(Out);
  EXPECT_TRUE(Registry::global().remove(Name));
  EXPECT_EQ(G.useCount(), 1u);
  ASSERT_EQ(VMJITFunctionGetGlobal(Name, &Out), 0);
  EXPECT_EQ(Out, nullptr);
}

TEST(RegistryTest, SetGlobalRejectsNonFunctions) {
  Error NotAFunction("ValueError", "x");
  EXPECT_EQ(VMJITFunctionSetGlobal("test.RegistryTest.bad",
                                   NotAFunction.get()->raw(), 1),
            -1);
  EXPECT_EQ(takeRaisedError().kind(), "TypeError");
  EXPECT_FALSE(Registry::global().find("test.RegistryTest.bad").has_value());
}

TEST(RegistryTest, ConcurrentAddAndFind) {
  Registry R;
  constexpr int Threads = 4, PerThread = 200;
  std::atomic<int> Found{0};
  std::vector<std::thread> Workers;
  for (int T = 0; T < Threads; ++T)
    Workers.emplace_back([&R, &Found, T] {
      for (int I = 0; I < PerThread; ++I) {
        std::string Name = "f" + std::to_string(T) + "." + std::to_string(I);
        R.add(Name, constant(T * PerThread + I));
        if (auto F = R.find(Name))
          if ((*F)().cast<int64_t>() == T * PerThread + I)
            ++Found;
        // Look up another thread's names while they are being added.
        (void)R.find("f" + std::to_string((T + 1) % Threads) + ".0");
      }
    });
  for (std::thread &W : Workers)
    W.join();
  EXPECT_EQ(Found, Threads * PerThread);
  EXPECT_EQ(R.names().size(), size_t(Threads * PerThread));
}

} // namespace
