// Tests vm.builtin.shape_of, reshape, tensor_to_shape, ensure_zero_offset
// and to_device with TVM's arguments: views share memory, reshape may not
// grow a tensor, tensor_to_shape reads int16/32/64 elements, a byte offset
// that is a multiple of 64 becomes a view and any other one a copy, and
// to_device always copies.
#include "BuiltinTestUtil.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::ElementsAre;

TEST(BuiltinTensorTest, ShapeOf) {
  Function Of = builtin("vm.builtin.shape_of");
  EXPECT_THAT(dimsOf(Of(Tensor::empty({2, 0, 3}, dtype::Int8))),
              ElementsAre(2, 0, 3));
  EXPECT_THAT(dimsOf(Of(Tensor::empty({}, dtype::Int8))), ElementsAre());
  Tensor T = Tensor::empty({5}, dtype::Float32);
  EXPECT_THAT(dimsOf(Of(T.dl())), ElementsAre(5));
  EXPECT_EQ(errorText([&] { Of(Shape{1}); }),
            "TypeError: vm.builtin.shape_of: argument 1 expected Tensor but "
            "got Shape");
}

TEST(BuiltinTensorTest, ReshapeIsAView) {
  Function Reshape = builtin("vm.builtin.reshape");
  Tensor X = tensorOf<float>({2, 3}, {1, 2, 3, 4, 5, 6}, dtype::Float32);
  Tensor Y = Reshape(X, Shape{3, 2}).cast<Tensor>();
  EXPECT_THAT(std::vector<int64_t>(Y.shape().begin(), Y.shape().end()),
              ElementsAre(3, 2));
  EXPECT_EQ(Y.data(), X.data());
  Y.data<float>()[5] = 60;
  EXPECT_EQ(X.data<float>()[5], 60);
  // A smaller view is allowed (TVM's CreateView), a larger one is not.
  EXPECT_EQ(Reshape(X, Shape{4}).cast<Tensor>().numel(), 4);
  EXPECT_EQ(errorText([&] { Reshape(X, Shape{7}); }),
            "ValueError: vm.builtin.reshape: a float32 view of shape [7] needs "
            "28 bytes, but the tensor of shape [2, 3] has 24");
  EXPECT_EQ(errorText([&] { Reshape(X, Shape{-1, 3}); }),
            "ValueError: vm.builtin.reshape: negative dimension in shape "
            "[-1, 3]");
  // A view keeps the original memory alive.
  Tensor Z = Reshape(X, Shape{6}).cast<Tensor>();
  X = Tensor();
  EXPECT_EQ(Z.data<float>()[5], 60);
  // Strided tensors cannot be viewed.
  Tensor Base = tensorOf<float>({4}, {1, 2, 3, 4}, dtype::Float32);
  EXPECT_EQ(errorText([&] { Reshape(importedView(Base, 0, {2}, {2}), Shape{2}); }),
            "ValueError: vm.builtin.reshape: cannot view a strided tensor of "
            "shape [2]");
  EXPECT_EQ(errorText([&] { Reshape(Shape{1}, Shape{1}); }),
            "TypeError: vm.builtin.reshape: argument 1 expected Tensor but got "
            "Shape");
}

TEST(BuiltinTensorTest, TensorToShape) {
  Function ToShape = builtin("vm.builtin.tensor_to_shape");
  EXPECT_THAT(dimsOf(ToShape(tensorOf<int64_t>({3}, {4, 5, -1}, dtype::Int64))),
              ElementsAre(4, 5, -1));
  EXPECT_THAT(dimsOf(ToShape(tensorOf<int32_t>({2}, {7, 8}, dtype::Int32))),
              ElementsAre(7, 8));
  EXPECT_THAT(dimsOf(ToShape(tensorOf<int16_t>({1}, {-3}, dtype::Int16))),
              ElementsAre(-3));
  EXPECT_THAT(dimsOf(ToShape(Tensor::empty({0}, dtype::Int64))),
              ElementsAre());
  // Strided: every other element.
  Tensor Base = tensorOf<int32_t>({4}, {1, 2, 3, 4}, dtype::Int32);
  EXPECT_THAT(dimsOf(ToShape(importedView(Base, 0, {2}, {2}))),
              ElementsAre(1, 3));
  EXPECT_EQ(errorText([&] { ToShape(Tensor::empty({1, 2}, dtype::Int64)); }),
            "ValueError: vm.builtin.tensor_to_shape: expected a rank-1 tensor "
            "but got shape [1, 2]");
  EXPECT_EQ(errorText([&] { ToShape(Tensor::empty({2}, dtype::Int8)); }),
            "TypeError: vm.builtin.tensor_to_shape: expected an int16, int32 "
            "or int64 tensor but got int8");
  EXPECT_EQ(errorText([&] { ToShape(Tensor::empty({2}, dtype::UInt32)); }),
            "TypeError: vm.builtin.tensor_to_shape: expected an int16, int32 "
            "or int64 tensor but got uint32");
  EXPECT_EQ(errorText([&] { ToShape(Tensor::empty({2}, dtype::Float32)); }),
            "TypeError: vm.builtin.tensor_to_shape: expected an int16, int32 "
            "or int64 tensor but got float32");
}

