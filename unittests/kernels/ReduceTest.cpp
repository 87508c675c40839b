//===- ReduceTest.cpp - tensor.sum ----------------------------------------===//

#include "KernelTestUtil.h"

#include <limits>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

template <typename T> class SumTypedTest : public ::testing::Test {};
using SumTypes =
    ::testing::Types<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t,
                     uint16_t, uint32_t, uint64_t>;
TYPED_TEST_SUITE(SumTypedTest, SumTypes);

TYPED_TEST(SumTypedTest, SumsEveryElement) {
  using T = TypeParam;
  // 0 + 1 + ... + 10 = 55 over 11 elements (a block of 8 and a tail).
  Tensor X = iota<T>({11});
  Tensor S = tensorOf(call("tensor.sum", X));
  EXPECT_EQ(S.ndim(), 0);
  EXPECT_EQ(S.dtype(), dtypeFor<T>());
  EXPECT_EQ(values<T>(S), (std::vector<T>{55}));
  // Multi-dimensional, and empty (0).
  EXPECT_EQ(values<T>(tensorOf(call("tensor.sum", iota<T>({2, 3, 2})))),
            (std::vector<T>{66}));
  EXPECT_EQ(values<T>(tensorOf(
                call("tensor.sum", Tensor::empty({0, 4}, dtypeFor<T>())))),
            (std::vector<T>{0}));
}

TEST(ReduceTest, Float32AccumulatesInDouble) {
  // 1e8 + 1 + ... in float would lose every 1.
  std::vector<float> V(17, 1.0f);
  V[0] = 1e8f;
  Tensor X = make<float>({17}, V);
  std::vector<float> S = values<float>(tensorOf(call("tensor.sum", X)));
  EXPECT_EQ(S[0], float(1e8 + 16));
}

TEST(ReduceTest, NegativeAndWrapping) {
  Tensor X = make<int32_t>({3}, {-5, 2, -1});
  EXPECT_EQ(values<int32_t>(tensorOf(call("tensor.sum", X))),
            (std::vector<int32_t>{-4}));
  // int8 accumulates in int64 and wraps once at the end: 100+100+100 = 300
  // = 44 (mod 256).
  Tensor Y = make<int8_t>({3}, {100, 100, 100});
  EXPECT_EQ(values<int8_t>(tensorOf(call("tensor.sum", Y))),
            (std::vector<int8_t>{44}));
  const int64_t Max = std::numeric_limits<int64_t>::max();
  Tensor Z = make<int64_t>({2}, {Max, 1});
  EXPECT_EQ(values<int64_t>(tensorOf(call("tensor.sum", Z))),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

TEST(ReduceTest, ScalarInput) {
  Tensor X = make<double>({}, {2.5});
  EXPECT_EQ(values<double>(tensorOf(call("tensor.sum", X))),
            (std::vector<double>{2.5}));
}

TEST(ReduceTest, Errors) {
  Tensor B = Tensor::empty({2}, dtype::Bool);
  Error E = errorOf([&] { call("tensor.sum", B); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "tensor.sum: dtype bool is not supported (expected "
                         "float32, float64 or an integer dtype)");
  EXPECT_EQ(errorOf([&] { call("tensor.sum", 3); }).message(),
            "tensor.sum: argument 1 expected Tensor but got int");
}

} // namespace
