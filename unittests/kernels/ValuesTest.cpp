//===- ValuesTest.cpp - tensor.full and tensor.item -----------------------===//

#include "KernelTestUtil.h"

#include <limits>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

TEST(ValuesTest, FullFloat32) {
  Tensor X = tensorOf(call("tensor.full", Shape({2, 3}), 1.5, dtype::Float32));
  EXPECT_EQ(shapeOf(X), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(X), (std::vector<float>(6, 1.5f)));
}

TEST(ValuesTest, FullDTypeByName) {
  Tensor X = tensorOf(call("tensor.full", Shape({3}), 7, String("int64")));
  EXPECT_EQ(values<int64_t>(X), (std::vector<int64_t>{7, 7, 7}));
  Tensor Y = tensorOf(call("tensor.full", 2, 2, String("float64")));
  EXPECT_EQ(values<double>(Y), (std::vector<double>{2.0, 2.0}));
}

TEST(ValuesTest, FullEveryDType) {
  auto Check = [](DLDataType D, auto Tag, auto Expected) {
    using T = decltype(Tag);
    Tensor X = tensorOf(call("tensor.full", Shape({2}), 3, D));
    EXPECT_EQ(X.dtype(), D);
    EXPECT_EQ(values<T>(X), (std::vector<T>{T(Expected), T(Expected)}))
        << dtypeName(D);
  };
  Check(dtype::Bool, bool{}, true);
  Check(dtype::Int8, int8_t{}, 3);
  Check(dtype::Int16, int16_t{}, 3);
  Check(dtype::Int32, int32_t{}, 3);
  Check(dtype::Int64, int64_t{}, 3);
  Check(dtype::UInt8, uint8_t{}, 3);
  Check(dtype::UInt16, uint16_t{}, 3);
  Check(dtype::UInt32, uint32_t{}, 3);
  Check(dtype::UInt64, uint64_t{}, 3);
  Check(dtype::Float32, float{}, 3);
  Check(dtype::Float64, double{}, 3);
}

TEST(ValuesTest, FullValueConversions) {
  // bool values and bool dtype.
  EXPECT_EQ(values<int32_t>(
                tensorOf(call("tensor.full", Shape({1}), true, dtype::Int32))),
            (std::vector<int32_t>{1}));
  EXPECT_EQ(
      values<bool>(tensorOf(call("tensor.full", Shape({2}), 0, dtype::Bool))),
      (std::vector<bool>{false, false}));
  EXPECT_EQ(
      values<bool>(tensorOf(call("tensor.full", Shape({1}), 0.5, dtype::Bool))),
      (std::vector<bool>{true}));
  // A float into an int dtype truncates toward zero.
  EXPECT_EQ(values<int32_t>(
                tensorOf(call("tensor.full", Shape({1}), -2.7, dtype::Int32))),
            (std::vector<int32_t>{-2}));
  // An int into a narrower dtype wraps.
  EXPECT_EQ(values<uint8_t>(
                tensorOf(call("tensor.full", Shape({1}), -1, dtype::UInt8))),
            (std::vector<uint8_t>{255}));
  EXPECT_EQ(values<int8_t>(
                tensorOf(call("tensor.full", Shape({1}), 300, dtype::Int8))),
            (std::vector<int8_t>{44}));
}

TEST(ValuesTest, FullScalarAndEmpty) {
  Tensor S = tensorOf(
      call("tensor.full", Shape(std::vector<int64_t>{}), 4.0, dtype::Float64));
  EXPECT_EQ(S.ndim(), 0);
  EXPECT_EQ(values<double>(S), (std::vector<double>{4.0}));
  Tensor E = tensorOf(call("tensor.full", Shape({0, 5}), 1, dtype::Float32));
  EXPECT_EQ(E.numel(), 0);
}

