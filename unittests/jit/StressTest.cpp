// The concurrency stress test: 8 threads, each with its own VM over one
// shared Executable and one shared JIT (tiered, background compiles),
// call many functions (loops, recursion, closures, tuples, tensors,
// errors, step limits) while tier-up swaps and on-stack replacement
// happen. Every result and every error must be identical to those of a
// single-threaded interpreter run. CI runs it under ThreadSanitizer and,
// with the rest of the tests, under AddressSanitizer + LeakSanitizer.
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <random>
#include <thread>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;

namespace {

constexpr int kThreads = 8;
constexpr int kFamilies = 6;
constexpr int kVariants = 4; // functions per family: 24 bytecode functions

/// Six families of functions, each in kVariants copies that differ in a
/// constant, so that there are many functions to swap.
std::string programText() {
  std::string S = ".const $v = tensor float32 [4] [1, 2, 3, 4]\n";
  for (int K = 0; K < kVariants; ++K) {
    S += fmt::format(R"(
.func loop{0}(n)
  %i = call vm.builtin.copy(0)
  %s = call vm.builtin.copy({0})
head:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %t = call scalar.mul(%i, {1})
  %s = call scalar.add(%s, %t)
  %i = call scalar.add(%i, 1)
  goto head
done:
  ret %s
.end
.func fib{0}(n)
  %c = call scalar.lt(%n, 2)
  if %c else recurse
  %r = call scalar.add(%n, {0})
  ret %r
recurse:
  %a = call scalar.sub(%n, 1)
  %fa = call fib{0}(%a)
  %b = call scalar.sub(%n, 2)
  %fb = call fib{0}(%b)
  %s = call scalar.add(%fa, %fb)
  ret %s
.end
.func add{0}(x, y)
  %r = call scalar.add(%x, %y)
  ret %r
.end
.func closure{0}(n)
  %f = call vm.builtin.make_closure(@add{0}, {1})
  %i = call vm.builtin.copy(0)
  %s = call vm.builtin.copy(0)
head:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %s = call vm.builtin.invoke_closure(%vm, %f, %s)
  %i = call scalar.add(%i, 1)
  goto head
done:
  ret %s
.end
.func tensor{0}(n)
  %acc = call vm.builtin.copy($v)
  %i = call vm.builtin.copy(0)
head:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %acc = call tensor.add(%acc, $v)
  %t = call vm.builtin.make_tuple(%acc, %i)
  %acc = call vm.builtin.tuple_getitem(%t, 0)
  %i = call scalar.add(%i, 1)
  goto head
done:
  %s = call tensor.sum(%acc)
  %r = call tensor.item(%s)
  ret %r
.end
.func failing{0}(n)
  %i = call vm.builtin.copy(%n)
head:
  %c = call scalar.gt(%i, {0})
  if %c else done
  %i = call scalar.sub(%i, 1)
  goto head
done:
  %q = call scalar.div(%n, %i)
  ret %q
.end
)",
                     K, K + 1);
  }
  return S;
}

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe =
      assemble(programText(), "stress.vmasm");
  return Exe;
}

struct Call {
  std::string Func;
  int64_t Arg;
  uint64_t MaxSteps; // 0: unlimited
};

/// The calls each thread makes (in its own shuffled order): every family
/// and variant, a few arguments each, some with a step budget that runs
/// out.
std::vector<Call> workload() {
  const char *Families[kFamilies] = {"loop",   "fib",    "closure",
                                     "tensor", "failing", "add"};
  std::vector<Call> Calls;
  for (const char *F : Families) {
    if (std::string(F) == "add")
      continue; // two parameters: called through the closures
    for (int K = 0; K < kVariants; ++K)
      for (int64_t Arg : {0, 3, 17, 40}) {
        std::string Name = fmt::format("{}{}", F, K);
        if (std::string(F) == "fib" && Arg > 17)
          Arg = 15;
        Calls.push_back({Name, Arg, 0});
        Calls.push_back({Name, Arg, 25});
      }
  }
  return Calls;
}

