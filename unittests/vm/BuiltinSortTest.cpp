// Tests tvm.contrib.sort.sort, argsort and topk, the functions TVM's CPU
// sort kernels look up by name: every axis (negative too), ascending and
// descending, stability (equal values keep their order), NaN last in
// ascending order, float16, topk's three ret_types and k < 1, the output
// types, and the shape, type, axis and device errors.
#include "BuiltinTestUtil.h"

#include "vmjit/runtime/data_type.h"

#include <cmath>
#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::HasSubstr;

namespace {

Tensor f32(std::vector<int64_t> Shape, std::vector<float> V) {
  return tensorOf<float>(std::move(Shape), std::move(V), dtype::Float32);
}

struct BuiltinSortTest : ::testing::Test {
  Function Sort = builtin("tvm.contrib.sort.sort");
  Function Argsort = builtin("tvm.contrib.sort.argsort");
  Function Topk = builtin("tvm.contrib.sort.topk");
};

} // namespace

TEST_F(BuiltinSortTest, SortAlongEveryAxis) {
  Tensor X = f32({2, 3}, {3, 1, 2, 0, 5, 4});
  Tensor Out = Tensor::empty({2, 3}, dtype::Float32);
  EXPECT_TRUE(Sort(X, Out, -1, true).isNone());
  EXPECT_EQ(valuesOf<float>(Out), (std::vector<float>{1, 2, 3, 0, 4, 5}));
  Sort(X, Out, 1, false);
  EXPECT_EQ(valuesOf<float>(Out), (std::vector<float>{3, 2, 1, 5, 4, 0}));
  Sort(X, Out, 0, true); // columns
  EXPECT_EQ(valuesOf<float>(Out), (std::vector<float>{0, 1, 2, 3, 5, 4}));
  // In place, int64.
  Tensor Y = tensorOf<int64_t>({4}, {4, -1, 7, 0}, dtype::Int64);
  Sort(Y, Y, 0, true);
  EXPECT_EQ(valuesOf<int64_t>(Y), (std::vector<int64_t>{-1, 0, 4, 7}));
}

TEST_F(BuiltinSortTest, ArgsortIsStableInEveryIndexType) {
  Tensor X = f32({5}, {2, 1, 2, 1, 0});
  Tensor I32 = Tensor::empty({5}, dtype::Int32);
  Argsort(X, I32, 0, true);
  EXPECT_EQ(valuesOf<int32_t>(I32), (std::vector<int32_t>{4, 1, 3, 0, 2}));
  Tensor I64 = Tensor::empty({5}, dtype::Int64);
  Argsort(X, I64, 0, false); // equal values still keep their order
  EXPECT_EQ(valuesOf<int64_t>(I64), (std::vector<int64_t>{0, 2, 1, 3, 4}));
  Tensor F64 = Tensor::empty({5}, dtype::Float64);
  Argsort(tensorOf<int32_t>({5}, {9, 8, 7, 6, 5}, dtype::Int32), F64, -1, true);
  EXPECT_EQ(valuesOf<double>(F64), (std::vector<double>{4, 3, 2, 1, 0}));
  // Rows of a [2, 3] input along axis 1.
  Tensor Rows = Tensor::empty({2, 3}, dtype::Int32);
  Argsort(f32({2, 3}, {3, 1, 2, 0, 5, 4}), Rows, 1, true);
  EXPECT_EQ(valuesOf<int32_t>(Rows), (std::vector<int32_t>{1, 2, 0, 0, 2, 1}));
}

TEST_F(BuiltinSortTest, NaNSortsLastAndFloat16Compares) {
  const float NaN = std::nanf("");
  Tensor X = f32({4}, {NaN, 1, -1, 0});
  Tensor I = Tensor::empty({4}, dtype::Int32);
  Argsort(X, I, 0, true);
  EXPECT_EQ(valuesOf<int32_t>(I), (std::vector<int32_t>{2, 3, 1, 0}));
  Argsort(X, I, 0, false);
  EXPECT_EQ(valuesOf<int32_t>(I), (std::vector<int32_t>{0, 1, 3, 2}));
  // float16 bits: 1.0 = 0x3c00, -2.0 = 0xc000, 0.5 = 0x3800, a subnormal
  // 0x0001, +inf 0x7c00.
  Tensor H = tensorOf<uint16_t>({5}, {0x3c00, 0xc000, 0x3800, 0x0001, 0x7c00},
                                dtype::Float16);
  Tensor HI = Tensor::empty({5}, dtype::Int64);
  Argsort(H, HI, 0, true);
  EXPECT_EQ(valuesOf<int64_t>(HI), (std::vector<int64_t>{1, 3, 2, 0, 4}));
  Tensor HS = Tensor::empty({5}, dtype::Float16);
  Sort(H, HS, 0, false);
  EXPECT_EQ(valuesOf<uint16_t>(HS),
            (std::vector<uint16_t>{0x7c00, 0x3c00, 0x3800, 0x0001, 0xc000}));
}

