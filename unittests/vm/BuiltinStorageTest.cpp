// Tests vm.builtin.alloc_storage and alloc_tensor: TVM's 5-argument
// alloc_storage (with the memory scope) and the spec's 4-argument form,
// the "global" scope only, device indices, and tensors that must fit in the
// storage (which they keep alive).
#include "BuiltinTestUtil.h"

#include "vmjit/vm/allocator.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;

namespace {

struct BuiltinStorageTest : ::testing::Test {
  std::unique_ptr<VirtualMachine> VM = makeVM();
  Function AllocStorage = builtin("vm.builtin.alloc_storage");
  Function AllocTensor = builtin("vm.builtin.alloc_tensor");
  Storage storage(int64_t Bytes) {
    return AllocStorage(vmArg(*VM), Shape{Bytes}, 0, dtype::Float32, "global")
        .cast<Storage>();
  }
};

} // namespace

TEST_F(BuiltinStorageTest, FiveAndFourArguments) {
  // TVM: (%vm, shape [nbytes], device index, dtype hint, scope).
  Storage S =
      AllocStorage(vmArg(*VM), Shape{12}, 0, dtype::Float32, "global")
          .cast<Storage>();
  EXPECT_EQ(S->size(), 12u); // nbytes, not scaled by the dtype hint
  EXPECT_EQ(S->device().device_type, kDLCPU);
  // The spec's form without the scope, and the host (-1).
  EXPECT_EQ(AllocStorage(vmArg(*VM), Shape{8}, -1, dtype::Int8)
                .cast<Storage>()
                ->size(),
            8u);
  // An empty scope is "global"; None leaves it out.
  EXPECT_EQ(
      AllocStorage(vmArg(*VM), Shape{4}, 0, dtype::Int8, "").cast<Storage>()
          ->size(),
      4u);
  EXPECT_EQ(AllocStorage(vmArg(*VM), Shape{4}, 0, dtype::Int8, nullptr)
                .cast<Storage>()
                ->size(),
            4u);
  EXPECT_EQ(AllocStorage(vmArg(*VM), Shape{0}, 0, "uint8", "global")
                .cast<Storage>()
                ->size(),
            0u);
}

TEST_F(BuiltinStorageTest, AllocStorageErrors) {
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), Shape{8}, 0, dtype::Int8, "global.texture");
            }),
            "ValueError: vm.builtin.alloc_storage: memory scope "
            "'global.texture' is not supported: CPU storage has only the "
            "\"global\" scope");
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), Shape{8}, 1, dtype::Int8, "global");
            }),
            "ValueError: vm.builtin.alloc_storage: device index 1 is out of "
            "range: the VM has 1 device(s)");
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), Shape{8}, -2, dtype::Int8, "global");
            }),
            "ValueError: vm.builtin.alloc_storage: device index -2 is out of "
            "range: the VM has 1 device(s)");
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), Shape{2, 4}, 0, dtype::Int8, "global");
            }),
            "ValueError: vm.builtin.alloc_storage: the size must be a shape "
            "[nbytes], not [2, 4]");
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), Shape{-8}, 0, dtype::Int8, "global");
            }),
            "ValueError: vm.builtin.alloc_storage: the size must be a shape "
            "[nbytes], not [-8]");
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), 8, 0, dtype::Int8, "global");
            }),
            "TypeError: vm.builtin.alloc_storage: argument 2 expected Shape "
            "but got int");
  EXPECT_EQ(errorText([&] {
              AllocStorage(vmArg(*VM), Shape{8}, 0, dtype::Int8, 1);
            }),
            "TypeError: vm.builtin.alloc_storage: argument 5 expected str but "
            "got int");
  EXPECT_EQ(errorText([&] {
              AllocStorage(Shape{8}, 0, dtype::Int8, "global", 1);
            }),
            "TypeError: vm.builtin.alloc_storage: argument 1 expected the VM "
            "(%vm) but got Shape");
}

