//===- ElementwiseTest.cpp - add sub mul div relu gelu exp ----------------===//

#include "KernelTestUtil.h"

#include <cmath>
#include <limits>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

//===----------------------------------------------------------------------===//
// Binary operations, every dtype.
//===----------------------------------------------------------------------===//

template <typename T> class BinaryTest : public ::testing::Test {};
using NumericTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(BinaryTest, NumericTypes);

TYPED_TEST(BinaryTest, SameShape) {
  using T = TypeParam;
  Tensor A = make<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = make<T>({2, 3}, {6, 5, 4, 3, 2, 1});
  Tensor Add = tensorOf(call("tensor.add", A, B));
  EXPECT_EQ(shapeOf(Add), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<T>(Add), (std::vector<T>{7, 7, 7, 7, 7, 7}));
  EXPECT_EQ(values<T>(tensorOf(call("tensor.sub", A, B))),
            (std::vector<T>{-5, -3, -1, 1, 3, 5}));
  EXPECT_EQ(values<T>(tensorOf(call("tensor.mul", A, B))),
            (std::vector<T>{6, 10, 12, 12, 10, 6}));
  Tensor Div = tensorOf(call("tensor.div", B, A));
  std::vector<T> Expected;
  for (int I = 0; I < 6; ++I)
    Expected.push_back(T(T(6 - I) / T(1 + I)));
  EXPECT_EQ(values<T>(Div), Expected);
  // The inputs are untouched.
  EXPECT_EQ(values<T>(A), (std::vector<T>{1, 2, 3, 4, 5, 6}));
}

TYPED_TEST(BinaryTest, DestinationPassing) {
  using T = TypeParam;
  Tensor A = make<T>({4}, {10, 20, 30, 40});
  Tensor B = make<T>({4}, {1, 2, 3, 4});
  Tensor Out = Tensor::empty({4}, dtypeFor<T>());
  EXPECT_TRUE(call("kernel.add", A, B, Out).isNone());
  EXPECT_EQ(values<T>(Out), (std::vector<T>{11, 22, 33, 44}));
  EXPECT_TRUE(call("kernel.sub", A, B, Out).isNone());
  EXPECT_EQ(values<T>(Out), (std::vector<T>{9, 18, 27, 36}));
  EXPECT_TRUE(call("kernel.mul", A, B, Out).isNone());
  EXPECT_EQ(values<T>(Out), (std::vector<T>{10, 40, 90, 160}));
  EXPECT_TRUE(call("kernel.div", A, B, Out).isNone());
  EXPECT_EQ(values<T>(Out), (std::vector<T>{10, 10, 10, 10}));
}

TYPED_TEST(BinaryTest, BroadcastRowVector) {
  using T = TypeParam;
  Tensor A = make<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = make<T>({3}, {10, 20, 30});
  Tensor R = tensorOf(call("tensor.add", A, B));
  EXPECT_EQ(shapeOf(R), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<T>(R), (std::vector<T>{11, 22, 33, 14, 25, 36}));
  // And the other way round.
  Tensor S = tensorOf(call("tensor.sub", B, A));
  EXPECT_EQ(values<T>(S), (std::vector<T>{9, 18, 27, 6, 15, 24}));
}

TYPED_TEST(BinaryTest, BroadcastColumnAndRow) {
  using T = TypeParam;
  Tensor A = make<T>({2, 1}, {1, 2});
  Tensor B = make<T>({1, 3}, {10, 20, 30});
  Tensor R = tensorOf(call("tensor.mul", A, B));
  EXPECT_EQ(shapeOf(R), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<T>(R), (std::vector<T>{10, 20, 30, 20, 40, 60}));
}

TYPED_TEST(BinaryTest, BroadcastScalar) {
  using T = TypeParam;
  Tensor S = make<T>({}, {2});
  Tensor V = make<T>({4}, {2, 4, 6, 8});
  Tensor R = tensorOf(call("tensor.mul", S, V));
  EXPECT_EQ(shapeOf(R), (std::vector<int64_t>{4}));
  EXPECT_EQ(values<T>(R), (std::vector<T>{4, 8, 12, 16}));
  EXPECT_EQ(values<T>(tensorOf(call("tensor.div", V, S))),
            (std::vector<T>{1, 2, 3, 4}));
  // Rank 0 with rank 0 is rank 0.
  Tensor R0 = tensorOf(call("tensor.add", S, S));
  EXPECT_EQ(R0.ndim(), 0);
  EXPECT_EQ(values<T>(R0), (std::vector<T>{4}));
}

