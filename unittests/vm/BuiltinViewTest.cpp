// Tests runtime.TVMTensorCreateView (what R.memory.view lowers to): views
// of another shape and element type over the same memory, the relative
// byte offset kept in byte_offset as TVM keeps it (and what
// vm.builtin.ensure_zero_offset then does with it), and its errors.
#include "BuiltinTestUtil.h"

#include "vmjit/runtime/data_type.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;

TEST(BuiltinViewTest, ViewsShareMemory) {
  Function View = builtin("runtime.TVMTensorCreateView");
  Tensor X = tensorOf<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5}, dtype::Int32);
  Tensor V = View(X, Shape{3, 2}, dtype::Int32, 0).cast<Tensor>();
  EXPECT_EQ(V.data(), X.data());
  EXPECT_EQ(valuesOf<int32_t>(V), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  // Another element type, at an offset: bytes 8..15 as two int16 pairs.
  Tensor H = View(X, Shape{4}, dtype::Int16, 8).cast<Tensor>();
  EXPECT_EQ(H.dl()->data, X.dl()->data);
  EXPECT_EQ(H.dl()->byte_offset, 8u);
  EXPECT_EQ(valuesOf<int16_t>(H), (std::vector<int16_t>{2, 0, 3, 0}));
  // Writes through the view reach the tensor.
  H.data<int16_t>()[2] = 42;
  EXPECT_EQ(valuesOf<int32_t>(X)[3], 42);
  // Offsets add up over views of views.
  Tensor HH = View(H, Shape{1}, dtype::Int32, 4).cast<Tensor>();
  EXPECT_EQ(HH.dl()->byte_offset, 12u);
  EXPECT_EQ(valuesOf<int32_t>(HH), (std::vector<int32_t>{42}));
  // ensure_zero_offset copies a view whose offset is not a multiple of 64.
  Tensor Z = builtin("vm.builtin.ensure_zero_offset")(HH).cast<Tensor>();
  EXPECT_EQ(Z.dl()->byte_offset, 0u);
  EXPECT_EQ(valuesOf<int32_t>(Z), (std::vector<int32_t>{42}));
  // The view keeps the tensor alive.
  const Object *Raw = X.get();
  uint32_t Before = Raw->useCount();
  {
    Tensor W = View(X, Shape{6}, dtype::Int32, 0).cast<Tensor>();
    EXPECT_EQ(Raw->useCount(), Before + 1);
  }
  EXPECT_EQ(Raw->useCount(), Before);
  // The whole tensor, an empty view at its end, packed int4 elements.
  EXPECT_EQ(View(X, Shape{0}, dtype::Int8, 24).cast<Tensor>().numel(), 0);
  EXPECT_EQ(
      View(X, Shape{48}, DLDataType{kDLInt, 4, 1}, 0).cast<Tensor>().numel(),
      48);
}

TEST(BuiltinViewTest, Errors) {
  Function View = builtin("runtime.TVMTensorCreateView");
  Tensor X = Tensor::empty({2, 3}, dtype::Int32);
  EXPECT_EQ(errorText([&] { View(X, Shape{7}, dtype::Int32, 0); }),
            "ValueError: runtime.TVMTensorCreateView: a view of shape [7] as "
            "int32 at byte offset 0 needs 28 bytes, but the tensor of shape "
            "[2, 3] (int32) has 24");
  EXPECT_EQ(errorText([&] { View(X, Shape{2}, dtype::Int64, 12); }),
            "ValueError: runtime.TVMTensorCreateView: a view of shape [2] as "
            "int64 at byte offset 12 needs 16 bytes, but the tensor of shape "
            "[2, 3] (int32) has 24");
  EXPECT_EQ(errorText([&] {
              View(X, Shape{-1, -2}, dtype::Int32, 0);
            }),
            "ValueError: runtime.TVMTensorCreateView: negative dimension in "
            "the view shape [-1, -2]");
  EXPECT_EQ(errorText([&] { View(X, Shape{1}, dtype::Int32, -4); }),
            "ValueError: runtime.TVMTensorCreateView: the relative byte "
            "offset -4 is negative");
  EXPECT_EQ(errorText([&] {
              View(X, Shape{1}, DLDataType{kDLOpaqueHandle, 0, 0}, 0);
            }),
            "ValueError: runtime.TVMTensorCreateView: cannot view memory as "
            "elements of type void");
  Tensor Owner = Tensor::empty({6}, dtype::Int32);
  EXPECT_EQ(
      errorText([&] {
        View(importedView(Owner, 0, {3, 2}, {1, 3}), Shape{6}, dtype::Int32, 0);
      }),
      "ValueError: runtime.TVMTensorCreateView: can only view a compact "
      "tensor, but the tensor of shape [3, 2] is strided");
  EXPECT_EQ(errorText([&] { View(X, Shape{6}, dtype::Int32); }),
            "TypeError: runtime.TVMTensorCreateView: expected 4 arguments but "
            "got 3");
  EXPECT_EQ(errorText([&] { View(Shape{6}, Shape{6}, dtype::Int32, 0); }),
            "TypeError: runtime.TVMTensorCreateView: argument 1 expected "
            "Tensor but got Shape");
}