TEST(ValuesTest, FullErrors) {
  Error E =
      errorOf([] { call("tensor.full", Shape({2}), 1e20, dtype::Int32); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.full: value 1e+20 does not fit int32");
  EXPECT_EQ(errorOf([] {
              call("tensor.full", Shape({1}),
                   std::numeric_limits<double>::quiet_NaN(), dtype::Int64);
            }).message(),
            "tensor.full: value nan does not fit int64");
  EXPECT_EQ(errorOf([] {
              call("tensor.full", Shape({1}), -1.0, dtype::UInt32);
            }).message(),
            "tensor.full: value -1 does not fit uint32");
  EXPECT_EQ(errorOf([] {
              call("tensor.full", Shape({2, -1}), 1, dtype::Float32);
            }).message(),
            "tensor.full: shape [2, -1] has a negative dimension");
  EXPECT_EQ(errorOf([] {
              call("tensor.full", Shape({2}), 1, dtype::Float16);
            }).message(),
            "tensor.full: dtype float16 is not supported (expected bool, "
            "int8..int64, uint8..uint64, float32 or float64)");
  Error T = errorOf(
      [] { call("tensor.full", Shape({2}), String("one"), dtype::Int32); });
  EXPECT_EQ(T.kind(), "TypeError");
  EXPECT_EQ(T.message(),
            "tensor.full: argument 2 expected int, float or bool but got str");
  EXPECT_EQ(
      errorOf([] { call("tensor.full", 1.5, 1, dtype::Int32); }).message(),
      "tensor.full: argument 1 expected Shape or int but got float");
  EXPECT_EQ(errorOf([] {
              call("tensor.full", Shape({2}), 1, String("nope"));
            }).message(),
            "tensor.full: argument 3 expected DataType but got str");
}

TEST(ValuesTest, Item) {
  Any I = call("tensor.item", make<int32_t>({1}, {-7}));
  EXPECT_EQ(I.typeIndex(), kVMJITInt);
  EXPECT_EQ(I.cast<int64_t>(), -7);
  Any U = call("tensor.item", make<uint8_t>({1, 1}, {200}));
  EXPECT_EQ(U.typeIndex(), kVMJITInt);
  EXPECT_EQ(U.cast<int64_t>(), 200);
  Any F = call("tensor.item", make<float>({}, {2.5f}));
  EXPECT_EQ(F.typeIndex(), kVMJITFloat);
  EXPECT_EQ(F.cast<double>(), 2.5);
  Any D = call("tensor.item", make<double>({1}, {-0.125}));
  EXPECT_EQ(D.typeIndex(), kVMJITFloat);
  EXPECT_EQ(D.cast<double>(), -0.125);
  Any B = call("tensor.item", make<bool>({1}, {true}));
  EXPECT_EQ(B.typeIndex(), kVMJITBool);
  EXPECT_TRUE(B.cast<bool>());
  Any L = call("tensor.item", make<int64_t>({1}, {int64_t(1) << 40}));
  EXPECT_EQ(L.cast<int64_t>(), int64_t(1) << 40);
}

TEST(ValuesTest, ItemErrors) {
  Error E = errorOf([] { call("tensor.item", iota<float>({2})); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(),
            "tensor.item: tensor of shape [2] has 2 elements, expected "
            "exactly 1");
  EXPECT_EQ(errorOf([] {
              call("tensor.item", Tensor::empty({0}, dtype::Float32));
            }).message(),
            "tensor.item: tensor of shape [0] has 0 elements, expected "
            "exactly 1");
  EXPECT_EQ(errorOf([] {
              call("tensor.item", Tensor::empty({1}, dtype::Float16));
            }).message(),
            "tensor.item: dtype float16 is not supported (expected bool, an "
            "integer dtype, float32 or float64)");
}

TEST(ValuesTest, FullThenItemRoundTrip) {
  Tensor X = tensorOf(call("tensor.full", 1, -3, dtype::Int16));
  EXPECT_EQ(call("tensor.item", X).cast<int64_t>(), -3);
}

} // namespace
