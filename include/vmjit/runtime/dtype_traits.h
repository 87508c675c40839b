//===- vmjit/runtime/dtype_traits.h - One row per dtype ---------*- C++ -*-===//
//
// The one table of the dtypes whose elements vmjit reads and writes as
// numbers (bool, int8..int64, uint8..uint64, float16, bfloat16, float32,
// float64): a row per dtype with its name, DLPack type, vmasm literal
// form, NumPy descr and type number and buffer-protocol characters, with a
// lookup by each. visitDType is the one dispatch from a dtype to the C++
// type of its elements, for kernels that compute on them. A new dtype is a
// row in dtype_traits.cpp (and a line in CppElements if it has a C++
// type). The grammar of every TVM name (int12, float32x4, ...) stays in
// data_type.h.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_DTYPE_TRAITS_H
#define VMJIT_RUNTIME_DTYPE_TRAITS_H

#include "vmjit/runtime/data_type.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace vmjit {

/// A binary floating-point format with IEEE 754's layout (sign, biased
/// exponent, significand without its leading bit; all-ones exponent for
/// infinities and NaNs).
struct FloatFormat {
  int ExpBits;
  int MantBits;
  std::string_view Name;
  constexpr uint64_t signBit() const {
    return uint64_t(1) << (ExpBits + MantBits);
  }
  constexpr uint64_t expMask() const {
    return ((uint64_t(1) << ExpBits) - 1) << MantBits;
  }
  /// Whether `O` has the same bits (whatever its name).
  constexpr bool sameLayout(const FloatFormat &O) const {
    return ExpBits == O.ExpBits && MantBits == O.MantBits;
  }
};

/// How vmasm (and `vmjit run`, the JSON of values) writes an element.
enum class LiteralKind : uint8_t {
  Bool,     ///< true, false or an integer 0..255
  Signed,   ///< an integer in the two's complement range of the bits
  Unsigned, ///< an integer in 0 .. 2^bits - 1
  Float,    ///< a float literal rounded to the row's FloatFormat
};

/// One dtype: everything the readers and writers of its elements need.
struct DTypeTraits {
  std::string_view Name; ///< as dtypeName prints it: "float32"
  DLDataType Type;       ///< one lane
  LiteralKind Literal;
  FloatFormat Float;           ///< for LiteralKind::Float; else {0, 0, ""}
  std::string_view NumpyDescr; ///< "<f4", "|b1"; empty: NumPy has none
  int NumpyTypeNum;            ///< NPY_FLOAT (11), ...; -1: none
  /// The buffer protocol's (struct module's) format a buffer of it is
  /// exported with ("f"); nullptr: none.
  const char *BufferFormat;
  /// More format characters read as this dtype ("l" for int64); "": none.
  std::string_view BufferAliases;
  /// Bytes of one element.
  constexpr size_t bytes() const { return dtypeBytes(Type); }
};

/// Every row, in a fixed order.
VMJIT_DLL std::span<const DTypeTraits> dtypeTable();

/// The row of `T` (lanes included); nullptr for a dtype not in the table
/// (int4, float8_e4m3fn, float32x2, handle...).
VMJIT_DLL const DTypeTraits *findDType(DLDataType T);

/// The row of the dtype `Name` names, in any spelling parseDType reads
/// ("bool8" is bool); nullptr if none.
VMJIT_DLL const DTypeTraits *findDTypeByName(std::string_view Name);

/// The row whose NumPy descr has kind `Kind` ('b', 'i', 'u', 'f') and
/// item size `Bytes` ("<i2": 'i', 2), whatever its byte-order character;
/// nullptr if none.
VMJIT_DLL const DTypeTraits *findDTypeByNumpyKind(char Kind, size_t Bytes);

/// The row of NumPy type number `TypeNum`; NPY_LONG (7) and NPY_ULONG (8)
/// are the row of the same kind as wide as this host's C long. nullptr if
/// none.
VMJIT_DLL const DTypeTraits *findDTypeByNumpyTypeNum(int TypeNum);

/// The row with buffer-protocol (struct module) format character `C` and
/// elements of `ItemSize` bytes; nullptr if none.
VMJIT_DLL const DTypeTraits *findDTypeByBufferChar(char C, size_t ItemSize);

/// The bits of the element at `P` of row `R` (host order), zero-extended.
VMJIT_DLL uint64_t loadElementBits(const void *P, const DTypeTraits &R);

//===----------------------------------------------------------------------===//
// The C++ types of the elements.
//===----------------------------------------------------------------------===//

/// A dtype whose elements are the C++ type `T`.
template <uint8_t Code, uint8_t Bits, typename T> struct CppElement {
  using Type = T;
  static constexpr DLDataType DType{Code, Bits, 1};
};

/// What visitDType passes: `typename decltype(Tag)::Type` is the C++ type
/// of the elements, void for a dtype that has none.
template <typename T> struct DTypeTag { using Type = T; };

namespace detail {
template <typename... Rows> struct CppElementList {};

/// Every dtype with a C++ element type, one line each.
using CppElements = CppElementList<
    CppElement<kDLBool, 8, bool>, CppElement<kDLInt, 8, int8_t>,
    CppElement<kDLInt, 16, int16_t>, CppElement<kDLInt, 32, int32_t>,
    CppElement<kDLInt, 64, int64_t>, CppElement<kDLUInt, 8, uint8_t>,
    CppElement<kDLUInt, 16, uint16_t>, CppElement<kDLUInt, 32, uint32_t>,
    CppElement<kDLUInt, 64, uint64_t>, CppElement<kDLFloat, 32, float>,
    CppElement<kDLFloat, 64, double>>;

template <typename F, typename Row, typename... Rest>
decltype(auto) visitCppElement(DLDataType T, F &Body) {
  if (T == Row::DType)
    return Body(DTypeTag<typename Row::Type>{});
  if constexpr (sizeof...(Rest) > 0)
    return visitCppElement<F, Rest...>(T, Body);
  else
    return Body(DTypeTag<void>{});
}

template <typename F, typename... Rows>
decltype(auto) visitCppElements(CppElementList<Rows...>, DLDataType T,
                                F &Body) {
  return visitCppElement<F, Rows...>(T, Body);
}
} // namespace detail

/// Calls `Body(DTypeTag<T>{})` with T the C++ type of the elements of `D`
/// (one lane of bool, int8..int64, uint8..uint64, float32 or float64), or
/// with DTypeTag<void> for any other dtype; returns what Body returns.
/// Every call of Body must return the same type.
template <typename F> decltype(auto) visitDType(DLDataType D, F &&Body) {
  return detail::visitCppElements(detail::CppElements{}, D, Body);
}

} // namespace vmjit

#endif // VMJIT_RUNTIME_DTYPE_TRAITS_H