TYPED_TEST(BinaryTest, BroadcastAgainstNaive) {
  using T = TypeParam;
  // [2, 1, 4] - [3, 1]: result [2, 3, 4].
  Tensor A = iota<T>({2, 1, 4});
  Tensor B = iota<T>({3, 1}, 10);
  Tensor R = tensorOf(call("tensor.sub", A, B));
  ASSERT_EQ(shapeOf(R), (std::vector<int64_t>{2, 3, 4}));
  std::vector<T> Expected;
  for (int I = 0; I < 2; ++I)
    for (int J = 0; J < 3; ++J)
      for (int K = 0; K < 4; ++K)
        Expected.push_back(T(A.data<T>()[I * 4 + K] - B.data<T>()[J]));
  EXPECT_EQ(values<T>(R), Expected);
}

TYPED_TEST(BinaryTest, AliasingOutIsAnInput) {
  using T = TypeParam;
  Tensor A = make<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = make<T>({2, 3}, {1, 1, 1, 1, 1, 1});
  call("kernel.add", A, B, A);
  EXPECT_EQ(values<T>(A), (std::vector<T>{2, 3, 4, 5, 6, 7}));
  call("kernel.mul", A, A, A);
  EXPECT_EQ(values<T>(A), (std::vector<T>{4, 9, 16, 25, 36, 49}));
  // With broadcasting: a += row.
  Tensor Row = make<T>({3}, {1, 2, 3});
  call("kernel.sub", A, Row, A);
  EXPECT_EQ(values<T>(A), (std::vector<T>{3, 7, 13, 24, 34, 46}));
  // out aliasing the second operand.
  call("kernel.sub", B, A, A);
  EXPECT_EQ(values<T>(A), (std::vector<T>{-2, -6, -12, -23, -33, -45}));
}

TYPED_TEST(BinaryTest, LongRowsVectorizedAndTail) {
  using T = TypeParam;
  // 37 elements: a vector body and a scalar tail.
  Tensor A = iota<T>({37});
  Tensor B = iota<T>({37}, 2, 1);
  Tensor R = tensorOf(call("tensor.add", A, B));
  for (int I = 0; I < 37; ++I)
    EXPECT_EQ(R.data<T>()[I], T(3 * I + 1)) << I;
}

