//===- vmjit/runtime/data_type.h - DLPack data types by name -----*- C++ -*-===//
//
// Names of DLPack data types as TVM and NumPy write them ("float32",
// "int64", "bool", "bfloat16", "float32x4") and the reverse parse.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_DATA_TYPE_H
#define VMJIT_RUNTIME_DATA_TYPE_H

#include "vmjit/runtime/c_api.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

/// DLDataType is a C struct in the global namespace; its comparisons live
/// there too so that generic code (std::find, gtest) finds them.
inline constexpr bool operator==(DLDataType A, DLDataType B) {
  return A.code == B.code && A.bits == B.bits && A.lanes == B.lanes;
}
inline constexpr bool operator!=(DLDataType A, DLDataType B) {
  return !(A == B);
}

namespace vmjit {

/// The usual DLPack data types.
namespace dtype {
inline constexpr DLDataType make(uint8_t Code, uint8_t Bits) {
  return DLDataType{Code, Bits, 1};
}
inline constexpr DLDataType Bool = make(kDLBool, 8);
inline constexpr DLDataType Int8 = make(kDLInt, 8);
inline constexpr DLDataType Int16 = make(kDLInt, 16);
inline constexpr DLDataType Int32 = make(kDLInt, 32);
inline constexpr DLDataType Int64 = make(kDLInt, 64);
inline constexpr DLDataType UInt8 = make(kDLUInt, 8);
inline constexpr DLDataType UInt16 = make(kDLUInt, 16);
inline constexpr DLDataType UInt32 = make(kDLUInt, 32);
inline constexpr DLDataType UInt64 = make(kDLUInt, 64);
inline constexpr DLDataType Float16 = make(kDLFloat, 16);
inline constexpr DLDataType BFloat16 = make(kDLBfloat, 16);
inline constexpr DLDataType Float32 = make(kDLFloat, 32);
inline constexpr DLDataType Float64 = make(kDLFloat, 64);
} // namespace dtype


/// Bytes one element of `T` takes (bits rounded up, times lanes).
inline constexpr size_t dtypeBytes(DLDataType T) {
  return (size_t(T.bits) * T.lanes + 7) / 8;
}

/// "float32", "int64", "bool", "float32x4", ...
VMJIT_DLL std::string dtypeName(DLDataType T);

/// Parses a name written by dtypeName; nullopt if it is not one.
VMJIT_DLL std::optional<DLDataType> parseDType(std::string_view Name);

} // namespace vmjit

#endif // VMJIT_RUNTIME_DATA_TYPE_H
