//===- BlasTest.cpp - OpenBLAS, loaded at the first matrix product --------===//
//
// Each test runs in a process of its own under ctest (one GoogleTest case
// per process), so "not loaded yet" is the test's own state; run as one
// binary, a test that finds OpenBLAS loaded by an earlier one skips.
//
//===----------------------------------------------------------------------===//

#include "blas.h"
#include "KernelTestUtil.h"

#include <cstdlib>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

TEST(BlasTest, LoadedAtTheFirstProductNotAtRegistration) {
  if (kernels::blasLoaded())
    GTEST_SKIP() << "an earlier test in this process loaded OpenBLAS";
  // Registration and other kernels leave it unloaded.
  Tensor A = make<float>({2, 2}, {1, 2, 3, 4});
  Tensor Sum = tensorOf(call("tensor.add", A, A));
  EXPECT_EQ(values<float>(Sum), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_FALSE(kernels::blasLoaded());
  Tensor C = tensorOf(call("tensor.matmul", A, A));
  EXPECT_TRUE(kernels::blasLoaded());
  EXPECT_EQ(values<float>(C), (std::vector<float>{7, 10, 15, 22}));
}

TEST(BlasTest, RunsOnOneThreadByDefault) {
  if (std::getenv("OPENBLAS_NUM_THREADS"))
    GTEST_SKIP() << "OPENBLAS_NUM_THREADS is set";
  EXPECT_EQ(kernels::blasFunctions("test").GetNumThreads(), 1);
}

} // namespace
