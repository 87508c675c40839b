//===- NormTest.cpp - rms_norm and layer_norm -----------------------------===//

#include "KernelTestUtil.h"

#include <cmath>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

template <typename T>
std::vector<double> refRmsNorm(const Tensor &X, const Tensor &W, double Eps) {
  const int64_t D = W.numel(), Rows = X.numel() / D;
  std::vector<double> Y;
  for (int64_t R = 0; R < Rows; ++R) {
    double S = 0;
    for (int64_t I = 0; I < D; ++I)
      S += std::pow(double(X.data<T>()[R * D + I]), 2);
    double Inv = 1 / std::sqrt(S / double(D) + Eps);
    for (int64_t I = 0; I < D; ++I)
      Y.push_back(double(X.data<T>()[R * D + I]) * Inv *
                  double(W.data<T>()[I]));
  }
  return Y;
}

template <typename T>
std::vector<double> refLayerNorm(const Tensor &X, const Tensor &G,
                                 const Tensor &B, double Eps) {
  const int64_t D = G.numel(), Rows = X.numel() / D;
  std::vector<double> Y;
  for (int64_t R = 0; R < Rows; ++R) {
    double Mean = 0, Var = 0;
    for (int64_t I = 0; I < D; ++I)
      Mean += double(X.data<T>()[R * D + I]);
    Mean /= double(D);
    for (int64_t I = 0; I < D; ++I)
      Var += std::pow(double(X.data<T>()[R * D + I]) - Mean, 2);
    Var /= double(D);
    for (int64_t I = 0; I < D; ++I)
      Y.push_back((double(X.data<T>()[R * D + I]) - Mean) /
                      std::sqrt(Var + Eps) * double(G.data<T>()[I]) +
                  double(B.data<T>()[I]));
  }
  return Y;
}

template <typename T> class NormTypedTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NormTypedTest, FloatTypes);

TYPED_TEST(NormTypedTest, RmsNormAgainstReference) {
  using T = TypeParam;
  Tensor X = iota<T>({2, 3, 8}, 0.13, -1.5);
  Tensor W = iota<T>({8}, 0.25, 0.5);
  Tensor Y = tensorOf(call("tensor.rms_norm", X, W, 1e-5));
  ASSERT_EQ(shapeOf(Y), (std::vector<int64_t>{2, 3, 8}));
  std::vector<double> Ref = refRmsNorm<T>(X, W, 1e-5);
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(Y.data<T>()[I], Ref[I], 1e-5) << I;
  Tensor Out = Tensor::empty({2, 3, 8}, dtypeFor<T>());
  EXPECT_TRUE(call("kernel.rms_norm", X, W, 1e-5, Out).isNone());
  EXPECT_EQ(values<T>(Out), values<T>(Y));
  // In place.
  call("kernel.rms_norm", X, W, 1e-5, X);
  EXPECT_EQ(values<T>(X), values<T>(Y));
}

