//===- DataTypeTest.cpp - Data type names and their parser ----------------===//

#include "vmjit/runtime/data_type.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

using namespace vmjit;

namespace {

struct NamedType {
  const char *Name;
  DLDataType Type;
};

const NamedType KnownTypes[] = {
    {"int8", dtype::Int8},
    {"int16", dtype::Int16},
    {"int32", dtype::Int32},
    {"int64", dtype::Int64},
    {"uint8", dtype::UInt8},
    {"uint16", dtype::UInt16},
    {"uint32", dtype::UInt32},
    {"uint64", dtype::UInt64},
    {"float16", dtype::Float16},
    {"float32", dtype::Float32},
    {"float64", dtype::Float64},
    {"bfloat16", dtype::BFloat16},
    {"bool", dtype::Bool},
    {"float32x4", {kDLFloat, 32, 4}},
    {"int8x16", {kDLInt, 8, 16}},
    // TVM's names beyond NumPy's (tvm-ffi's DLDataTypeToString).
    {"int1", {kDLInt, 1, 1}},
    {"int2", {kDLInt, 2, 1}},
    {"int4", dtype::Int4},
    {"uint1", {kDLUInt, 1, 1}},
    {"uint4", dtype::UInt4},
    {"boolx4", {kDLBool, 8, 4}},
    {"float8_e3m4", {kDLFloat8_e3m4, 8, 1}},
    {"float8_e4m3", {kDLFloat8_e4m3, 8, 1}},
    {"float8_e4m3b11fnuz", {kDLFloat8_e4m3b11fnuz, 8, 1}},
    {"float8_e4m3fn", dtype::Float8E4M3FN},
    {"float8_e4m3fnuz", {kDLFloat8_e4m3fnuz, 8, 1}},
    {"float8_e5m2", dtype::Float8E5M2},
    {"float8_e5m2fnuz", {kDLFloat8_e5m2fnuz, 8, 1}},
    {"float8_e8m0fnu", {kDLFloat8_e8m0fnu, 8, 1}},
    {"float6_e2m3fn", {kDLFloat6_e2m3fn, 6, 1}},
    {"float6_e3m2fn", {kDLFloat6_e3m2fn, 6, 1}},
    {"float4_e2m1fn", dtype::Float4E2M1FN},
    {"float4_e2m1fnx2", {kDLFloat4_e2m1fn, 4, 2}},
    {"float8_e5m2x16", {kDLFloat8_e5m2, 8, 16}},
    {"float32xvscalex4", {kDLFloat, 32, 0xFFFC}},
    {"int8x65535", {kDLInt, 8, 0xFFFF}},
    // Any width TVM names: it reads these back as the same types.
    {"int12", {kDLInt, 12, 1}},
    {"float8", {kDLFloat, 8, 1}},
    {"bfloat32", {kDLBfloat, 32, 1}},
    {"bool1", {kDLBool, 1, 1}},
    {"uint255", {kDLUInt, 255, 1}},
    {"handle", {kDLOpaqueHandle, 64, 1}},
    {"void", dtype::Void},
};

TEST(DataTypeTest, DLPackCodes) {
  // DLPack 1.1's values (dlpack_compat.h supplies them over DLPack 0.6).
  EXPECT_EQ(kDLFloat8_e3m4, 7);
  EXPECT_EQ(kDLFloat8_e4m3fn, 10);
  EXPECT_EQ(kDLFloat8_e8m0fnu, 14);
  EXPECT_EQ(kDLFloat6_e2m3fn, 15);
  EXPECT_EQ(kDLFloat4_e2m1fn, 17);
}

TEST(DataTypeTest, OtherSpellingsReadAsTVMReadsThem) {
  EXPECT_EQ(parseDType("bool8"), dtype::Bool);
  EXPECT_EQ(parseDType("bool8x4"), (DLDataType{kDLBool, 8, 4}));
  EXPECT_EQ(parseDType("float32x1"), dtype::Float32);
  EXPECT_EQ(parseDType("float32x65532"), (DLDataType{kDLFloat, 32, 0xFFFC}));
}

TEST(DataTypeTest, UnnamedTypesGetATextThatDoesNotParse) {
  for (DLDataType T : {DLDataType{kDLFloat8_e4m3fn, 16, 1},
                       DLDataType{kDLInt, 0, 1}, DLDataType{5, 64, 1},
                       DLDataType{200, 8, 1}, DLDataType{kDLInt, 8, 0}}) {
    SCOPED_TRACE(dtypeName(T));
    EXPECT_NE(parseDType(dtypeName(T)), T);
    EXPECT_FALSE(isTensorElementDType(T));
  }
  EXPECT_EQ(dtypeName(DLDataType{5, 64, 1}), "code5_64");
}

TEST(DataTypeTest, TensorElementTypes) {
  EXPECT_TRUE(isTensorElementDType(dtype::Int4));
  EXPECT_TRUE(isTensorElementDType(dtype::Float8E4M3FN));
  EXPECT_TRUE(isTensorElementDType(DLDataType{kDLFloat, 32, 2}));
  EXPECT_FALSE(isTensorElementDType(dtype::Void));
  EXPECT_FALSE(isTensorElementDType(DLDataType{kDLOpaqueHandle, 64, 1}));
  EXPECT_FALSE(isTensorElementDType(DLDataType{kDLFloat, 32, 0xFFFC}));
}

TEST(DataTypeTest, TensorBytesPackSubByteTypes) {
  // tvm-ffi's GetDataSize: (elements * bits * lanes + 7) / 8.
  EXPECT_EQ(tensorDataBytes(3, dtype::Int4), 2u);
  EXPECT_EQ(tensorDataBytes(10, DLDataType{kDLUInt, 1, 1}), 2u);
  EXPECT_EQ(tensorDataBytes(4, DLDataType{kDLFloat6_e2m3fn, 6, 1}), 3u);
  EXPECT_EQ(tensorDataBytes(5, dtype::Float4E2M1FN), 3u);
  EXPECT_EQ(tensorDataBytes(3, dtype::Float8E4M3FN), 3u);
  EXPECT_EQ(tensorDataBytes(3, DLDataType{kDLFloat, 32, 2}), 24u);
  EXPECT_EQ(tensorDataBytes(3, dtype::Float32), 12u);
  // TVM's SaveDLTensor: elements * ((bits + 7) / 8), lanes not counted.
  EXPECT_EQ(tvmSavedBytes(3, dtype::Int4), 3u);
  EXPECT_EQ(tvmSavedBytes(3, DLDataType{kDLFloat, 32, 2}), 12u);
  EXPECT_EQ(tvmSavedBytes(3, dtype::Float8E5M2), 3u);
  EXPECT_TRUE(isByteAligned(dtype::Float8E5M2));
  EXPECT_FALSE(isByteAligned(dtype::Int4));
}

TEST(DataTypeTest, NamesRoundTrip) {
  for (const NamedType &T : KnownTypes) {
    SCOPED_TRACE(T.Name);
    EXPECT_EQ(dtypeName(T.Type), T.Name);
    std::optional<DLDataType> Parsed = parseDType(T.Name);
    ASSERT_TRUE(Parsed.has_value());
    EXPECT_EQ(Parsed->code, T.Type.code);
    EXPECT_EQ(Parsed->bits, T.Type.bits);
    EXPECT_EQ(Parsed->lanes, T.Type.lanes);
    if (T.Type.code != kDLOpaqueHandle && !isScalableVector(T.Type)) {
      EXPECT_TRUE(isTensorElementDType(T.Type));
    }
  }
}

TEST(DataTypeTest, UIntIsNotReadAsInt) {
  std::optional<DLDataType> T = parseDType("uint32");
  ASSERT_TRUE(T.has_value());
  EXPECT_EQ(T->code, kDLUInt);
}

TEST(DataTypeTest, BoolIsDLPackOneCode) {
  EXPECT_EQ(dtype::Bool.code, 6);
  EXPECT_EQ(dtype::Bool.bits, 8);
}

TEST(DataTypeTest, RejectsMalformedNames) {
  for (const char *Bad : {"int",
                          "",
                          "floatx",
                          "float32x",
                          "float32x0",
                          "int32 ",
                          "Float32",
                          "x4",
                          "int0",
                          "int08",
                          "int256",
                          "float8_e4m3fnu",
                          "float8_e4m3fnuzz",
                          "float8_e4m3fn16",
                          "float4_e2m1",
                          "float6_",
                          "float32xvscalex1",
                          "float32xvscalex32769",
                          "float32x65536",
                          "float32x04",
                          "voidx2",
                          "handle64",
                          "i32",
                          "f8_e4m3fn"}) {
    SCOPED_TRACE(Bad);
    EXPECT_FALSE(parseDType(Bad).has_value());
  }
}

TEST(DataTypeTest, ElementBytes) {
  EXPECT_EQ(dtypeBytes(dtype::Float32), 4u);
  EXPECT_EQ(dtypeBytes(dtype::Bool), 1u);
  EXPECT_EQ(dtypeBytes(dtype::BFloat16), 2u);
  EXPECT_EQ(dtypeBytes(DLDataType{kDLFloat, 32, 4}), 16u);
}

TEST(DataTypeTest, Equality) {
  EXPECT_TRUE(dtype::Float32 == DLDataType({kDLFloat, 32, 1}));
  EXPECT_TRUE(dtype::Float32 != dtype::Int32);
  EXPECT_TRUE(dtype::Float32 != DLDataType({kDLFloat, 32, 2}));
}

} // namespace