/// A call's result or error as text.
std::string outcome(VirtualMachine &VM, const Call &C) {
  VM.setCallLimits({.MaxSteps = C.MaxSteps});
  try {
    Any R = VM.call(C.Func, C.Arg);
    if (auto I = R.as<int64_t>())
      return std::to_string(*I);
    if (auto D = R.as<double>())
      return fmt::format("{}", *D);
    return std::string("value of type ") + std::string(R.typeName());
  } catch (const Error &E) {
    return E.format();
  }
}

} // namespace

TEST(StressTest, EightThreadsShareOneExecutableAndJIT) {
  const std::vector<Call> Calls = workload();
  // The reference: one thread, the interpreter only.
  std::vector<std::string> Want;
  {
    auto VM = VirtualMachine::create(program());
    for (const Call &C : Calls)
      Want.push_back(outcome(*VM, C));
  }
  int Errors = 0;
  for (const std::string &W : Want)
    Errors += W.find("Error") != std::string::npos;
  ASSERT_GT(Errors, 10); // the step limits and divisions by zero
  ASSERT_LT(Errors, static_cast<int>(Want.size()) - 10);

  // Holds the shared JIT while the threads' VMs come and go.
  auto Keeper = VirtualMachine::create(program());
  {
    JITOptions O;
    O.Mode = ExecMode::Tiered;
    O.Threshold = 3;
    O.Background = true;
    enableJIT(*Keeper, O);
  }
  TierManager *Shared = tierManagerOf(*Keeper);
  constexpr int kRounds = 6;
  std::atomic<int> Mismatches{0};
  std::vector<TierManager *> Managers(kThreads, nullptr);
  std::vector<std::thread> Threads;
  for (int T = 0; T < kThreads; ++T)
    Threads.emplace_back([&, T] {
      auto VM = VirtualMachine::create(program());
      JITOptions O;
      O.Mode = ExecMode::Tiered;
      O.Threshold = 3; // swaps and OSR early, while the others run
      O.Background = true;
      enableJIT(*VM, O);
      Managers[static_cast<size_t>(T)] = tierManagerOf(*VM);
      std::vector<size_t> Order(Calls.size());
      for (size_t I = 0; I < Order.size(); ++I)
        Order[I] = I;
      std::mt19937 Rng(static_cast<unsigned>(T));
      for (int Round = 0; Round < kRounds; ++Round) {
        std::shuffle(Order.begin(), Order.end(), Rng);
        for (size_t I : Order) {
          std::string Got = outcome(*VM, Calls[I]);
          if (Got != Want[I]) {
            ++Mismatches;
            ADD_FAILURE() << "thread " << T << ", " << Calls[I].Func << "("
                          << Calls[I].Arg << ") steps " << Calls[I].MaxSteps
                          << ":\n got: " << Got << "\nwant: " << Want[I];
          }
        }
      }
      // After every compile has landed, everything runs natively and
      // still agrees.
      tierManagerOf(*VM)->drain();
      for (size_t I = 0; I < Calls.size(); ++I)
        if (outcome(*VM, Calls[I]) != Want[I])
          ++Mismatches;
      for (int K = 0; K < kVariants; ++K)
        if (!VM->isNative(VM->functionIndex(fmt::format("loop{}", K))))
          ++Mismatches;
    });
  auto Start = std::chrono::steady_clock::now();
  for (std::thread &T : Threads)
    T.join();
  double Ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - Start)
                  .count();
  EXPECT_EQ(Mismatches.load(), 0);
  for (TierManager *M : Managers)
    EXPECT_EQ(M, Shared); // one JIT for all the VMs
  int Compiled = 0;
  for (size_t F = 0; F < program()->functions().size(); ++F)
    if (program()->functions()[F].Kind == FunctionKind::Bytecode) {
      EXPECT_TRUE(Shared->stats(static_cast<int64_t>(F)).Compiled)
          << program()->functions()[F].Name;
      Compiled += Shared->stats(static_cast<int64_t>(F)).Compiled;
    }
  fmt::print("stress: {} threads x {} calls, {} of {} functions compiled, {:.0f} ms\n",
             kThreads, Calls.size() * (kRounds + 1), Compiled,
             program()->functions().size(), Ms);
}
