//===- MatmulTest.cpp - tensor.matmul and kernel.matmul -------------------===//

#include "KernelTestUtil.h"

#include <cmath>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

/// Naive [..., m, k] x [k, n] with a triple loop, in double.
std::vector<double> naiveMatmul(const Tensor &A, const Tensor &B, auto Tag) {
  using T = decltype(Tag);
  const int64_t K = B.shape()[0], N = B.shape()[1];
  const int64_t M = A.numel() / K;
  std::vector<double> C(size_t(M * N), 0.0);
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N; ++J)
      for (int64_t P = 0; P < K; ++P)
        C[I * N + J] +=
            double(A.data<T>()[I * K + P]) * double(B.data<T>()[P * N + J]);
  return C;
}

template <typename T> class MatmulTypedTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MatmulTypedTest, FloatTypes);

TYPED_TEST(MatmulTypedTest, TwoByTwo) {
  using T = TypeParam;
  Tensor A = make<T>({2, 2}, {1, 2, 3, 4});
  Tensor B = make<T>({2, 2}, {5, 6, 7, 8});
  Tensor C = tensorOf(call("tensor.matmul", A, B));
  EXPECT_EQ(shapeOf(C), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<T>(C), (std::vector<T>{19, 22, 43, 50}));
}

TYPED_TEST(MatmulTypedTest, BatchedAgainstNaive) {
  using T = TypeParam;
  Tensor A = iota<T>({2, 3, 4}, 0.5, -3);
  Tensor B = iota<T>({4, 5}, -0.25, 2);
  Tensor C = tensorOf(call("tensor.matmul", A, B));
  ASSERT_EQ(shapeOf(C), (std::vector<int64_t>{2, 3, 5}));
  std::vector<double> Ref = naiveMatmul(A, B, T{});
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(C.data<T>()[I], Ref[I], 1e-5) << I;
  Tensor Out = Tensor::empty({2, 3, 5}, dtypeFor<T>());
  EXPECT_TRUE(call("kernel.matmul", A, B, Out).isNone());
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(Out.data<T>()[I], Ref[I], 1e-5) << I;
}

TYPED_TEST(MatmulTypedTest, RankOneIsARowVector) {
  using T = TypeParam;
  Tensor A = make<T>({3}, {1, 2, 3});
  Tensor B = iota<T>({3, 4});
  Tensor C = tensorOf(call("tensor.matmul", A, B));
  ASSERT_EQ(shapeOf(C), (std::vector<int64_t>{4}));
  std::vector<double> Ref = naiveMatmul(A, B, T{});
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(C.data<T>()[I], Ref[I], 1e-5) << I;
  EXPECT_EQ(values<T>(C), (std::vector<T>{32, 38, 44, 50}));
}

TYPED_TEST(MatmulTypedTest, OneRowUsesTheSameResultAsGemm) {
  using T = TypeParam;
  // [1, 1, 64] x [64, 48]: one row (the GEMV path).
  Tensor A = iota<T>({1, 1, 64}, 0.01, -0.3);
  Tensor B = iota<T>({64, 48}, 0.001, -1);
  Tensor C = tensorOf(call("tensor.matmul", A, B));
  ASSERT_EQ(shapeOf(C), (std::vector<int64_t>{1, 1, 48}));
  std::vector<double> Ref = naiveMatmul(A, B, T{});
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(C.data<T>()[I], Ref[I], 1e-4) << I;
}

TYPED_TEST(MatmulTypedTest, LargerAgainstNaive) {
  using T = TypeParam;
  Tensor A = iota<T>({3, 17, 33}, 0.003, -0.5);
  Tensor B = iota<T>({33, 29}, -0.002, 0.7);
  Tensor C = tensorOf(call("tensor.matmul", A, B));
  ASSERT_EQ(shapeOf(C), (std::vector<int64_t>{3, 17, 29}));
  std::vector<double> Ref = naiveMatmul(A, B, T{});
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(C.data<T>()[I], Ref[I], 1e-3) << I;
}

TEST(MatmulTest, ZeroInnerDimensionGivesZeros) {
  Tensor A = Tensor::empty({2, 0}, dtype::Float32);
  Tensor B = Tensor::empty({0, 3}, dtype::Float32);
  Tensor C = tensorOf(call("tensor.matmul", A, B));
  EXPECT_EQ(shapeOf(C), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(C), (std::vector<float>(6, 0.0f)));
  Tensor E = Tensor::empty({0, 4}, dtype::Float32);
  Tensor F = Tensor::empty({4, 3}, dtype::Float32);
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.matmul", E, F))),
            (std::vector<int64_t>{0, 3}));
}

TEST(MatmulTest, ShapeMismatch) {
  Tensor A = iota<float>({2, 3});
  Tensor B = iota<float>({4, 5});
  Error E = errorOf([&] { call("tensor.matmul", A, B); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.matmul: shapes [2, 3] and [4, 5] do not "
                         "match ([..., m, k] x [k, n])");
  // b must be 2-D; a needs at least one dimension.
  Tensor B3 = iota<float>({1, 3, 5});
  EXPECT_EQ(errorOf([&] { call("tensor.matmul", A, B3); }).message(),
            "tensor.matmul: shapes [2, 3] and [1, 3, 5] do not match ([..., "
            "m, k] x [k, n])");
  Tensor S = make<float>({}, {1});
  EXPECT_EQ(errorOf([&] { call("tensor.matmul", S, B); }).message(),
            "tensor.matmul: shapes [] and [4, 5] do not match ([..., m, k] x "
            "[k, n])");
  Tensor Out = Tensor::empty({2, 5}, dtype::Float32);
  EXPECT_EQ(errorOf([&] { call("kernel.matmul", A, B, Out); }).message(),
            "kernel.matmul: shapes [2, 3] and [4, 5] do not match ([..., m, "
            "k] x [k, n])");
}

TEST(MatmulTest, DTypes) {
  Tensor A = iota<float>({2, 3});
  Tensor B = iota<double>({3, 2});
  EXPECT_EQ(errorOf([&] { call("tensor.matmul", A, B); }).message(),
            "tensor.matmul: dtypes float32 and float64 do not match (shapes "
            "[2, 3] and [3, 2])");
  Tensor I = iota<int32_t>({2, 2});
  EXPECT_EQ(errorOf([&] { call("tensor.matmul", I, I); }).message(),
            "tensor.matmul: dtype int32 is not supported (expected float32 "
            "or float64)");
}

TEST(MatmulTest, OutWrongShapeAndDType) {
  Tensor A = iota<float>({2, 3});
  Tensor B = iota<float>({3, 4});
  Tensor Bad = Tensor::empty({4, 2}, dtype::Float32);
  Error E = errorOf([&] { call("kernel.matmul", A, B, Bad); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "kernel.matmul: out has shape [4, 2] and dtype "
                         "float32, expected shape [2, 4] and dtype float32");
  Tensor BadType = Tensor::empty({2, 4}, dtype::Float64);
  EXPECT_EQ(errorOf([&] { call("kernel.matmul", A, B, BadType); }).message(),
            "kernel.matmul: out has shape [2, 4] and dtype float64, expected "
            "shape [2, 4] and dtype float32");
}

TEST(MatmulTest, OutMustNotAliasAnInput) {
  Tensor A = iota<float>({3, 3});
  Tensor B = iota<float>({3, 3});
  Error E = errorOf([&] { call("kernel.matmul", A, B, A); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "kernel.matmul: out overlaps argument 1");
  EXPECT_EQ(errorOf([&] { call("kernel.matmul", A, B, B); }).message(),
            "kernel.matmul: out overlaps argument 2");
}

} // namespace
