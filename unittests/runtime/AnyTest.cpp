//===- AnyTest.cpp - Conversions between C++ values and Any / AnyView -----===//

#include "vmjit/runtime/any.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>

#include <limits>

using namespace vmjit;

namespace {

const std::string LongText = "a string of more than seven bytes";

TEST(AnyTest, DefaultIsNone) {
  Any A;
  EXPECT_TRUE(A.isNone());
  EXPECT_EQ(A.typeName(), "None");
  EXPECT_TRUE(AnyView().isNone());
  EXPECT_TRUE(Any(nullptr).as<std::nullptr_t>().has_value());
  EXPECT_FALSE(Any(0).as<std::nullptr_t>().has_value());
}

TEST(AnyTest, IntegersOfAllWidths) {
  EXPECT_EQ(Any(int8_t(-8)).cast<int64_t>(), -8);
  EXPECT_EQ(Any(int16_t(-1600)).cast<int64_t>(), -1600);
  EXPECT_EQ(Any(int32_t(-320000)).cast<int64_t>(), -320000);
  EXPECT_EQ(Any(std::numeric_limits<int64_t>::min()).cast<int64_t>(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Any(uint8_t(200)).cast<int64_t>(), 200);
  EXPECT_EQ(Any(uint16_t(60000)).cast<int64_t>(), 60000);
  EXPECT_EQ(Any(uint32_t(4000000000u)).cast<int64_t>(), 4000000000);
  EXPECT_EQ(Any(uint64_t(1) << 40).cast<uint64_t>(), uint64_t(1) << 40);
  EXPECT_EQ(Any(int64_t(300)).cast<int16_t>(), 300);
  Any A(int32_t(5));
  EXPECT_EQ(A.typeIndex(), kVMJITInt);
  EXPECT_EQ(A.typeName(), "int");
  EXPECT_EQ(AnyView(int16_t(-3)).cast<int>(), -3);
}

TEST(AnyTest, Bool) {
  Any T(true), F(false);
  EXPECT_EQ(T.typeIndex(), kVMJITBool);
  EXPECT_EQ(T.typeName(), "bool");
  EXPECT_TRUE(T.cast<bool>());
  EXPECT_FALSE(F.cast<bool>());
  // A bool reads as an int and an int as a bool.
  EXPECT_EQ(T.cast<int64_t>(), 1);
  EXPECT_TRUE(Any(7).cast<bool>());
  EXPECT_FALSE(Any(0).cast<bool>());
}

TEST(AnyTest, Floats) {
  Any D(2.5);
  EXPECT_EQ(D.typeIndex(), kVMJITFloat);
  EXPECT_DOUBLE_EQ(D.cast<double>(), 2.5);
  EXPECT_FLOAT_EQ(Any(1.25f).cast<float>(), 1.25f);
  EXPECT_EQ(Any(1.25f).typeIndex(), kVMJITFloat);
  // Ints and bools widen to float; a float does not narrow to int.
  EXPECT_DOUBLE_EQ(Any(3).cast<double>(), 3.0);
  EXPECT_DOUBLE_EQ(Any(true).cast<double>(), 1.0);
  EXPECT_FALSE(D.as<int64_t>().has_value());
}

TEST(AnyTest, OpaquePointer) {
  int X = 0;
  Any P(static_cast<void *>(&X));
  EXPECT_EQ(P.typeIndex(), kVMJITOpaquePtr);
  EXPECT_EQ(P.cast<void *>(), &X);
  // A null pointer is None, and None reads as a null pointer.
  EXPECT_TRUE(Any(static_cast<void *>(nullptr)).isNone());
  EXPECT_EQ(Any().cast<void *>(), nullptr);
  EXPECT_FALSE(Any(1).as<void *>().has_value());
}

TEST(AnyTest, DataType) {
  Any T(dtype::Float32);
  EXPECT_EQ(T.typeIndex(), kVMJITDataType);
  EXPECT_TRUE(T.cast<DLDataType>() == dtype::Float32);
  DLDataType Vec{kDLInt, 8, 4};
  EXPECT_TRUE(Any(Vec).cast<DLDataType>() == Vec);
  // Names of data types convert too.
  EXPECT_TRUE(Any("float32").cast<DLDataType>() == dtype::Float32);
  EXPECT_TRUE(Any(std::string("bfloat16")).cast<DLDataType>() ==
              dtype::BFloat16);
  EXPECT_TRUE(Any("float8_e4m3fn").cast<DLDataType>() ==
              dtype::Float8E4M3FN);
  EXPECT_FALSE(Any("floaty").as<DLDataType>().has_value());
}

TEST(AnyTest, Device) {
  Any D(DLDevice{kDLCUDA, 3});
  EXPECT_EQ(D.typeIndex(), kVMJITDevice);
  DLDevice Got = D.cast<DLDevice>();
  EXPECT_EQ(Got.device_type, kDLCUDA);
  EXPECT_EQ(Got.device_id, 3);
  EXPECT_FALSE(Any(3).as<DLDevice>().has_value());
}

TEST(AnyTest, SmallStringIsInline) {
  Any S(std::string("seven!!"));
  EXPECT_EQ(S.typeIndex(), kVMJITSmallStr);
  EXPECT_EQ(S.raw().small_str_len, 7u);
  EXPECT_EQ(std::string_view(S.raw().v_bytes, 7), "seven!!");
  EXPECT_EQ(S.cast<std::string>(), "seven!!");
  EXPECT_EQ(S.typeName(), "str");
  Any C("abc");
  EXPECT_EQ(C.typeIndex(), kVMJITSmallStr);
  EXPECT_EQ(C.cast<std::string>(), "abc");
  EXPECT_EQ(Any("").cast<std::string>(), "");
  // A small string converts to a String object on demand.
  String Obj = S.cast<String>();
  EXPECT_EQ(Obj.view(), "seven!!");
  EXPECT_EQ(Obj.useCount(), 1u);
}

TEST(AnyTest, LongStringIsObject) {
  Any S(LongText);
  EXPECT_EQ(S.typeIndex(), kVMJITStr);
  EXPECT_EQ(S.cast<std::string>(), LongText);
  String Obj = S.cast<String>();
  EXPECT_EQ(Obj.useCount(), 2u);
  EXPECT_EQ(Obj.view(), LongText);
  Any C(LongText.c_str());
  EXPECT_EQ(C.typeIndex(), kVMJITStr);
  Any FromString(String("eight!!!"));
  EXPECT_EQ(FromString.typeIndex(), kVMJITStr);
}

TEST(AnyTest, ViewOfStringBorrows) {
  std::string S = "borrowed";
  AnyView V(S);
  EXPECT_EQ(V.typeIndex(), kVMJITRawStr);
  EXPECT_EQ(V.raw().v_c_str, S.c_str());
  EXPECT_EQ(V.cast<std::string>(), "borrowed");
}

TEST(AnyTest, AnyFromViewOfRawStringOwnsACopy) {
  std::string Long = LongText, Short = "short";
  Any A{AnyView(Long)}, B{AnyView(Short)};
  Long.assign(Long.size(), '?');
  Short = "?????";
  EXPECT_EQ(A.typeIndex(), kVMJITStr);
  EXPECT_EQ(A.cast<std::string>(), LongText);
  EXPECT_EQ(B.typeIndex(), kVMJITSmallStr);
  EXPECT_EQ(B.cast<std::string>(), "short");
}

TEST(AnyTest, AnyFromViewOfRValueRefTakesAReference) {
  Shape S{7};
  VMJITObject *Slot = S.ptr()->raw();
  VMJITAny Raw{};
  Raw.type_index = kVMJITObjectRValueRef;
  Raw.v_ptr = &Slot;
  Any A{AnyView::fromRaw(Raw)};
  EXPECT_EQ(A.typeIndex(), kVMJITShape);
  EXPECT_EQ(S.useCount(), 2u);
  EXPECT_EQ(Slot, S.ptr()->raw()); // a copy does not take the object
}

TEST(AnyTest, Bytes) {
  Bytes B(std::string("\0\1\2 binary data", 15));
  Any A(B);
  EXPECT_EQ(A.typeIndex(), kVMJITBytes);
  EXPECT_EQ(A.typeName(), "bytes");
  EXPECT_EQ(A.cast<Bytes>().view(), B.view());
  EXPECT_EQ(B.useCount(), 2u);
  VMJITByteArray Arr{"xy\0z", 4};
  VMJITAny Raw{};
  Raw.type_index = kVMJITByteArrayPtr;
  Raw.v_ptr = &Arr;
  Any Copy{AnyView::fromRaw(Raw)};
  EXPECT_EQ(Copy.typeIndex(), kVMJITSmallBytes);
  EXPECT_EQ(Copy.cast<Bytes>().view(), std::string_view("xy\0z", 4));
  // Bytes are not strings.
  EXPECT_FALSE(A.as<std::string>().has_value());
}

TEST(AnyTest, Shape) {
  Any A(Shape{2, 3, 4});
  EXPECT_EQ(A.typeIndex(), kVMJITShape);
  Shape S = A.cast<Shape>();
  EXPECT_EQ(std::vector<int64_t>(S.begin(), S.end()),
            (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(S.useCount(), 2u);
  EXPECT_EQ(S.numel(), 24);
}

TEST(AnyTest, Tensor) {
  Tensor T = Tensor::empty({3}, dtype::Float32);
  Any A(T);
  EXPECT_EQ(T.useCount(), 2u);
  EXPECT_EQ(A.typeName(), "Tensor");
  EXPECT_TRUE(A.cast<Tensor>().same(T));
  EXPECT_EQ(A.cast<DLTensor *>(), &T.get()->DL);
  // A DLTensor pointer view is type 7.
  AnyView V(T.dl());
  EXPECT_EQ(V.typeIndex(), kVMJITDLTensorPtr);
  EXPECT_EQ(V.cast<DLTensor *>(), T.dl());
  EXPECT_FALSE(V.as<Tensor>().has_value());
}

TEST(AnyTest, Array) {
  Array Arr(std::vector<Any>{Any(1), Any(LongText), Any(2.0)});
  Any A(Arr);
  Array Back = A.cast<Array>();
  ASSERT_EQ(Back.size(), 3u);
  EXPECT_EQ(Back[0].cast<int>(), 1);
  EXPECT_EQ(Back[1].cast<std::string>(), LongText);
  EXPECT_DOUBLE_EQ(Back[2].cast<double>(), 2.0);
  EXPECT_EQ(Arr.useCount(), 3u);
}

TEST(AnyTest, FunctionAndError) {
  Function F = Function::fromPacked("f", [](PackedArgs, Any *) {});
  Any A(F);
  EXPECT_EQ(A.typeIndex(), kVMJITFunction);
  EXPECT_TRUE(A.cast<Function>().same(F));
  Error E("ValueError", "bad");
  Any B(E);
  EXPECT_EQ(B.typeIndex(), kVMJITError);
  EXPECT_EQ(B.cast<Error>().message(), "bad");
  EXPECT_FALSE(B.as<Function>().has_value());
}

TEST(AnyTest, ObjectRefAcceptsAnyObject) {
  Shape S{1};
  Any A(S);
  ObjectRef R = A.cast<ObjectRef>();
  EXPECT_TRUE(R.same(S));
  EXPECT_EQ(R.typeIndex(), kVMJITShape);
  EXPECT_FALSE(Any().cast<ObjectRef>().defined());
  EXPECT_FALSE(Any(1).as<ObjectRef>().has_value());
  Any B(R);
  EXPECT_EQ(B.typeIndex(), kVMJITShape);
  EXPECT_EQ(S.useCount(), 4u);
}

TEST(AnyTest, CopyAndMoveCountReferences) {
  Shape S{1, 2};
  {
    Any A(S);
    EXPECT_EQ(S.useCount(), 2u);
    Any B = A;
    EXPECT_EQ(S.useCount(), 3u);
    Any C = std::move(A);
    EXPECT_TRUE(A.isNone());
    EXPECT_EQ(S.useCount(), 3u);
    B = Any(5);
    EXPECT_EQ(S.useCount(), 2u);
    Any &Alias = C;
    C = Alias; // self-assignment keeps the reference
    EXPECT_EQ(S.useCount(), 2u);
    AnyView V(C);
    EXPECT_EQ(S.useCount(), 2u); // views borrow
    Any D{V};
    EXPECT_EQ(S.useCount(), 3u);
  }
  EXPECT_EQ(S.useCount(), 1u);
}

TEST(AnyTest, RawOwnershipTransfer) {
  Shape S{1};
  Any A(S);
  VMJITAny Raw = A.releaseRaw();
  EXPECT_TRUE(A.isNone());
  EXPECT_EQ(S.useCount(), 2u);
  VMJITAnyRelease(&Raw);
  EXPECT_EQ(Raw.type_index, kVMJITNone);
  EXPECT_EQ(S.useCount(), 1u);
}

TEST(AnyTest, CastErrorIsTypeError) {
  Any A(1);
  try {
    (void)A.cast<Tensor>();
    FAIL() << "cast<Tensor>() on an int did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "TypeError");
    EXPECT_EQ(E.message(), "expected Tensor but got int");
  }
  try {
    (void)Any(LongText).cast<int64_t>();
    FAIL() << "cast<int64_t>() on a string did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.message(), "expected int but got str");
  }
}

TEST(AnyTest, AnArrayWhereAShapeIsExpectedSaysHowToMakeOne) {
  const std::string Hint = " (a tuple or list is an Array: make a Shape with "
                           "vmjit.Shape([...]) in Python, vmjit::Shape({...}) "
                           "in C++)";
  Any A(Array(std::vector<Any>{Any(1), Any(4)}));
  try {
    (void)A.cast<Shape>();
    FAIL() << "cast<Shape>() on an Array did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.message(), "expected Shape but got Array" + Hint);
  }
  // The typed functions' argument check says the same.
  Function F = Function::fromTyped(
      "f", [](Shape S) { return static_cast<int64_t>(S.size()); });
  try {
    F(A);
    FAIL() << "f(Array) did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.message(), "f: argument 1 expected Shape but got Array" + Hint);
  }
  // Other mismatches get no hint.
  try {
    (void)Any(1).cast<Shape>();
    FAIL();
  } catch (const Error &E) {
    EXPECT_EQ(E.message(), "expected Shape but got int");
  }
}

TEST(AnyTest, AsReturnsNulloptOnMismatch) {
  Any A(2.5);
  EXPECT_FALSE(A.as<Tensor>().has_value());
  EXPECT_FALSE(A.as<std::string>().has_value());
  EXPECT_FALSE(A.as<Shape>().has_value());
  EXPECT_FALSE(A.as<bool>().has_value());
  EXPECT_FALSE(Any("x").as<int64_t>().has_value());
  EXPECT_EQ(A.as<double>(), 2.5);
}

} // namespace
