//===- DataTypeTest.cpp - Data type names and their parser ----------------===//

#include "vmjit/runtime/data_type.h"

#include <gtest/gtest.h>

using namespace vmjit;

namespace {

struct NamedType {
  const char *Name;
  DLDataType Type;
};

const NamedType KnownTypes[] = {
    {"int8", dtype::Int8},        {"int16", dtype::Int16},
    {"int32", dtype::Int32},      {"int64", dtype::Int64},
    {"uint8", dtype::UInt8},      {"uint16", dtype::UInt16},
    {"uint32", dtype::UInt32},    {"uint64", dtype::UInt64},
    {"float16", dtype::Float16},  {"float32", dtype::Float32},
    {"float64", dtype::Float64},  {"bfloat16", dtype::BFloat16},
    {"bool", dtype::Bool},        {"float32x4", {kDLFloat, 32, 4}},
    {"int8x16", {kDLInt, 8, 16}},
};

TEST(DataTypeTest, NamesRoundTrip) {
  for (const NamedType &T : KnownTypes) {
    SCOPED_TRACE(T.Name);
    EXPECT_EQ(dtypeName(T.Type), T.Name);
    std::optional<DLDataType> Parsed = parseDType(T.Name);
    ASSERT_TRUE(Parsed.has_value());
    EXPECT_EQ(Parsed->code, T.Type.code);
    EXPECT_EQ(Parsed->bits, T.Type.bits);
    EXPECT_EQ(Parsed->lanes, T.Type.lanes);
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
  for (const char *Bad :
       {"float7", "int", "", "floatx", "float32x", "float32x0", "int32 ",
        "bfloat32", "int12", "Float32", "x4"}) {
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