namespace {

TEST(DataTypeTest, TensorElementCountIsTheOneRuleForShapes) {
  const DLDataType F32 = dtype::Float32;
  const int64_t Max = static_cast<int64_t>(maxTensorElements(F32));
  auto Count = [&](std::vector<int64_t> Dims) {
    return tensorElementCount(Dims, F32);
  };
  EXPECT_EQ(Count({}), 1u);
  EXPECT_EQ(Count({2, 3, 4}), 24u);
  EXPECT_EQ(Count({0}), 0u);
  EXPECT_EQ(Count({5, 0, 7}), 0u);
  EXPECT_EQ(Count({Max}), static_cast<uint64_t>(Max));
  EXPECT_EQ(Count({Max + 1}), std::nullopt);
  EXPECT_EQ(Count({-1}), std::nullopt);
  EXPECT_EQ(Count({3, -1, 0}), std::nullopt);
  // A zero dimension does not excuse the others: the fuzz finding's
  // [2^58, 0] (zero elements, but strides that do not fit) is refused, in
  // either order, as is a product that overflows 64 bits before a zero.
  EXPECT_EQ(Count({int64_t(1) << 58, 0}), std::nullopt);
  EXPECT_EQ(Count({0, int64_t(1) << 58}), std::nullopt);
  EXPECT_EQ(Count({int64_t(1) << 40, int64_t(1) << 40, 0}), std::nullopt);
  EXPECT_EQ(Count({int64_t(1) << 20, 0, int64_t(1) << 20}), 0u);
}

} // namespace