TEST(BuiltinTensorTest, EnsureZeroOffset) {
  Function Ensure = builtin("vm.builtin.ensure_zero_offset");
  std::vector<int32_t> Values(40);
  for (int I = 0; I < 40; ++I)
    Values[static_cast<size_t>(I)] = I;
  Tensor Base = tensorOf<int32_t>({40}, Values, dtype::Int32);
  // Offset 0: the same tensor.
  EXPECT_EQ(Ensure(Base).cast<Tensor>().get(), Base.get());
  // Offset 64 (a multiple of 64): a view of the same memory.
  Tensor At64 = importedView(Base, 64, {4});
  Tensor V = Ensure(At64).cast<Tensor>();
  EXPECT_EQ(V.dl()->byte_offset, 0u);
  EXPECT_EQ(V.data(), At64.data());
  EXPECT_THAT(valuesOf<int32_t>(V), ElementsAre(16, 17, 18, 19));
  // Offset 8: a copy.
  Tensor At8 = importedView(Base, 8, {2, 2});
  Tensor C = Ensure(At8).cast<Tensor>();
  EXPECT_EQ(C.dl()->byte_offset, 0u);
  EXPECT_NE(C.data(), At8.data());
  EXPECT_THAT(valuesOf<int32_t>(C), ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(std::vector<int64_t>(C.shape().begin(), C.shape().end()),
              ElementsAre(2, 2));
  // Strided with an aligned offset: a compact copy.
  Tensor Strided = importedView(Base, 64, {2, 2}, {1, 4});
  EXPECT_THAT(valuesOf<int32_t>(Ensure(Strided).cast<Tensor>()),
              ElementsAre(16, 20, 17, 21));
}

TEST(BuiltinTensorTest, ToDeviceCopiesOnTheCpu) {
  Function To = builtin("vm.builtin.to_device");
  Tensor X = tensorOf<float>({2}, {1.5, 2.5}, dtype::Float32);
  // (tensor, device type, device id [, scope])
  Tensor Y = To(X, 1, 0).cast<Tensor>();
  EXPECT_NE(Y.get(), X.get());
  EXPECT_NE(Y.data(), X.data());
  EXPECT_THAT(valuesOf<float>(Y), ElementsAre(1.5f, 2.5f));
  EXPECT_EQ(Y.device().device_type, kDLCPU);
  EXPECT_THAT(valuesOf<float>(To(X, 1, 0, "global").cast<Tensor>()),
              ElementsAre(1.5f, 2.5f));
  // A strided source gives a compact copy.
  Tensor Base = tensorOf<float>({4}, {1, 2, 3, 4}, dtype::Float32);
  EXPECT_THAT(valuesOf<float>(To(importedView(Base, 4, {2}, {2}), 1, 0)
                                  .cast<Tensor>()),
              ElementsAre(2.f, 4.f));
  EXPECT_EQ(errorText([&] { To(X, 2, 0); }),
            "ValueError: vm.builtin.to_device: cannot copy to device type 2: "
            "only the CPU (device type 1) is supported");
  EXPECT_EQ(errorText([&] { To(X, 1, -1); }),
            "ValueError: vm.builtin.to_device: device id -1 is out of range");
  EXPECT_EQ(errorText([&] { To(X, 1, 0, "texture"); }),
            "ValueError: vm.builtin.to_device: memory scope 'texture' is not "
            "supported: CPU tensors have only the \"global\" scope");
  EXPECT_EQ(errorText([&] { To(X, 1); }),
            "TypeError: vm.builtin.to_device: expected 3 to 4 arguments but "
            "got 2");
}
