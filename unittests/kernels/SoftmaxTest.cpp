//===- SoftmaxTest.cpp - tensor.softmax and kernel.softmax ----------------===//

#include "KernelTestUtil.h"

#include <cmath>
#include <limits>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

/// Reference softmax along `Axis` of a row-major [Outer, Len, Inner] array.
std::vector<double> refSoftmax(const std::vector<double> &X, int64_t Outer,
                               int64_t Len, int64_t Inner) {
  std::vector<double> Y(X.size());
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t J = 0; J < Inner; ++J) {
      double Max = -INFINITY, Sum = 0;
      for (int64_t I = 0; I < Len; ++I)
        Max = std::max(Max, X[(O * Len + I) * Inner + J]);
      for (int64_t I = 0; I < Len; ++I)
        Sum += std::exp(X[(O * Len + I) * Inner + J] - Max);
      for (int64_t I = 0; I < Len; ++I)
        Y[(O * Len + I) * Inner + J] =
            std::exp(X[(O * Len + I) * Inner + J] - Max) / Sum;
    }
  return Y;
}

template <typename T> std::vector<double> asDoubles(const Tensor &X) {
  std::vector<double> V;
  for (T E : values<T>(X))
    V.push_back(double(E));
  return V;
}

template <typename T> class SoftmaxTypedTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SoftmaxTypedTest, FloatTypes);

TYPED_TEST(SoftmaxTypedTest, LastAxisRowsSumToOne) {
  using T = TypeParam;
  Tensor X = iota<T>({3, 5}, 0.7, -2);
  Tensor Y = tensorOf(call("tensor.softmax", X, -1));
  ASSERT_EQ(shapeOf(Y), (std::vector<int64_t>{3, 5}));
  std::vector<double> Ref = refSoftmax(asDoubles<T>(X), 3, 5, 1);
  for (int R = 0; R < 3; ++R) {
    double Sum = 0;
    for (int C = 0; C < 5; ++C) {
      Sum += Y.data<T>()[R * 5 + C];
      EXPECT_NEAR(Y.data<T>()[R * 5 + C], Ref[R * 5 + C], 1e-6);
    }
    EXPECT_NEAR(Sum, 1.0, 1e-6) << R;
  }
  // axis 1 is the same axis.
  EXPECT_EQ(values<T>(tensorOf(call("tensor.softmax", X, 1))), values<T>(Y));
}

TYPED_TEST(SoftmaxTypedTest, LargeValuesDoNotOverflow) {
  using T = TypeParam;
  Tensor X = make<T>({2}, {1000, 1001});
  std::vector<T> Y = values<T>(tensorOf(call("tensor.softmax", X, 0)));
  const double E = std::exp(-1.0);
  EXPECT_NEAR(Y[0], E / (1 + E), 1e-6);
  EXPECT_NEAR(Y[1], 1 / (1 + E), 1e-6);
  EXPECT_FALSE(std::isnan(Y[0]) || std::isnan(Y[1]));
}

TYPED_TEST(SoftmaxTypedTest, MiddleAxis) {
  using T = TypeParam;
  Tensor X = iota<T>({2, 3, 4}, 0.37, -1);
  Tensor Y = tensorOf(call("tensor.softmax", X, 1));
  std::vector<double> Ref = refSoftmax(asDoubles<T>(X), 2, 3, 4);
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(Y.data<T>()[I], Ref[I], 1e-6) << I;
  // -2 is the same axis; axis 0 differs.
  EXPECT_EQ(values<T>(tensorOf(call("tensor.softmax", X, -2))), values<T>(Y));
  Tensor Y0 = tensorOf(call("tensor.softmax", X, 0));
  std::vector<double> Ref0 = refSoftmax(asDoubles<T>(X), 1, 2, 12);
  for (size_t I = 0; I < Ref0.size(); ++I)
    EXPECT_NEAR(Y0.data<T>()[I], Ref0[I], 1e-6) << I;
}

TYPED_TEST(SoftmaxTypedTest, DestinationPassingAndInPlace) {
  using T = TypeParam;
  Tensor X = iota<T>({2, 4}, 0.5);
  Tensor Expected = tensorOf(call("tensor.softmax", X, -1));
  Tensor Out = Tensor::empty({2, 4}, dtypeFor<T>());
  EXPECT_TRUE(call("kernel.softmax", X, -1, Out).isNone());
  EXPECT_EQ(values<T>(Out), values<T>(Expected));
  call("kernel.softmax", X, -1, X);
  EXPECT_EQ(values<T>(X), values<T>(Expected));
}