TEST_F(BuiltinSortTest, TopkReturnTypes) {
  Tensor X = f32({2, 4}, {1, 4, 2, 4, 0, -1, 3, 3});
  Tensor V = Tensor::empty({2, 2}, dtype::Float32);
  Tensor I = Tensor::empty({2, 2}, dtype::Int32);
  EXPECT_TRUE(Topk(X, V, I, 2, -1, "both", false).isNone());
  // The lower index first among equal values.
  EXPECT_EQ(valuesOf<float>(V), (std::vector<float>{4, 4, 3, 3}));
  EXPECT_EQ(valuesOf<int32_t>(I), (std::vector<int32_t>{1, 3, 2, 3}));
  Topk(X, V, 2, 1, "values", true); // the two smallest, ascending
  EXPECT_EQ(valuesOf<float>(V), (std::vector<float>{1, 2, -1, 0}));
  Tensor I64 = Tensor::empty({2, 2}, dtype::Int64);
  Topk(X, I64, 2, 1, "indices", true);
  EXPECT_EQ(valuesOf<int64_t>(I64), (std::vector<int64_t>{0, 2, 1, 0}));
  // Along axis 0 with k < 1: the whole axis, sorted.
  Tensor All = Tensor::empty({2, 4}, dtype::Float32);
  Topk(X, All, 0, 0, "values", false);
  EXPECT_EQ(valuesOf<float>(All),
            (std::vector<float>{1, 4, 3, 4, 0, -1, 2, 3}));
  // uint8 input with uint8 indices (TVM allows the input's type for them).
  Tensor U = tensorOf<uint8_t>({3}, {5, 9, 7}, dtype::UInt8);
  Tensor UI = Tensor::empty({1}, dtype::UInt8);
  Topk(U, UI, 1, 0, "indices", false);
  EXPECT_EQ(valuesOf<uint8_t>(UI), (std::vector<uint8_t>{1}));
  // k beyond the axis: only the axis' length is written.
  Tensor Big = Tensor::empty({5}, dtype::Int32);
  std::vector<int32_t> Marks{-7, -7, -7, -7, -7};
  std::memcpy(Big.data(), Marks.data(), sizeof(int32_t) * 5);
  Topk(U, Big, 5, 0, "indices", false);
  EXPECT_EQ(valuesOf<int32_t>(Big), (std::vector<int32_t>{1, 2, 0, -7, -7}));
}

TEST_F(BuiltinSortTest, Errors) {
  Tensor X = f32({2, 3}, {3, 1, 2, 0, 5, 4});
  Tensor Out = Tensor::empty({2, 3}, dtype::Float32);
  EXPECT_EQ(errorText([&] { Sort(X, Out, 2, true); }),
            "ValueError: tvm.contrib.sort.sort: axis 2 is out of range for a "
            "tensor of rank 2");
  EXPECT_EQ(errorText([&] { Argsort(X, Out, -3, true); }),
            "ValueError: tvm.contrib.sort.argsort: axis -3 is out of range for "
            "a tensor of rank 2");
  EXPECT_EQ(errorText([&] {
              Sort(X, Tensor::empty({3, 2}, dtype::Float32), 1, true);
            }),
            "ValueError: tvm.contrib.sort.sort: the output has shape [3, 2] "
            "but must have shape [2, 3]");
  EXPECT_EQ(errorText([&] {
              Sort(X, Tensor::empty({2, 3}, dtype::Float64), 1, true);
            }),
            "TypeError: tvm.contrib.sort.sort: the output is float64 but the "
            "input is float32");
  EXPECT_EQ(errorText([&] {
              Tensor B = Tensor::empty({2}, dtype::Int16);
              Sort(B, B, 0, true);
            }),
            "TypeError: tvm.contrib.sort.sort: an input of element type int16 "
            "is not supported (float16, float32, float64, int32, int64)");
  EXPECT_EQ(errorText([&] {
              Argsort(X, Tensor::empty({2, 3}, dtype::Int16), 1, true);
            }),
            "TypeError: tvm.contrib.sort.argsort: indices of element type "
            "int16 are not supported (int32, int64, float32, float64)");
  // A strided output (a DLPack import) is refused.
  Tensor Owner = Tensor::empty({6}, dtype::Float32);
  EXPECT_EQ(errorText([&] {
              Sort(X, importedView(Owner, 0, {2, 3}, {1, 2}), 1, true);
            }),
            "ValueError: tvm.contrib.sort.sort: the output must be compact (it "
            "is strided)");
  EXPECT_EQ(errorText([&] { Sort(X, Out, 1); }),
            "TypeError: tvm.contrib.sort.sort: expected 4 arguments but got 3");
  Tensor V = Tensor::empty({2, 2}, dtype::Float32);
  EXPECT_EQ(errorText([&] { Topk(X, V, 2, 1, "all", true); }),
            "ValueError: tvm.contrib.sort.topk: ret_type 'all' is not one of "
            "\"both\", \"values\", \"indices\"");
  EXPECT_EQ(errorText([&] { Topk(X, V, 2, 1, "both", true); }),
            "TypeError: tvm.contrib.sort.topk: ret_type \"both\" takes 7 "
            "arguments but got 6");
  EXPECT_EQ(errorText([&] { Topk(X, V, 3, 1, "values", true); }),
            "ValueError: tvm.contrib.sort.topk: the values output has shape "
            "[2, 2] but must have shape [2, 3]");
  EXPECT_EQ(
      errorText([&] {
        Topk(X, Tensor::empty({2, 2}, dtype::Int32), 2, 1, "values", true);
      }),
      "TypeError: tvm.contrib.sort.topk: the values output is int32 but "
      "the input is float32");
  EXPECT_EQ(errorText([&] { Topk(X, V, 2, 1, 3, true); }),
            "TypeError: tvm.contrib.sort.topk: argument 5 expected str but got "
            "int");
}

TEST_F(BuiltinSortTest, OnlyCpuTensors) {
  Tensor Host = f32({2}, {2, 1});
  DLTensor Device = *Host.dl();
  Device.device = DLDevice{kDLCUDA, 0};
  Tensor Out = Tensor::empty({2}, dtype::Float32);
  EXPECT_EQ(errorText([&] { Sort(&Device, Out, 0, true); }),
            "ValueError: tvm.contrib.sort.sort: the input is on device type "
            "2; only CPU tensors are supported");
}
