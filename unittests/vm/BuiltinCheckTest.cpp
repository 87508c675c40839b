// Tests vm.builtin.check_tensor_info (TVM's 3- and 4-argument forms),
// check_shape_info, check_tuple_info, check_prim_value_info and
// check_func_info: the error-context text (str or None) starts each
// message; a value of the wrong kind is a TypeError, a wrong rank, size or
// dtype a ValueError, as in TVM.
#include "BuiltinTestUtil.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;

TEST(BuiltinCheckTest, CheckTensorInfoFourArguments) {
  Function Check = builtin("vm.builtin.check_tensor_info");
  Tensor T = Tensor::empty({2, 3}, dtype::Float32);
  // (x, ndim, dtype, text): x itself when it matches.
  EXPECT_EQ(Check(T, 2, dtype::Float32, "x").cast<Tensor>().get(), T.get());
  EXPECT_EQ(Check(T, -1, nullptr, "x").cast<Tensor>().get(), T.get());
  EXPECT_EQ(Check(T, 2, "float32", "x").cast<Tensor>().get(), T.get());
  EXPECT_EQ(errorText([&] { Check(T, 3, dtype::Float32, "main: x"); }),
            "ValueError: vm.builtin.check_tensor_info: main: x: expected a "
            "tensor of rank 3 but got rank 2");
  EXPECT_EQ(errorText([&] { Check(T, 2, dtype::Int8, "main: x"); }),
            "ValueError: vm.builtin.check_tensor_info: main: x: expected dtype "
            "int8 but got float32");
  EXPECT_EQ(errorText([&] { Check(5, -1, dtype::Int8, "main: x"); }),
            "TypeError: vm.builtin.check_tensor_info: main: x: expected a "
            "Tensor but got int");
  // The text may be None.
  EXPECT_EQ(errorText([&] { Check(5, -1, nullptr, nullptr); }),
            "TypeError: vm.builtin.check_tensor_info: expected a Tensor but "
            "got int");
}

TEST(BuiltinCheckTest, CheckTensorInfoThreeArgumentsHasNoDtype) {
  Function Check = builtin("vm.builtin.check_tensor_info");
  Tensor T = Tensor::empty({4}, dtype::UInt8);
  // (x, ndim, text)
  EXPECT_EQ(Check(T, 1, "x").cast<Tensor>().get(), T.get());
  EXPECT_EQ(errorText([&] { Check(T, 0, "x"); }),
            "ValueError: vm.builtin.check_tensor_info: x: expected a tensor of "
            "rank 0 but got rank 1");
  // A dtype where the text belongs is a type error, as in TVM.
  EXPECT_EQ(errorText([&] { Check(T, 1, dtype::UInt8); }),
            "TypeError: vm.builtin.check_tensor_info: argument 3 expected str "
            "but got DataType");
  EXPECT_EQ(errorText([&] { Check(T, 1); }),
            "TypeError: vm.builtin.check_tensor_info: expected 3 to 4 "
            "arguments but got 2");
  EXPECT_EQ(errorText([&] { Check(T, 1.5, "x"); }),
            "TypeError: vm.builtin.check_tensor_info: argument 2 expected int "
            "but got float");
}

TEST(BuiltinCheckTest, CheckShapeInfo) {
  Function Check = builtin("vm.builtin.check_shape_info");
  // (x, ndim, text): returns None.
  EXPECT_TRUE(Check(Shape{2, 3}, 2, "s").isNone());
  EXPECT_TRUE(Check(Shape(std::vector<int64_t>()), -1, nullptr).isNone());
  EXPECT_EQ(errorText([&] { Check(Shape{2, 3}, 1, "main: s"); }),
            "ValueError: vm.builtin.check_shape_info: main: s: expected a "
            "shape of 1 dimensions but got [2, 3]");
  EXPECT_EQ(errorText([&] { Check(Tensor::empty({2}, dtype::Int64), 1, "s"); }),
            "TypeError: vm.builtin.check_shape_info: s: expected a Shape but "
            "got Tensor");
  // None: a clean error (TVM reads the type of a null object).
  EXPECT_EQ(errorText([&] { Check(nullptr, 1, "s"); }),
            "TypeError: vm.builtin.check_shape_info: s: expected a Shape but "
            "got None");
}

TEST(BuiltinCheckTest, CheckTupleInfo) {
  Function Check = builtin("vm.builtin.check_tuple_info");
  Any T = builtin("vm.builtin.make_tuple")(1, 2);
  EXPECT_TRUE(Check(T, 2, "t").isNone());
  EXPECT_EQ(errorText([&] { Check(T, 3, "main: t"); }),
            "ValueError: vm.builtin.check_tuple_info: main: t: expected a "
            "tuple of 3 elements but got 2");
  EXPECT_EQ(errorText([&] { Check(Shape{1, 2}, 2, "t"); }),
            "TypeError: vm.builtin.check_tuple_info: t: expected a tuple but "
            "got Shape");
}

TEST(BuiltinCheckTest, CheckFuncInfo) {
  Function Check = builtin("vm.builtin.check_func_info");
  auto VM = makeVM();
  EXPECT_TRUE(Check(builtin("scalar.add"), "f").isNone());
  EXPECT_TRUE(Check(VM->getFunction("main"), "f").isNone());
  EXPECT_TRUE(
      Check(builtin("vm.builtin.make_closure")(builtin("scalar.add"), 1), "f")
          .isNone());
  EXPECT_EQ(errorText([&] { Check(3, "main: f"); }),
            "TypeError: vm.builtin.check_func_info: main: f: expected a "
            "function but got int");
}

TEST(BuiltinCheckTest, CheckPrimValueInfo) {
  Function Check = builtin("vm.builtin.check_prim_value_info");
  // (x, dtype, text): the conversions TVM's casts accept.
  EXPECT_TRUE(Check(3, dtype::Int64, "n").isNone());
  EXPECT_TRUE(Check(true, dtype::Int32, "n").isNone());
  EXPECT_TRUE(Check(1, dtype::Bool, "b").isNone());
  EXPECT_TRUE(Check(7, dtype::UInt8, "u").isNone());
  EXPECT_TRUE(Check(1.5, dtype::Float32, "f").isNone());
  EXPECT_TRUE(Check(2, dtype::Float64, "f").isNone());
  EXPECT_TRUE(
      Check(static_cast<void *>(&Check), dtype::make(kDLOpaqueHandle, 64), "h")
          .isNone());
  EXPECT_TRUE(Check(nullptr, dtype::make(kDLOpaqueHandle, 64), "h").isNone());
  EXPECT_EQ(errorText([&] { Check(1.5, dtype::Int64, "main: n"); }),
            "TypeError: vm.builtin.check_prim_value_info: main: n: expected a "
            "int64 value but got float");
  EXPECT_EQ(errorText([&] { Check(Shape{1}, dtype::Int64, "n"); }),
            "TypeError: vm.builtin.check_prim_value_info: n: expected a int64 "
            "value but got Shape");
  EXPECT_EQ(errorText([&] { Check(nullptr, dtype::Float32, "n"); }),
            "TypeError: vm.builtin.check_prim_value_info: n: expected a "
            "float32 value but got None");
  EXPECT_EQ(errorText([&] { Check(1, dtype::BFloat16, "n"); }),
            "TypeError: vm.builtin.check_prim_value_info: n: unsupported "
            "dtype bfloat16");
  EXPECT_THAT(errorText([&] { Check(1, DLDataType{kDLOpaqueHandle, 0, 0}, "n"); }),
            ::testing::HasSubstr("n: unsupported dtype"));
}
