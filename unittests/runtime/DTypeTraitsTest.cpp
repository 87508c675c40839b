//===- DTypeTraitsTest.cpp - The table of dtypes --------------------------===//
//
// Every row round-trips through each of its keys (name, DLPack type, NumPy
// descr and type number, buffer characters), the lookups accept what the
// switches they replaced accepted, and visitDType agrees with the table.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/dtype_traits.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

using namespace vmjit;

namespace {

const DTypeTraits &row(DLDataType T) {
  const DTypeTraits *R = findDType(T);
  EXPECT_NE(R, nullptr) << dtypeName(T);
  return *R;
}

TEST(DTypeTraitsTest, NamesRoundTrip) {
  ASSERT_FALSE(dtypeTable().empty());
  for (const DTypeTraits &R : dtypeTable()) {
    SCOPED_TRACE(std::string(R.Name));
    EXPECT_EQ(R.Type.lanes, 1);
    EXPECT_EQ(dtypeName(R.Type), R.Name);
    EXPECT_EQ(parseDType(R.Name), R.Type);
    EXPECT_TRUE(isTensorElementDType(R.Type));
    EXPECT_TRUE(isByteAligned(R.Type));
    EXPECT_EQ(findDType(R.Type), &R);
    EXPECT_EQ(findDTypeByName(R.Name), &R);
  }
}

TEST(DTypeTraitsTest, NumpyDescrsRoundTrip) {
  for (const DTypeTraits &R : dtypeTable()) {
    SCOPED_TRACE(std::string(R.Name));
    if (R.NumpyDescr.empty()) {
      EXPECT_EQ(R.NumpyTypeNum, -1);
      continue;
    }
    ASSERT_GE(R.NumpyDescr.size(), 3u);
    // '|' for one byte (no byte order), little-endian '<' for the others.
    EXPECT_EQ(R.NumpyDescr[0], R.bytes() == 1 ? '|' : '<');
    const size_t Bytes = std::stoul(std::string(R.NumpyDescr.substr(2)));
    EXPECT_EQ(Bytes, R.bytes());
    EXPECT_EQ(findDTypeByNumpyKind(R.NumpyDescr[1], Bytes), &R);
    EXPECT_EQ(findDTypeByNumpyTypeNum(R.NumpyTypeNum), &R);
  }
}

TEST(DTypeTraitsTest, BufferCharsRoundTrip) {
  for (const DTypeTraits &R : dtypeTable()) {
    SCOPED_TRACE(std::string(R.Name));
    if (!R.BufferFormat) {
      EXPECT_TRUE(R.BufferAliases.empty());
      continue;
    }
    ASSERT_EQ(std::string(R.BufferFormat).size(), 1u);
    EXPECT_EQ(findDTypeByBufferChar(R.BufferFormat[0], R.bytes()), &R);
    for (char C : R.BufferAliases)
      EXPECT_EQ(findDTypeByBufferChar(C, R.bytes()), &R);
  }
}

TEST(DTypeTraitsTest, FloatFormatsMatchTheirRows) {
  for (const DTypeTraits &R : dtypeTable()) {
    SCOPED_TRACE(std::string(R.Name));
    if (R.Literal != LiteralKind::Float) {
      EXPECT_EQ(R.Float.ExpBits, 0);
      continue;
    }
    EXPECT_EQ(R.Float.Name, R.Name);
    EXPECT_EQ(1 + R.Float.ExpBits + R.Float.MantBits, R.Type.bits);
  }
}

TEST(DTypeTraitsTest, TheRowsAreTheVmasmNumberDTypes) {
  const DLDataType Expected[] = {
      dtype::Bool,   dtype::Int8,    dtype::Int16,    dtype::Int32,
      dtype::Int64,  dtype::UInt8,   dtype::UInt16,   dtype::UInt32,
      dtype::UInt64, dtype::Float16, dtype::BFloat16, dtype::Float32,
      dtype::Float64};
  for (DLDataType T : Expected)
    EXPECT_NE(findDType(T), nullptr) << dtypeName(T);
}

TEST(DTypeTraitsTest, LookupsAcceptWhatTheOldSwitchesDid) {
  // Names: TVM's spellings, and none for the types outside the table.
  EXPECT_EQ(findDTypeByName("bool8"), &row(dtype::Bool));
  EXPECT_EQ(findDTypeByName("bfloat16"), &row(dtype::BFloat16));
  for (const char *Other :
       {"int4", "float8_e4m3fn", "float32x4", "handle", "void", "int", "x"})
    EXPECT_EQ(findDTypeByName(Other), nullptr) << Other;
  // NumPy: kinds b, i, u, f of the usual sizes; no bfloat16, no int24.
  EXPECT_EQ(findDTypeByNumpyKind('b', 1), &row(dtype::Bool));
  EXPECT_EQ(findDTypeByNumpyKind('u', 8), &row(dtype::UInt64));
  EXPECT_EQ(findDTypeByNumpyKind('f', 2), &row(dtype::Float16));
  EXPECT_EQ(findDTypeByNumpyKind('i', 3), nullptr);
  EXPECT_EQ(findDTypeByNumpyKind('c', 8), nullptr);
  // NPY_LONG and NPY_ULONG are C long; NPY_CFLOAT (14) has no row.
  const DLDataType Long = sizeof(long) == 8 ? dtype::Int64 : dtype::Int32;
  const DLDataType ULong = sizeof(long) == 8 ? dtype::UInt64 : dtype::UInt32;
  EXPECT_EQ(findDTypeByNumpyTypeNum(7), &row(Long));
  EXPECT_EQ(findDTypeByNumpyTypeNum(8), &row(ULong));
  EXPECT_EQ(findDTypeByNumpyTypeNum(14), nullptr);
  // Buffers: 'l' and 'L' are int64 and uint64 when 8 bytes wide only.
  EXPECT_EQ(findDTypeByBufferChar('l', 8), &row(dtype::Int64));
  EXPECT_EQ(findDTypeByBufferChar('L', 8), &row(dtype::UInt64));
  EXPECT_EQ(findDTypeByBufferChar('l', 4), nullptr);
  EXPECT_EQ(findDTypeByBufferChar('f', 8), nullptr);
  EXPECT_EQ(findDTypeByBufferChar('\0', 1), nullptr);
  EXPECT_STREQ(row(dtype::Int64).BufferFormat, "q");
  EXPECT_EQ(row(dtype::BFloat16).BufferFormat, nullptr);
}

TEST(DTypeTraitsTest, LoadElementBitsZeroExtends) {
  const int16_t Minus2 = -2;
  EXPECT_EQ(loadElementBits(&Minus2, row(dtype::Int16)), 0xfffeu);
  const double One = 1.0;
  EXPECT_EQ(loadElementBits(&One, row(dtype::Float64)), 0x3ff0000000000000u);
}

/// The row of dtype `D` as visitDType sees it: the size and kind of its
/// C++ type, or 0 for none.
size_t cppBytes(DLDataType D) {
  return visitDType(D, [&](auto Tag) -> size_t {
    using T = typename decltype(Tag)::Type;
    if constexpr (std::is_void_v<T>) {
      return 0;
    } else {
      const DTypeTraits &R = *findDType(D);
      const bool Float = std::is_floating_point_v<T>;
      const bool Signed = std::is_signed_v<T> && !Float;
      EXPECT_EQ(Float, R.Literal == LiteralKind::Float);
      EXPECT_EQ(Signed, R.Literal == LiteralKind::Signed);
      const bool Bool = std::is_same_v<T, bool>;
      EXPECT_EQ(Bool, R.Literal == LiteralKind::Bool);
      return sizeof(T);
    }
  });
}

TEST(DTypeTraitsTest, VisitDTypeAgreesWithTheTable) {
  for (const DTypeTraits &R : dtypeTable()) {
    SCOPED_TRACE(std::string(R.Name));
    const size_t Bytes = cppBytes(R.Type);
    if (Bytes) {
      EXPECT_EQ(Bytes, R.bytes());
    } else {
      // Only floats narrower than float32 (float16, bfloat16) have none.
      EXPECT_EQ(R.Literal, LiteralKind::Float);
      EXPECT_LT(R.Type.bits, 32);
    }
  }
  EXPECT_EQ(cppBytes(DLDataType{kDLFloat, 32, 4}), 0u);
  EXPECT_EQ(cppBytes(dtype::Int4), 0u);
  EXPECT_EQ(cppBytes(dtype::Void), 0u);
}

} // namespace