TYPED_TEST(NormTypedTest, RmsNormSimpleValues) {
  using T = TypeParam;
  // mean(x^2) = (9 + 16) / 2 = 12.5; eps 0 (an int).
  Tensor X = make<T>({2}, {3, 4});
  Tensor W = make<T>({2}, {1, 2});
  std::vector<T> Y = values<T>(tensorOf(call("tensor.rms_norm", X, W, 0)));
  EXPECT_NEAR(Y[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(Y[1], 8 / std::sqrt(12.5), 1e-6);
}

TYPED_TEST(NormTypedTest, LayerNormAgainstReference) {
  using T = TypeParam;
  Tensor X = iota<T>({4, 6}, 0.37, -2);
  Tensor G = iota<T>({6}, 0.1, 0.8);
  Tensor B = iota<T>({6}, -0.05, 0.2);
  Tensor Y = tensorOf(call("tensor.layer_norm", X, G, B, 1e-5));
  ASSERT_EQ(shapeOf(Y), (std::vector<int64_t>{4, 6}));
  std::vector<double> Ref = refLayerNorm<T>(X, G, B, 1e-5);
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(Y.data<T>()[I], Ref[I], 1e-5) << I;
  Tensor Out = Tensor::empty({4, 6}, dtypeFor<T>());
  EXPECT_TRUE(call("kernel.layer_norm", X, G, B, 1e-5, Out).isNone());
  EXPECT_EQ(values<T>(Out), values<T>(Y));
  call("kernel.layer_norm", X, G, B, 1e-5, X);
  EXPECT_EQ(values<T>(X), values<T>(Y));
}

TYPED_TEST(NormTypedTest, LayerNormSimpleValues) {
  using T = TypeParam;
  // mean 2, var 2/3.
  Tensor X = make<T>({3}, {1, 2, 3});
  Tensor G = make<T>({3}, {1, 1, 2});
  Tensor B = make<T>({3}, {0, 10, 0});
  std::vector<T> Y =
      values<T>(tensorOf(call("tensor.layer_norm", X, G, B, 0.0)));
  const double S = std::sqrt(2.0 / 3.0);
  EXPECT_NEAR(Y[0], -1 / S, 1e-6);
  EXPECT_NEAR(Y[1], 10.0, 1e-6);
  EXPECT_NEAR(Y[2], 2 / S, 1e-6);
}

TEST(NormTest, LayerNormLargeOffsetIsStable) {
  // Two-pass variance: a large mean does not cancel the small spread.
  Tensor X = make<float>({4}, {10000.0f, 10001.0f, 10002.0f, 10003.0f});
  Tensor G = make<float>({4}, {1, 1, 1, 1});
  Tensor B = make<float>({4}, {0, 0, 0, 0});
  std::vector<float> Y =
      values<float>(tensorOf(call("tensor.layer_norm", X, G, B, 0)));
  const double S = std::sqrt(1.25);
  EXPECT_NEAR(Y[0], -1.5 / S, 1e-5);
  EXPECT_NEAR(Y[3], 1.5 / S, 1e-5);
}

TEST(NormTest, WeightShapeMismatch) {
  Tensor X = iota<float>({2, 4});
  Tensor W = iota<float>({3});
  Error E = errorOf([&] { call("tensor.rms_norm", X, W, 1e-5); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.rms_norm: argument 2 has shape [3], expected "
                         "[4] (the last dimension of x, shape [2, 4])");
  Tensor G = iota<float>({4});
  Tensor B = iota<float>({1, 4});
  EXPECT_EQ(
      errorOf([&] { call("tensor.layer_norm", X, G, B, 1e-5); }).message(),
      "tensor.layer_norm: argument 3 has shape [1, 4], expected [4] (the "
      "last dimension of x, shape [2, 4])");
}

TEST(NormTest, DTypeMismatchAndUnsupported) {
  Tensor X = iota<float>({2, 4});
  Tensor W = iota<double>({4});
  EXPECT_EQ(errorOf([&] { call("tensor.rms_norm", X, W, 1e-5); }).message(),
            "tensor.rms_norm: dtypes float32 and float64 do not match (shapes "
            "[2, 4] and [4])");
  Tensor XI = iota<int32_t>({4});
  Tensor WI = iota<int32_t>({4});
  EXPECT_EQ(errorOf([&] { call("tensor.rms_norm", XI, WI, 1); }).message(),
            "tensor.rms_norm: dtype int32 is not supported (expected float32 "
            "or float64)");
}

TEST(NormTest, RankZeroAndBadEps) {
  Tensor S = make<float>({}, {1});
  Tensor W = make<float>({1}, {1});
  EXPECT_EQ(errorOf([&] { call("tensor.rms_norm", S, W, 1e-5); }).message(),
            "tensor.rms_norm: x has shape []; it needs at least one dimension");
  Tensor X = iota<float>({4});
  Tensor W4 = iota<float>({4});
  Error E = errorOf([&] { call("tensor.rms_norm", X, W4, String("eps")); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "tensor.rms_norm: argument 3 expected float but got "
                         "str");
}

TEST(NormTest, OutWrongShapeAndDType) {
  Tensor X = iota<float>({2, 4});
  Tensor W = iota<float>({4});
  Tensor Bad = Tensor::empty({8}, dtype::Float32);
  EXPECT_EQ(
      errorOf([&] { call("kernel.rms_norm", X, W, 1e-5, Bad); }).message(),
      "kernel.rms_norm: out has shape [8] and dtype float32, expected "
      "shape [2, 4] and dtype float32");
  Tensor BadType = Tensor::empty({2, 4}, dtype::Float64);
  EXPECT_EQ(
      errorOf([&] { call("kernel.rms_norm", X, W, 1e-5, BadType); }).message(),
      "kernel.rms_norm: out has shape [2, 4] and dtype float64, expected "
      "shape [2, 4] and dtype float32");
  Tensor B = iota<float>({4});
  EXPECT_EQ(
      errorOf([&] { call("kernel.layer_norm", X, W, B, 1e-5, Bad); }).message(),
      "kernel.layer_norm: out has shape [8] and dtype float32, expected "
      "shape [2, 4] and dtype float32");
  EXPECT_EQ(
      errorOf([&] {
        call("kernel.layer_norm", X, W, B, 1e-5, BadType);
      }).message(),
      "kernel.layer_norm: out has shape [2, 4] and dtype float64, expected "
      "shape [2, 4] and dtype float32");
}

TEST(NormTest, WeightsMustNotAliasOut) {
  Tensor X = iota<float>({4});
  Tensor W = iota<float>({4});
  EXPECT_EQ(errorOf([&] { call("kernel.rms_norm", X, W, 1e-5, W); }).message(),
            "kernel.rms_norm: out overlaps argument 2");
}

} // namespace
