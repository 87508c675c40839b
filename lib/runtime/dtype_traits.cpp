//===- dtype_traits.cpp - The table of dtypes -----------------------------===//
//
// One row per dtype vmjit reads and writes as numbers, and the lookups by
// each of its keys.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/dtype_traits.h"

#include <cstring>

namespace vmjit {
namespace {

constexpr FloatFormat kNotFloat{0, 0, ""};
constexpr LiteralKind kBool = LiteralKind::Bool;
constexpr LiteralKind kSigned = LiteralKind::Signed;
constexpr LiteralKind kUnsigned = LiteralKind::Unsigned;
constexpr LiteralKind kFloat = LiteralKind::Float;

// NumPy's type numbers (NPY_BOOL, ...) and buffer characters are those of
// its public headers and of Python's struct module; 'l' and 'L' are what
// NumPy gives for int64 and uint64 on LP64 hosts.
// clang-format off
constexpr DTypeTraits kTable[] = {
    // Name, Type, Literal, Float, NumpyDescr, NumpyTypeNum, BufferFormat and
    // BufferAliases
    {"bool", dtype::Bool, kBool, kNotFloat, "|b1", 0, "?", ""},
    {"int8", dtype::Int8, kSigned, kNotFloat, "|i1", 1, "b", ""},
    {"int16", dtype::Int16, kSigned, kNotFloat, "<i2", 3, "h", ""},
    {"int32", dtype::Int32, kSigned, kNotFloat, "<i4", 5, "i", ""},
    {"int64", dtype::Int64, kSigned, kNotFloat, "<i8", 9, "q", "l"},
    {"uint8", dtype::UInt8, kUnsigned, kNotFloat, "|u1", 2, "B", ""},
    {"uint16", dtype::UInt16, kUnsigned, kNotFloat, "<u2", 4, "H", ""},
    {"uint32", dtype::UInt32, kUnsigned, kNotFloat, "<u4", 6, "I", ""},
    {"uint64", dtype::UInt64, kUnsigned, kNotFloat, "<u8", 10, "Q", "L"},
    {"float16", dtype::Float16, kFloat, {5, 10, "float16"}, "<f2", 23, "e", ""},
    {"bfloat16", dtype::BFloat16, kFloat, {8, 7, "bfloat16"}, "", -1, nullptr, ""},
    {"float32", dtype::Float32, kFloat, {8, 23, "float32"}, "<f4", 11, "f", ""},
    {"float64", dtype::Float64, kFloat, {11, 52, "float64"}, "<f8", 12, "d", ""},
};
// clang-format on

// NumPy's NPY_LONG and NPY_ULONG: C long, whose width varies.
constexpr int kNpyLong = 7;
constexpr int kNpyULong = 8;

/// The first row for which `Match` holds, or nullptr.
template <typename P> const DTypeTraits *findRow(P Match) {
  for (const DTypeTraits &R : kTable)
    if (Match(R))
      return &R;
  return nullptr;
}

} // namespace

std::span<const DTypeTraits> dtypeTable() { return kTable; }

const DTypeTraits *findDType(DLDataType T) {
  return findRow([&](const DTypeTraits &R) { return R.Type == T; });
}

const DTypeTraits *findDTypeByName(std::string_view Name) {
  std::optional<DLDataType> T = parseDType(Name);
  return T ? findDType(*T) : nullptr;
}

const DTypeTraits *findDTypeByNumpyKind(char Kind, size_t Bytes) {
  return findRow([&](const DTypeTraits &R) {
    return !R.NumpyDescr.empty() && R.NumpyDescr[1] == Kind &&
           R.bytes() == Bytes;
  });
}

const DTypeTraits *findDTypeByNumpyTypeNum(int TypeNum) {
  if (TypeNum == kNpyLong || TypeNum == kNpyULong) {
    const char Kind = TypeNum == kNpyLong ? 'i' : 'u';
    return findDTypeByNumpyKind(Kind, sizeof(long));
  }
  return findRow(
      [&](const DTypeTraits &R) { return R.NumpyTypeNum == TypeNum; });
}

const DTypeTraits *findDTypeByBufferChar(char C, size_t ItemSize) {
  return findRow([&](const DTypeTraits &R) {
    const bool Named = (R.BufferFormat && R.BufferFormat[0] == C) ||
                       R.BufferAliases.find(C) != std::string_view::npos;
    return C && Named && R.bytes() == ItemSize;
  });
}

uint64_t loadElementBits(const void *P, const DTypeTraits &R) {
  switch (R.bytes()) {
  case 1:
    return *static_cast<const uint8_t *>(P);
  case 2: {
    uint16_t V;
    std::memcpy(&V, P, 2);
    return V;
  }
  case 4: {
    uint32_t V;
    std::memcpy(&V, P, 4);
    return V;
  }
  default: {
    uint64_t V;
    std::memcpy(&V, P, 8);
    return V;
  }
  }
}

} // namespace vmjit
