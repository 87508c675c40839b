//===- CommonTest.cpp - Tensor argument checks and typed entries ----------===//

#include "common.h"

#include "KernelTestUtil.h"

using namespace vmjit;
using namespace vmjit::kernels::detail;
using namespace vmjit::kernels::test;

namespace {

TEST(CommonTest, CheckTensorAcceptsCompactCpu) {
  Tensor X = iota<float>({2, 3});
  EXPECT_NO_THROW(checkTensor("f", 1, X.dl()));
  Tensor S = make<float>({}, {1});
  EXPECT_NO_THROW(checkTensor("f", 1, S.dl()));
}

TEST(CommonTest, CheckTensorRejects) {
  Error Null = errorOf([] { checkTensor("f", 2, nullptr); });
  EXPECT_EQ(Null.kind(), "TypeError");
  EXPECT_EQ(Null.message(),
            "f: argument 2 expected Tensor but got a null tensor pointer");
  Tensor X = iota<float>({2, 3});
  DLTensor V = *X.dl();
  V.dtype.lanes = 4;
  EXPECT_EQ(errorOf([&] { checkTensor("f", 1, &V); }).message(),
            "f: argument 1 has dtype float32x4; vector dtypes are not "
            "supported");
  DLTensor S = *X.dl();
  int64_t Strides[2] = {1, 2};
  S.strides = Strides;
  EXPECT_EQ(errorOf([&] { checkTensor("f", 1, &S); }).message(),
            "f: argument 1 must be a compact (contiguous) tensor");
  // A size-1 dimension's stride does not matter.
  Tensor Col = iota<float>({3, 1});
  DLTensor C = *Col.dl();
  int64_t ColStrides[2] = {1, 77};
  C.strides = ColStrides;
  EXPECT_NO_THROW(checkTensor("f", 1, &C));
}

TEST(CommonTest, CheckOutMessage) {
  Tensor Out = Tensor::empty({2, 2}, dtype::Int32);
  const int64_t Shape[] = {2, 3};
  Error E = errorOf(
      [&] { checkOut("kernel.f", 3, Out.dl(), Shape, dtype::Float32); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "kernel.f: out has shape [2, 2] and dtype int32, "
                         "expected shape [2, 3] and dtype float32");
  const int64_t Same[] = {2, 2};
  EXPECT_NO_THROW(checkOut("kernel.f", 3, Out.dl(), Same, dtype::Int32));
}

TEST(CommonTest, Overlaps) {
  Tensor Buf = iota<float>({8});
  auto View = [&](int64_t Off, int64_t N) {
    return Tensor::view(Buf, Buf.data<float>() + Off, std::vector<int64_t>{N},
                        dtype::Float32);
  };
  EXPECT_TRUE(overlaps(View(0, 4).dl(), View(3, 4).dl()));
  EXPECT_FALSE(overlaps(View(0, 4).dl(), View(4, 4).dl()));
  EXPECT_TRUE(overlaps(View(2, 2).dl(), View(0, 8).dl()));
  EXPECT_FALSE(overlaps(View(2, 0).dl(), View(0, 8).dl()));
  // Exact aliasing is allowed when asked for, nothing else.
  EXPECT_NO_THROW(checkAlias("f", 1, View(0, 4).dl(), View(0, 4).dl(), true));
  EXPECT_THROW(checkAlias("f", 1, View(0, 4).dl(), View(0, 4).dl(), false),
               Error);
  EXPECT_THROW(checkAlias("f", 1, View(0, 2).dl(), View(0, 4).dl(), true),
               Error);
  EXPECT_NO_THROW(checkAlias("f", 1, View(0, 4).dl(), View(4, 4).dl(), false));
}

TEST(CommonTest, ShapeArg) {
  int64_t Scratch = 0;
  Shape S({2, 3});
  auto Dims = shapeArg("f", 1, AnyView(S), Scratch);
  EXPECT_EQ(std::vector<int64_t>(Dims.begin(), Dims.end()),
            (std::vector<int64_t>{2, 3}));
  auto One = shapeArg("f", 1, AnyView(int64_t(5)), Scratch);
  EXPECT_EQ(std::vector<int64_t>(One.begin(), One.end()),
            (std::vector<int64_t>{5}));
  Error E = errorOf([&] { shapeArg("f", 2, AnyView(true), Scratch); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "f: argument 2 expected Shape or int but got bool");
}

/// A typed entry under test.
constexpr char kTestName[] = "test.scale";
double scale(double X, int64_t N) { return X * double(N); }

TEST(CommonTest, TypedEntry) {
  Function F = Function::fromSafeCall(
      &vmjit::kernels::detail::typedEntry<kTestName, &scale>, kTestName);
  EXPECT_TRUE(F.get()->isFreeEntry());
  EXPECT_DOUBLE_EQ(F(1.5, 4).cast<double>(), 6.0);
  EXPECT_EQ(errorOf([&] { F(1.5); }).message(),
            "test.scale: expected 2 arguments but got 1");
  EXPECT_EQ(errorOf([&] { F(1.5, 2.5); }).message(),
            "test.scale: argument 2 expected int but got float");
}

} // namespace
