// Tests vm.builtin.copy, null_value, read_if_cond, make_tuple,
// tuple_getitem and tuple_reset_item with TVM's conventions: read_if_cond
// reads element 0 of an int/uint/bool tensor of any rank and rejects
// floats; tuple_getitem does not wrap negative indices; tuple_reset_item
// changes the tuple in place.
#include "BuiltinTestUtil.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;

TEST(BuiltinValuesTest, CopyReturnsTheSameValue) {
  Function Copy = builtin("vm.builtin.copy");
  EXPECT_EQ(Copy(42).cast<int64_t>(), 42);
  EXPECT_TRUE(Copy(nullptr).isNone());
  Tensor T = Tensor::empty({2}, dtype::Float32);
  // The same tensor object, not a duplicate (as in TVM).
  EXPECT_EQ(Copy(T).cast<Tensor>().get(), T.get());
  EXPECT_EQ(errorText([&] { Copy(1, 2); }),
            "TypeError: vm.builtin.copy: expected 1 argument but got 2");
}

TEST(BuiltinValuesTest, NullValue) {
  EXPECT_TRUE(builtin("vm.builtin.null_value")().isNone());
  EXPECT_EQ(errorText([] { builtin("vm.builtin.null_value")(1); }),
            "TypeError: vm.builtin.null_value: expected 0 arguments but got 1");
}

TEST(BuiltinValuesTest, ReadIfCondScalars) {
  Function R = builtin("vm.builtin.read_if_cond");
  EXPECT_TRUE(R(7).cast<bool>());
  EXPECT_TRUE(R(-1).cast<bool>());
  EXPECT_FALSE(R(0).cast<bool>());
  EXPECT_TRUE(R(true).cast<bool>());
  EXPECT_FALSE(R(false).cast<bool>());
  // The result is a bool, whatever the input.
  EXPECT_EQ(R(7).typeIndex(), kVMJITBool);
  EXPECT_EQ(errorText([&] { R(1.5); }),
            "TypeError: vm.builtin.read_if_cond: the condition must be an "
            "int, a bool or an int/uint/bool tensor, not float");
  EXPECT_EQ(errorText([&] { R(Shape{1}); }),
            "TypeError: vm.builtin.read_if_cond: the condition must be an "
            "int, a bool or an int/uint/bool tensor, not Shape");
  EXPECT_EQ(errorText([&] { R(nullptr); }),
            "TypeError: vm.builtin.read_if_cond: the condition must be an "
            "int, a bool or an int/uint/bool tensor, not None");
}

TEST(BuiltinValuesTest, ReadIfCondTensorsOfAnyRankReadElementZero) {
  Function R = builtin("vm.builtin.read_if_cond");
  EXPECT_TRUE(R(tensorOf<int32_t>({}, {3}, dtype::Int32)).cast<bool>());
  EXPECT_FALSE(R(tensorOf<int32_t>({}, {0}, dtype::Int32)).cast<bool>());
  // int32[2] = 0, 1 is false: only element 0 counts (TVM's probe).
  EXPECT_FALSE(R(tensorOf<int32_t>({2}, {0, 1}, dtype::Int32)).cast<bool>());
  EXPECT_TRUE(
      R(tensorOf<int8_t>({2, 2}, {2, 0, 0, 0}, dtype::Int8)).cast<bool>());
  EXPECT_TRUE(R(tensorOf<int64_t>({1}, {int64_t(1) << 40}, dtype::Int64))
                  .cast<bool>());
  EXPECT_TRUE(R(tensorOf<uint16_t>({1}, {0x8000}, dtype::UInt16)).cast<bool>());
  EXPECT_FALSE(R(tensorOf<uint8_t>({1, 1}, {0}, dtype::Bool)).cast<bool>());
  EXPECT_TRUE(R(tensorOf<uint8_t>({1}, {1}, dtype::Bool)).cast<bool>());
  // A DLTensor pointer (what a C kernel passes) reads the same way.
  Tensor T = tensorOf<int32_t>({2}, {5, 0}, dtype::Int32);
  EXPECT_TRUE(R(T.dl()).cast<bool>());
  // A view with a byte offset reads its own element 0.
  EXPECT_FALSE(R(importedView(T, 4, {1})).cast<bool>());
}

