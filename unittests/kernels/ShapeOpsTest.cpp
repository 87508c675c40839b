//===- ShapeOpsTest.cpp - tensor.reshape and tensor.transpose -------------===//

#include "KernelTestUtil.h"

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

TEST(ShapeOpsTest, ReshapeSharesMemory) {
  Tensor X = iota<float>({2, 3});
  Tensor Y = tensorOf(call("tensor.reshape", X, Shape({3, 2})));
  EXPECT_EQ(shapeOf(Y), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Y.dtype(), dtype::Float32);
  EXPECT_EQ(Y.data(), X.data());
  X.data<float>()[5] = 42;
  EXPECT_EQ(Y.data<float>()[5], 42);
  // The view keeps the original memory alive.
  void *Data = X.data();
  X = Tensor();
  EXPECT_EQ(Y.data(), Data);
  EXPECT_EQ(values<float>(Y), (std::vector<float>{0, 1, 2, 3, 4, 42}));
}

TEST(ShapeOpsTest, ReshapeInfersMinusOne) {
  Tensor X = iota<int32_t>({2, 3, 4});
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", X, Shape({-1, 4})))),
            (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", X, Shape({2, -1})))),
            (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", X, Shape({-1})))),
            (std::vector<int64_t>{24}));
  // An int is a 1-D shape.
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", X, 24))),
            (std::vector<int64_t>{24}));
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", X, -1))),
            (std::vector<int64_t>{24}));
}

TEST(ShapeOpsTest, ReshapeToAndFromScalar) {
  Tensor X = make<double>({1, 1}, {7});
  Tensor S = tensorOf(call("tensor.reshape", X, Shape(std::vector<int64_t>{})));
  EXPECT_EQ(S.ndim(), 0);
  EXPECT_EQ(values<double>(S), (std::vector<double>{7}));
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", S, Shape({1, -1, 1})))),
            (std::vector<int64_t>{1, 1, 1}));
}

TEST(ShapeOpsTest, ReshapeErrors) {
  Tensor X = iota<float>({2, 3});
  Error E = errorOf([&] { call("tensor.reshape", X, Shape({4, 2})); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.reshape: cannot reshape a tensor of shape "
                         "[2, 3] (6 elements) into [4, 2]");
  EXPECT_EQ(errorOf([&] {
              call("tensor.reshape", X, Shape({-1, 4}));
            }).message(),
            "tensor.reshape: cannot reshape a tensor of shape [2, 3] (6 "
            "elements) into [-1, 4]");
  EXPECT_EQ(errorOf([&] {
              call("tensor.reshape", X, Shape({-1, -1}));
            }).message(),
            "tensor.reshape: target shape [-1, -1] has more than one -1 "
            "dimension");
  EXPECT_EQ(errorOf([&] {
              call("tensor.reshape", X, Shape({-2, -3}));
            }).message(),
            "tensor.reshape: target shape [-2, -3] has a negative dimension");
  Error T = errorOf([&] { call("tensor.reshape", X, 1.5); });
  EXPECT_EQ(T.kind(), "TypeError");
  EXPECT_EQ(T.message(),
            "tensor.reshape: argument 2 expected Shape or int but got float");
  EXPECT_EQ(errorOf([&] { call("tensor.reshape", 1, Shape({1})); }).message(),
            "tensor.reshape: argument 1 expected Tensor but got int");
}

TEST(ShapeOpsTest, ReshapeEmpty) {
  Tensor X = Tensor::empty({0, 3}, dtype::Float32);
  EXPECT_EQ(shapeOf(tensorOf(call("tensor.reshape", X, Shape({3, 0})))),
            (std::vector<int64_t>{3, 0}));
  // -1 cannot be inferred next to a 0.
  EXPECT_EQ(errorOf([&] {
              call("tensor.reshape", X, Shape({0, -1}));
            }).message(),
            "tensor.reshape: cannot reshape a tensor of shape [0, 3] (0 "
            "elements) into [0, -1]");
}

TEST(ShapeOpsTest, TransposeCopies) {
  Tensor X = iota<float>({2, 3});
  Tensor Y = tensorOf(call("tensor.transpose", X));
  EXPECT_EQ(shapeOf(Y), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values<float>(Y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_NE(Y.data(), X.data());
  X.data<float>()[0] = 9;
  EXPECT_EQ(Y.data<float>()[0], 0);
}

TEST(ShapeOpsTest, TransposeDTypesAndTiles) {
  // Larger than one 32x32 tile, several element sizes.
  Tensor I8 = iota<int8_t>({5, 7});
  Tensor I64 = iota<int64_t>({45, 70});
  Tensor F64 = iota<double>({33, 1});
  for (const Tensor &X : {I8, I64, F64}) {
    Tensor Y = tensorOf(call("tensor.transpose", X));
    const int64_t R = X.shape()[0], C = X.shape()[1];
    ASSERT_EQ(shapeOf(Y), (std::vector<int64_t>{C, R}));
    const size_t E = dtypeBytes(X.dtype());
    for (int64_t I = 0; I < R; ++I)
      for (int64_t J = 0; J < C; ++J)
        EXPECT_EQ(std::memcmp(static_cast<char *>(Y.data()) + (J * R + I) * E,
                              static_cast<char *>(X.data()) + (I * C + J) * E,
                              E),
                  0)
            << I << "," << J;
  }
}

TEST(ShapeOpsTest, TransposeErrors) {
  Tensor X = iota<float>({2, 3, 4});
  Error E = errorOf([&] { call("tensor.transpose", X); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.transpose: shape [2, 3, 4] is not 2-D");
  EXPECT_EQ(
      errorOf([&] { call("tensor.transpose", iota<float>({3})); }).message(),
      "tensor.transpose: shape [3] is not 2-D");
}

} // namespace