TEST(SoftmaxTest, Float32ExponentialIsAccurate) {
  // softmax([0, -t])[1] = e^-t / (1 + e^-t): checks the float32 exp over
  // its whole range to a few ulp.
  for (double T = 0; T <= 87; T += 0.173) {
    Tensor X = make<float>({2}, {0.0f, float(-T)});
    std::vector<float> Y =
        values<float>(tensorOf(call("tensor.softmax", X, 0)));
    const double E = std::exp(-double(float(T)));
    EXPECT_NEAR(Y[1], E / (1 + E), 5e-7 * E / (1 + E)) << T;
    EXPECT_NEAR(Y[0], 1 / (1 + E), 5e-7) << T;
  }
  // Long rows take the vectorized path; compare with double (x - max is
  // rounded to float first: relative error up to |x - max| * 2^-24).
  Tensor X = iota<float>({3, 77}, -0.9, 3);
  Tensor Y = tensorOf(call("tensor.softmax", X, -1));
  std::vector<double> Ref = refSoftmax(asDoubles<float>(X), 3, 77, 1);
  for (size_t I = 0; I < Ref.size(); ++I)
    EXPECT_NEAR(Y.data<float>()[I], Ref[I], 1e-5 * Ref[I] + 1e-30) << I;
}

TEST(SoftmaxTest, SpecialValues) {
  const float Inf = std::numeric_limits<float>::infinity();
  const float NaN = std::numeric_limits<float>::quiet_NaN();
  // -inf contributes exactly 0; far below the maximum flushes to 0.
  std::vector<float> Y = values<float>(
      tensorOf(call("tensor.softmax", make<float>({3}, {-Inf, 0, -200}), 0)));
  EXPECT_EQ(Y, (std::vector<float>{0, 1, 0}));
  // A NaN anywhere makes the row NaN.
  for (size_t Pos = 0; Pos < 3; ++Pos) {
    std::vector<float> V = {1, 2, 3};
    V[Pos] = NaN;
    for (float E : values<float>(
             tensorOf(call("tensor.softmax", make<float>({3}, V), 0))))
      EXPECT_TRUE(std::isnan(E)) << Pos;
  }
  // Double too.
  std::vector<double> D = values<double>(tensorOf(
      call("tensor.softmax", make<double>({2}, {-double(Inf), 5}), 0)));
  EXPECT_EQ(D, (std::vector<double>{0, 1}));
}

TEST(SoftmaxTest, AxisOutOfRange) {
  Tensor X = iota<float>({2, 3});
  Error E = errorOf([&] { call("tensor.softmax", X, 2); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.softmax: axis 2 is out of range for shape "
                         "[2, 3]");
  EXPECT_EQ(errorOf([&] { call("tensor.softmax", X, -3); }).message(),
            "tensor.softmax: axis -3 is out of range for shape [2, 3]");
}

TEST(SoftmaxTest, WrongTypes) {
  Tensor X = iota<float>({2, 3});
  EXPECT_EQ(errorOf([&] { call("tensor.softmax", X, 1.5); }).message(),
            "tensor.softmax: argument 2 expected int but got float");
  Tensor I = iota<int32_t>({3});
  EXPECT_EQ(errorOf([&] { call("tensor.softmax", I, 0); }).message(),
            "tensor.softmax: dtype int32 is not supported (expected float32 "
            "or float64)");
}

TEST(SoftmaxTest, OutWrongShapeAndDType) {
  Tensor X = iota<float>({2, 3});
  Tensor Bad = Tensor::empty({3, 2}, dtype::Float32);
  EXPECT_EQ(errorOf([&] { call("kernel.softmax", X, -1, Bad); }).message(),
            "kernel.softmax: out has shape [3, 2] and dtype float32, expected "
            "shape [2, 3] and dtype float32");
  Tensor BadType = Tensor::empty({2, 3}, dtype::Float64);
  EXPECT_EQ(
      errorOf([&] { call("kernel.softmax", X, -1, BadType); }).message(),
      "kernel.softmax: out has shape [2, 3] and dtype float64, expected shape "
      "[2, 3] and dtype float32");
}

} // namespace
