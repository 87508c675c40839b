//===- RegisterTest.cpp - Registration of the standard functions ----------===//

#include "KernelTestUtil.h"

#include <algorithm>
#include <thread>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

const char *const kAllNames[] = {
    "scalar.add",        "scalar.sub",      "scalar.mul",
    "scalar.div",        "scalar.mod",      "scalar.min",
    "scalar.max",        "scalar.lt",       "scalar.le",
    "scalar.gt",         "scalar.ge",       "scalar.eq",
    "scalar.ne",         "scalar.neg",      "scalar.not",
    "tensor.add",        "tensor.sub",      "tensor.mul",
    "tensor.div",        "kernel.add",      "kernel.sub",
    "kernel.mul",        "kernel.div",      "tensor.matmul",
    "kernel.matmul",     "tensor.relu",     "tensor.gelu",
    "tensor.exp",        "kernel.relu",     "kernel.gelu",
    "kernel.exp",        "tensor.softmax",  "kernel.softmax",
    "tensor.rms_norm",   "kernel.rms_norm", "tensor.layer_norm",
    "kernel.layer_norm", "tensor.reshape",  "tensor.transpose",
    "tensor.sum",        "tensor.full",     "tensor.item"};

TEST(RegisterTest, EveryContractNameIsThere) {
  Registry R;
  kernels::registerScalarFunctions(R);
  kernels::registerTensorFunctions(R);
  std::vector<std::string> Names = R.names();
  EXPECT_EQ(Names.size(), std::size(kAllNames));
  for (const char *Name : kAllNames) {
    auto F = R.find(Name);
    ASSERT_TRUE(F.has_value()) << Name;
    EXPECT_EQ(F->name(), Name);
    EXPECT_TRUE(F->get()->isFreeEntry()) << Name;
  }
  // No vm.builtin.* here: those belong to the VM.
  EXPECT_TRUE(std::none_of(Names.begin(), Names.end(), [](const auto &N) {
    return N.rfind("vm.builtin.", 0) == 0;
  }));
}

TEST(RegisterTest, ScalarAndTensorSetsAreSeparate) {
  Registry S, T;
  kernels::registerScalarFunctions(S);
  kernels::registerTensorFunctions(T);
  EXPECT_EQ(S.names().size(), 15u);
  EXPECT_TRUE(S.find("scalar.add").has_value());
  EXPECT_FALSE(S.find("tensor.add").has_value());
  EXPECT_TRUE(T.find("kernel.matmul").has_value());
  EXPECT_FALSE(T.find("scalar.add").has_value());
}

TEST(RegisterTest, StandardKernelsRegisterOnceIntoTheGlobalRegistry) {
  // Concurrent first calls, then more: no "already registered" error.
  std::vector<std::thread> Threads;
  for (int I = 0; I < 4; ++I)
    Threads.emplace_back([] { kernels::registerStandardKernels(); });
  for (auto &Th : Threads)
    Th.join();
  EXPECT_NO_THROW(kernels::registerStandardKernels());
  for (const char *Name : kAllNames)
    EXPECT_TRUE(Registry::global().find(Name).has_value()) << Name;
  Function Add = *Registry::global().find("tensor.add");
  Tensor A = iota<float>({2});
  EXPECT_EQ(values<float>(tensorOf(Add(A, A))), (std::vector<float>{0, 2}));
}

} // namespace