TEST_F(BuiltinStorageTest, AllocTensorLivesInTheStorage) {
  Storage S = storage(24);
  // (storage, byte offset, shape, dtype [, scope])
  Tensor A = AllocTensor(S, 0, Shape{3}, dtype::Int32).cast<Tensor>();
  Tensor B =
      AllocTensor(S, 12, Shape{3}, dtype::Int32, "global").cast<Tensor>();
  EXPECT_EQ(A.data(), S->data());
  EXPECT_EQ(B.data(), static_cast<char *>(S->data()) + 12);
  EXPECT_EQ(B.dl()->byte_offset, 0u);
  B.data<int32_t>()[0] = 42;
  Tensor All = AllocTensor(S, 0, Shape{2, 3}, dtype::Int32).cast<Tensor>();
  EXPECT_EQ(All.data<int32_t>()[3], 42);
  // The tensor keeps the storage alive.
  const StorageObj *Raw = S.get();
  uint32_t Before = Raw->useCount();
  { Tensor C = AllocTensor(S, 0, Shape(std::vector<int64_t>()), dtype::Float32).cast<Tensor>();
    EXPECT_EQ(Raw->useCount(), Before + 1); }
  EXPECT_EQ(Raw->useCount(), Before);
}

TEST_F(BuiltinStorageTest, AllocTensorErrors) {
  Storage S = storage(16);
  EXPECT_EQ(errorText([&] { AllocTensor(S, 0, Shape{5}, dtype::Float32); }),
            "ValueError: vm.builtin.alloc_tensor: a float32 tensor of shape "
            "[5] at offset 0 does not fit in a storage of 16 bytes");
  EXPECT_EQ(errorText([&] { AllocTensor(S, 12, Shape{2}, dtype::Float32); }),
            "ValueError: vm.builtin.alloc_tensor: a float32 tensor of shape "
            "[2] at offset 12 does not fit in a storage of 16 bytes");
  EXPECT_EQ(errorText([&] { AllocTensor(S, -4, Shape{2}, dtype::Float32); }),
            "ValueError: vm.builtin.alloc_tensor: the byte offset -4 is "
            "negative");
  EXPECT_EQ(errorText([&] { AllocTensor(S, 2, Shape{2}, dtype::Float32); }),
            "ValueError: vm.builtin.alloc_tensor: the byte offset 2 is not a "
            "multiple of 4 (the size of a float32 element)");
  EXPECT_EQ(errorText([&] { AllocTensor(S, 0, Shape{-1, 2}, dtype::Float32); }),
            "ValueError: vm.builtin.alloc_tensor: negative dimension in shape "
            "[-1, 2]");
  EXPECT_EQ(errorText([&] {
              AllocTensor(S, 0, Shape{2}, dtype::Float32, "shared");
            }),
            "ValueError: vm.builtin.alloc_tensor: memory scope 'shared' is not "
            "supported: CPU storage has only the \"global\" scope");
  // Element types TVM refuses too (never a division by a zero size).
  EXPECT_THAT(errorText([&] {
              AllocTensor(S, 0, Shape{2}, DLDataType{kDLOpaqueHandle, 0, 0});
            }),
            ::testing::HasSubstr("cannot allocate a tensor of element type"));
  EXPECT_THAT(errorText([&] {
              AllocTensor(S, 0, Shape{2}, DLDataType{kDLFloat, 32, 0});
            }),
            ::testing::HasSubstr("cannot allocate a tensor of element type"));
  EXPECT_EQ(errorText([&] {
              AllocTensor(S, 0, Shape{2}, DLDataType{kDLInt, 12, 1});
            }),
            "ValueError: vm.builtin.alloc_tensor: cannot allocate a tensor of "
            "element type int12");
  EXPECT_EQ(errorText([&] {
              AllocTensor(Tensor::empty({2}, dtype::Int8), 0, Shape{2},
                          dtype::Int8);
            }),
            "TypeError: vm.builtin.alloc_tensor: argument 1 expected Storage "
            "but got Tensor");
  EXPECT_EQ(errorText([&] { AllocTensor(S, 0, Shape{2}); }),
            "TypeError: vm.builtin.alloc_tensor: expected 4 to 5 arguments but "
            "got 3");
}
