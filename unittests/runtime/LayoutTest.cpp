//===- LayoutTest.cpp - The C ABI layout of values and objects ------------===//

#include "vmjit/runtime/array.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>

#include <cstddef>

using namespace vmjit;

namespace {

/// Byte distance from the start of an object to a member of it.
ptrdiff_t offsetIn(const void *Obj, const void *Member) {
  return static_cast<const char *>(Member) - static_cast<const char *>(Obj);
}

/// The payload right after the 24-byte header of `O`, read as a T.
template <typename T> const T &payload(const Object *O) {
  return *reinterpret_cast<const T *>(reinterpret_cast<const char *>(O) +
                                      sizeof(VMJITObject));
}

TEST(LayoutTest, AnyIsSixteenBytes) {
  EXPECT_EQ(sizeof(VMJITAny), 16u);
  EXPECT_EQ(alignof(VMJITAny), 8u);
  EXPECT_EQ(offsetof(VMJITAny, type_index), 0u);
  EXPECT_EQ(offsetof(VMJITAny, small_str_len), 4u);
  EXPECT_EQ(offsetof(VMJITAny, zero_padding), 4u);
  EXPECT_EQ(offsetof(VMJITAny, v_int64), 8u);
  EXPECT_EQ(offsetof(VMJITAny, v_obj), 8u);
  EXPECT_EQ(offsetof(VMJITAny, v_dtype), 8u);
  EXPECT_EQ(sizeof(Any), 16u);
  EXPECT_EQ(sizeof(AnyView), 16u);
}

TEST(LayoutTest, AnyBytesAreTheCValue) {
  Any A(int64_t(-5));
  const auto *Raw = reinterpret_cast<const VMJITAny *>(&A);
  EXPECT_EQ(Raw->type_index, kVMJITInt);
  EXPECT_EQ(Raw->v_int64, -5);
}

TEST(LayoutTest, ObjectHeaderIsTwentyFourBytes) {
  EXPECT_EQ(sizeof(VMJITObject), 24u);
  EXPECT_EQ(alignof(VMJITObject), 8u);
  EXPECT_EQ(offsetof(VMJITObject, combined_ref_count), 0u);
  EXPECT_EQ(offsetof(VMJITObject, type_index), 8u);
  EXPECT_EQ(offsetof(VMJITObject, deleter), 16u);
  EXPECT_EQ(sizeof(Object), 24u);
}

TEST(LayoutTest, HeaderFieldsHoldCountsAndType) {
  String S(std::string(20, 'x'));
  const VMJITObject *H = S.get()->raw();
  EXPECT_EQ(static_cast<const void *>(H), static_cast<const void *>(S.get()));
  // One strong reference (low half) and the shared weak one (high half).
  EXPECT_EQ(H->combined_ref_count, (uint64_t(1) << 32) | 1);
  EXPECT_EQ(H->type_index, kVMJITStr);
  String Copy = S;
  EXPECT_EQ(H->combined_ref_count, (uint64_t(1) << 32) | 2);
}

TEST(LayoutTest, TensorDLTensorAtOffset24) {
  Tensor T = Tensor::empty({2, 3}, dtype::Float32);
  EXPECT_EQ(offsetIn(T.get(), &T.get()->DL), 24);
  EXPECT_EQ(payload<DLTensor>(T.get()).data, T.data());
  EXPECT_EQ(payload<DLTensor>(T.get()).ndim, 2);
}

TEST(LayoutTest, FunctionSafeCallAtOffset24) {
  Function F = Function::fromPacked(
      "f", [](PackedArgs, Any *Result) { *Result = int64_t(7); });
  EXPECT_EQ(payload<VMJITFunctionCell>(F.get()).safe_call, F.get()->entry());
  // VMJITFunctionCall finds the entry at offset 24 on its own.
  VMJITAny Result{};
  Result.type_index = kVMJITNone;
  ASSERT_EQ(VMJITFunctionCall(F.get()->raw(), nullptr, 0, &Result), 0);
  EXPECT_EQ(Result.type_index, kVMJITInt);
  EXPECT_EQ(Result.v_int64, 7);
}

TEST(LayoutTest, StringAndBytesCellAtOffset24) {
  String S(std::string("a string longer than seven bytes"));
  const auto &Cell = payload<VMJITByteArray>(S.get());
  EXPECT_EQ(Cell.data, S.c_str());
  EXPECT_EQ(Cell.size, S.size());
  Bytes B(std::string("some bytes\0here", 15));
  const auto &BCell = payload<VMJITByteArray>(B.get());
  EXPECT_EQ(std::string_view(BCell.data, BCell.size), B.view());
  EXPECT_EQ(BCell.size, 15u);
}

TEST(LayoutTest, ShapeCellAtOffset24) {
  Shape S{4, 5, 6};
  const auto &Cell = payload<VMJITShapeCell>(S.get());
  EXPECT_EQ(Cell.data, S.dims().data());
  EXPECT_EQ(Cell.size, 3u);
  EXPECT_EQ(Cell.data[2], 6);
}

TEST(LayoutTest, ArrayDataAndSizeAtOffset24) {
  Array A(std::vector<Any>{Any(1), Any(2.5), Any(nullptr)});
  const Any *Data = payload<const Any *>(A.get());
  EXPECT_EQ(Data, A.elements().data());
  const char *Base = reinterpret_cast<const char *>(A.get());
  EXPECT_EQ(*reinterpret_cast<const int64_t *>(Base + 32), 3);
  EXPECT_EQ(Data[1].raw().type_index, kVMJITFloat);
}

TEST(LayoutTest, TypeIndexNumbering) {
  EXPECT_EQ(kVMJITNone, 0);
  EXPECT_EQ(kVMJITInt, 1);
  EXPECT_EQ(kVMJITBool, 2);
  EXPECT_EQ(kVMJITFloat, 3);
  EXPECT_EQ(kVMJITOpaquePtr, 4);
  EXPECT_EQ(kVMJITDataType, 5);
  EXPECT_EQ(kVMJITDevice, 6);
  EXPECT_EQ(kVMJITDLTensorPtr, 7);
  EXPECT_EQ(kVMJITRawStr, 8);
  EXPECT_EQ(kVMJITByteArrayPtr, 9);
  EXPECT_EQ(kVMJITObjectRValueRef, 10);
  EXPECT_EQ(kVMJITSmallStr, 11);
  EXPECT_EQ(kVMJITSmallBytes, 12);
  EXPECT_EQ(kVMJITObject, 64);
  EXPECT_EQ(kVMJITStr, 65);
  EXPECT_EQ(kVMJITBytes, 66);
  EXPECT_EQ(kVMJITError, 67);
  EXPECT_EQ(kVMJITFunction, 68);
  EXPECT_EQ(kVMJITShape, 69);
  EXPECT_EQ(kVMJITTensor, 70);
  EXPECT_EQ(kVMJITArray, 71);
  EXPECT_EQ(kVMJITMap, 72);
  EXPECT_EQ(kVMJITModule, 73);
  EXPECT_EQ(kVMJITDynObjectBegin, 128);
}

TEST(LayoutTest, ObjectsCarryTheirTypeIndex) {
  EXPECT_EQ(Any(String(std::string(10, 's'))).typeIndex(), kVMJITStr);
  EXPECT_EQ(Any(Bytes(std::string(10, 'b'))).typeIndex(), kVMJITBytes);
  EXPECT_EQ(Any(Error("ValueError", "x")).typeIndex(), kVMJITError);
  EXPECT_EQ(Any(Shape{1}).typeIndex(), kVMJITShape);
  EXPECT_EQ(Any(Tensor::empty({1}, dtype::Int8)).typeIndex(), kVMJITTensor);
  EXPECT_EQ(Any(Array(std::vector<Any>{})).typeIndex(), kVMJITArray);
  EXPECT_EQ(
      Any(Function::fromPacked("f", [](PackedArgs, Any *) {})).typeIndex(),
      kVMJITFunction);
}

} // namespace