//===----------------------------------------------------------------------===//
// Errors and edge cases.
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, IncompatibleShapes) {
  Tensor A = iota<float>({2, 3});
  Tensor B = iota<float>({4});
  Error E = errorOf([&] { call("tensor.add", A, B); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(),
            "tensor.add: shapes [2, 3] and [4] cannot be broadcast");
  Tensor Out = Tensor::empty({2, 3}, dtype::Float32);
  EXPECT_EQ(errorOf([&] { call("kernel.mul", A, B, Out); }).message(),
            "kernel.mul: shapes [2, 3] and [4] cannot be broadcast");
}

TEST(ElementwiseTest, DTypeMismatch) {
  Tensor A = iota<float>({3});
  Tensor B = iota<int32_t>({3});
  Error E = errorOf([&] { call("tensor.add", A, B); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(),
            "tensor.add: dtypes float32 and int32 do not match (shapes [3] "
            "and [3])");
}

TEST(ElementwiseTest, UnsupportedDType) {
  Tensor A = Tensor::empty({3}, dtype::UInt8);
  Error E = errorOf([&] { call("tensor.add", A, A); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.add: dtype uint8 is not supported (expected "
                         "float32, float64, int32 or int64)");
}

TEST(ElementwiseTest, WrongArgumentTypes) {
  Tensor A = iota<float>({3});
  Error E = errorOf([&] { call("tensor.add", A, 1); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "tensor.add: argument 2 expected Tensor but got int");
  EXPECT_EQ(errorOf([&] { call("tensor.add", A); }).message(),
            "tensor.add: expected 2 arguments but got 1");
  EXPECT_EQ(errorOf([&] { call("kernel.relu", A); }).message(),
            "kernel.relu: expected 2 arguments but got 1");
}

TEST(ElementwiseTest, IntegerDivision) {
  Tensor A = make<int32_t>({4}, {7, -7, 7, -7});
  Tensor B = make<int32_t>({4}, {2, 2, -2, -2});
  EXPECT_EQ(values<int32_t>(tensorOf(call("tensor.div", A, B))),
            (std::vector<int32_t>{3, -3, -3, 3}));
  // INT_MIN / -1 wraps.
  Tensor M = make<int64_t>({1}, {std::numeric_limits<int64_t>::min()});
  Tensor N1 = make<int64_t>({1}, {-1});
  EXPECT_EQ(values<int64_t>(tensorOf(call("tensor.div", M, N1))),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

TEST(ElementwiseTest, IntegerDivisionByZero) {
  Tensor A = make<int32_t>({3}, {1, 2, 3});
  Tensor B = make<int32_t>({3}, {1, 0, 1});
  Error E = errorOf([&] { call("tensor.div", A, B); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.div: integer division by zero");
  // Nothing is written before the error.
  Tensor Out = make<int32_t>({3}, {9, 9, 9});
  EXPECT_EQ(errorOf([&] { call("kernel.div", A, B, Out); }).message(),
            "kernel.div: integer division by zero");
  EXPECT_EQ(values<int32_t>(Out), (std::vector<int32_t>{9, 9, 9}));
  // A broadcast zero too.
  Tensor Z = make<int64_t>({}, {0});
  Tensor C = make<int64_t>({2}, {1, 2});
  EXPECT_EQ(errorOf([&] { call("tensor.div", C, Z); }).message(),
            "tensor.div: integer division by zero");
}

TEST(ElementwiseTest, FloatDivisionByZeroIsIEEE) {
  Tensor A = make<float>({3}, {1, -1, 0});
  Tensor Z = make<float>({}, {0});
  std::vector<float> R = values<float>(tensorOf(call("tensor.div", A, Z)));
  EXPECT_EQ(R[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(R[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(R[2]));
}

TEST(ElementwiseTest, IntegerArithmeticWraps) {
  const int32_t Max = std::numeric_limits<int32_t>::max();
  const int32_t Min = std::numeric_limits<int32_t>::min();
  Tensor A = make<int32_t>({2}, {Max, Min});
  Tensor B = make<int32_t>({2}, {1, 1});
  EXPECT_EQ(values<int32_t>(tensorOf(call("tensor.add", A, B))),
            (std::vector<int32_t>{Min, Min + 1}));
  EXPECT_EQ(values<int32_t>(tensorOf(call("tensor.sub", A, B))),
            (std::vector<int32_t>{Max - 1, Max}));
  Tensor Two = make<int32_t>({}, {2});
  EXPECT_EQ(values<int32_t>(tensorOf(call("tensor.mul", A, Two))),
            (std::vector<int32_t>{-2, 0}));
}

TEST(ElementwiseTest, EmptyTensors) {
  Tensor A = Tensor::empty({0, 3}, dtype::Float32);
  Tensor B = iota<float>({3});
  Tensor R = tensorOf(call("tensor.add", A, B));
  EXPECT_EQ(shapeOf(R), (std::vector<int64_t>{0, 3}));
  // No zero-division error when nothing is computed.
  Tensor AI = Tensor::empty({0}, dtype::Int32);
  Tensor BI = make<int32_t>({1}, {0});
  EXPECT_EQ(tensorOf(call("tensor.div", AI, BI)).numel(), 0);
}

TEST(ElementwiseTest, HigherRankBroadcast) {
  // [2, 3, 4, 5] + [4, 1]: many rows.
  Tensor A = iota<double>({2, 3, 4, 5});
  Tensor B = iota<double>({4, 1}, 100);
  Tensor R = tensorOf(call("tensor.add", A, B));
  ASSERT_EQ(shapeOf(R), (std::vector<int64_t>{2, 3, 4, 5}));
  for (int64_t I = 0; I < R.numel(); ++I) {
    int64_t Row = (I / 5) % 4;
    EXPECT_EQ(R.data<double>()[I], double(I) + 100.0 * double(Row)) << I;
  }
}

//===----------------------------------------------------------------------===//
// Destination-passing checks.
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, OutWrongShape) {
  Tensor A = iota<float>({2, 3});
  Tensor B = iota<float>({3});
  Tensor Out = Tensor::empty({2, 2}, dtype::Float32);
  for (const char *Name :
       {"kernel.add", "kernel.sub", "kernel.mul", "kernel.div"}) {
    Error E = errorOf([&] { call(Name, A, B, Out); });
    EXPECT_EQ(E.kind(), "ValueError");
    EXPECT_EQ(E.message(), std::string(Name) +
                               ": out has shape [2, 2] and dtype float32, "
                               "expected shape [2, 3] and dtype float32");
  }
}

TEST(ElementwiseTest, OutWrongDType) {
  Tensor A = iota<float>({2, 3});
  Tensor Out = Tensor::empty({2, 3}, dtype::Float64);
  for (const char *Name :
       {"kernel.add", "kernel.sub", "kernel.mul", "kernel.div"})
    EXPECT_EQ(errorOf([&] { call(Name, A, A, Out); }).message(),
              std::string(Name) + ": out has shape [2, 3] and dtype float64, "
                                  "expected shape [2, 3] and dtype float32");
  for (const char *Name : {"kernel.relu", "kernel.gelu", "kernel.exp"})
    EXPECT_EQ(errorOf([&] { call(Name, A, Out); }).message(),
              std::string(Name) + ": out has shape [2, 3] and dtype float64, "
                                  "expected shape [2, 3] and dtype float32");
}

TEST(ElementwiseTest, UnaryOutWrongShape) {
  Tensor X = iota<float>({4});
  Tensor Out = Tensor::empty({5}, dtype::Float32);
  for (const char *Name : {"kernel.relu", "kernel.gelu", "kernel.exp"}) {
    Error E = errorOf([&] { call(Name, X, Out); });
    EXPECT_EQ(E.kind(), "ValueError");
    EXPECT_EQ(E.message(), std::string(Name) +
                               ": out has shape [5] and dtype float32, "
                               "expected shape [4] and dtype float32");
  }
}

TEST(ElementwiseTest, PartialOverlapIsRejected) {
  Tensor Buf = iota<float>({8});
  Tensor A = tensorOf(call("tensor.reshape", Buf, Shape({2, 4})));
  // A view of the last 4 elements as out, A's first row as the other input.
  Tensor Out = Tensor::view(Buf, Buf.data<float>() + 2, std::vector<int64_t>{4},
                            dtype::Float32);
  Tensor Row = Tensor::view(Buf, Buf.data<float>(), std::vector<int64_t>{4},
                            dtype::Float32);
  Error E = errorOf([&] { call("kernel.add", Row, Row, Out); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "kernel.add: out overlaps argument 1 (only an input "
                         "that is exactly out may alias it)");
  // A broadcast input at out's address is not "exactly out" either.
  Tensor First = Tensor::view(Buf, Buf.data<float>(),
                              std::vector<int64_t>{1, 4}, dtype::Float32);
  EXPECT_EQ(errorOf([&] { call("kernel.add", A, First, A); }).message(),
            "kernel.add: out overlaps argument 2 (only an input that is "
            "exactly out may alias it)");
}

TEST(ElementwiseTest, NonCompactInputRejected) {
  Tensor X = iota<float>({2, 2});
  DLTensor Strided = *X.dl();
  int64_t Strides[2] = {1, 2}; // column-major
  Strided.strides = Strides;
  Error E = errorOf([&] { call("tensor.relu", &Strided); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(),
            "tensor.relu: argument 1 must be a compact (contiguous) tensor");
  // Compact strides spelled out are fine.
  int64_t Compact[2] = {2, 1};
  Strided.strides = Compact;
  EXPECT_EQ(values<float>(tensorOf(call("tensor.relu", &Strided))),
            (std::vector<float>{0, 1, 2, 3}));
}

TEST(ElementwiseTest, NonCpuRejected) {
  Tensor X = iota<float>({2});
  DLTensor Gpu = *X.dl();
  Gpu.device = DLDevice{kDLCUDA, 0};
  EXPECT_EQ(errorOf([&] { call("tensor.exp", &Gpu); }).message(),
            "tensor.exp: argument 1 must be a CPU tensor (device type 2)");
}

TEST(ElementwiseTest, AcceptsDLTensorPointers) {
  Tensor A = iota<float>({3});
  DLTensor *P = A.dl();
  EXPECT_EQ(values<float>(tensorOf(call("tensor.add", P, A))),
            (std::vector<float>{0, 2, 4}));
}

//===----------------------------------------------------------------------===//
// Unary operations.
//===----------------------------------------------------------------------===//

template <typename T> class ReluTest : public ::testing::Test {};
TYPED_TEST_SUITE(ReluTest, NumericTypes);

TYPED_TEST(ReluTest, ClampsNegatives) {
  using T = TypeParam;
  Tensor X = make<T>({2, 3}, {-3, -1, 0, 1, 2, -5});
  Tensor R = tensorOf(call("tensor.relu", X));
  EXPECT_EQ(shapeOf(R), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<T>(R), (std::vector<T>{0, 0, 0, 1, 2, 0}));
  Tensor Out = Tensor::empty({2, 3}, dtypeFor<T>());
  EXPECT_TRUE(call("kernel.relu", X, Out).isNone());
  EXPECT_EQ(values<T>(Out), (std::vector<T>{0, 0, 0, 1, 2, 0}));
  call("kernel.relu", X, X); // in place
  EXPECT_EQ(values<T>(X), (std::vector<T>{0, 0, 0, 1, 2, 0}));
}

TEST(ElementwiseTest, ReluKeepsNaN) {
  Tensor X = make<float>({1}, {std::numeric_limits<float>::quiet_NaN()});
  EXPECT_TRUE(std::isnan(values<float>(tensorOf(call("tensor.relu", X)))[0]));
}

template <typename T> class FloatUnaryTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FloatUnaryTest, FloatTypes);

TYPED_TEST(FloatUnaryTest, Exp) {
  using T = TypeParam;
  Tensor X = make<T>({5}, {-2, -0.5, 0, 1, 3});
  std::vector<T> R = values<T>(tensorOf(call("tensor.exp", X)));
  Tensor Out = Tensor::empty({5}, dtypeFor<T>());
  call("kernel.exp", X, Out);
  for (int I = 0; I < 5; ++I) {
    double Ref = std::exp(double(X.data<T>()[I]));
    EXPECT_NEAR(R[I], Ref, 1e-6 * Ref) << I;
    EXPECT_EQ(Out.data<T>()[I], R[I]) << I;
  }
}

TYPED_TEST(FloatUnaryTest, GeluExact) {
  using T = TypeParam;
  Tensor X = make<T>({6}, {-3, -1, -0.25, 0, 0.5, 2});
  std::vector<T> R = values<T>(tensorOf(call("tensor.gelu", X)));
  // Reference values of 0.5 x (1 + erf(x / sqrt 2)).
  const double Ref[6] = {-0.0040496941, -0.1586552539, -0.1003234186,
                         0.0,           0.3457312306,  1.9544997361};
  for (int I = 0; I < 6; ++I)
    EXPECT_NEAR(R[I], Ref[I], 1e-6) << I;
  call("kernel.gelu", X, X);
  for (int I = 0; I < 6; ++I)
    EXPECT_EQ(X.data<T>()[I], R[I]) << I;
}

TEST(ElementwiseTest, GeluAndExpRejectIntegers) {
  Tensor X = make<int32_t>({2}, {1, 2});
  for (const char *Name : {"tensor.gelu", "tensor.exp"}) {
    Error E = errorOf([&] { call(Name, X); });
    EXPECT_EQ(E.kind(), "ValueError");
    EXPECT_EQ(E.message(), std::string(Name) + ": dtype int32 is not "
                                               "supported (expected float32 "
                                               "or float64)");
  }
}

TEST(ElementwiseTest, ExpOfLongRow) {
  Tensor X = iota<float>({100}, 0.1, -5);
  std::vector<float> R = values<float>(tensorOf(call("tensor.exp", X)));
  for (int I = 0; I < 100; ++I) {
    double Ref = std::exp(double(X.data<float>()[I]));
    EXPECT_NEAR(R[I], Ref, 1e-6 * Ref) << I;
  }
}

} // namespace