TEST(BuiltinValuesTest, ReadIfCondTensorErrors) {
  Function R = builtin("vm.builtin.read_if_cond");
  // Floats are rejected even at rank 0, as in TVM.
  EXPECT_EQ(errorText([&] { R(tensorOf<float>({}, {1}, dtype::Float32)); }),
            "TypeError: vm.builtin.read_if_cond: the condition tensor must "
            "be int, uint or bool, not float32");
  EXPECT_EQ(
      errorText([&] { R(Tensor::empty({0}, dtype::Int32)); }),
      "ValueError: vm.builtin.read_if_cond: the condition tensor is empty");
  EXPECT_EQ(errorText([&] { R(Tensor::empty({2, 0}, dtype::Int64)); }),
            "ValueError: vm.builtin.read_if_cond: the condition tensor is "
            "empty");
  EXPECT_EQ(errorText([&] { R(Tensor::empty({1}, dtype::make(kDLInt, 4))); }),
            "TypeError: vm.builtin.read_if_cond: cannot read a condition of "
            "type int4");
}

TEST(BuiltinValuesTest, MakeTuple) {
  Function Make = builtin("vm.builtin.make_tuple");
  Array T = Make(1, 2.5, "s", nullptr).cast<Array>();
  ASSERT_EQ(T.size(), 4u);
  EXPECT_EQ(T[0].cast<int64_t>(), 1);
  EXPECT_EQ(T[1].cast<double>(), 2.5);
  EXPECT_EQ(T[2].cast<std::string>(), "s");
  EXPECT_TRUE(T[3].isNone());
  EXPECT_EQ(Make().cast<Array>().size(), 0u);
}

TEST(BuiltinValuesTest, TupleGetItemDoesNotWrapNegativeIndices) {
  Function Get = builtin("vm.builtin.tuple_getitem");
  Array T = builtin("vm.builtin.make_tuple")(10, 20, 30).cast<Array>();
  EXPECT_EQ(Get(T, 0).cast<int64_t>(), 10);
  EXPECT_EQ(Get(T, 2).cast<int64_t>(), 30);
  // TVM: "IndexError: Index -1 out of bounds 3".
  EXPECT_EQ(errorText([&] { Get(T, -1); }),
            "IndexError: vm.builtin.tuple_getitem: index -1 is out of range "
            "for a tuple of 3 elements");
  EXPECT_EQ(errorText([&] { Get(T, 3); }),
            "IndexError: vm.builtin.tuple_getitem: index 3 is out of range "
            "for a tuple of 3 elements");
  // Tuple first, index second.
  EXPECT_EQ(errorText([&] { Get(0, T); }),
            "TypeError: vm.builtin.tuple_getitem: argument 1 expected Array "
            "but got int");
  EXPECT_EQ(errorText([&] { Get(T, 1.0); }),
            "TypeError: vm.builtin.tuple_getitem: argument 2 expected int "
            "but got float");
}

TEST(BuiltinValuesTest, TupleResetItemClearsInPlace) {
  Function Reset = builtin("vm.builtin.tuple_reset_item");
  Tensor X = Tensor::empty({4}, dtype::Float32);
  Array T = builtin("vm.builtin.make_tuple")(X, 7).cast<Array>();
  Array Alias = T; // another holder of the same tuple
  EXPECT_EQ(X.get()->useCount(), 2u);
  EXPECT_TRUE(Reset(T, 0).isNone());
  // The element is None for every holder and its reference is gone.
  EXPECT_TRUE(Alias[0].isNone());
  EXPECT_EQ(Alias[1].cast<int64_t>(), 7);
  EXPECT_EQ(X.get()->useCount(), 1u);
  EXPECT_TRUE(builtin("vm.builtin.tuple_getitem")(T, 0).isNone());
  EXPECT_EQ(errorText([&] { Reset(T, 2); }),
            "IndexError: vm.builtin.tuple_reset_item: index 2 is out of "
            "range for a tuple of 2 elements");
  EXPECT_EQ(errorText([&] { Reset(T, -1); }),
            "IndexError: vm.builtin.tuple_reset_item: index -1 is out of "
            "range for a tuple of 2 elements");
  EXPECT_EQ(errorText([&] { Reset(nullptr, 0); }),
            "TypeError: vm.builtin.tuple_reset_item: argument 1 expected "
            "Array but got None");
}
