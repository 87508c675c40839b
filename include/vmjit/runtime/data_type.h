//===- vmjit/runtime/data_type.h - DLPack data types by name -----*- C++ -*-===//
//
// Names of DLPack data types as TVM writes them ("float32", "int64",
// "bool", "bfloat16", "float32x4", "int4", "float8_e4m3fn",
// "float4_e2m1fn", "float32xvscalex4", "void") and the reverse parse, and
// the byte sizes of their elements and tensors (sub-byte types packed).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_DATA_TYPE_H
#define VMJIT_RUNTIME_DATA_TYPE_H

#include "vmjit/runtime/c_api.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
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
inline constexpr DLDataType Int4 = make(kDLInt, 4);
inline constexpr DLDataType UInt4 = make(kDLUInt, 4);
inline constexpr DLDataType Float8E4M3FN = make(kDLFloat8_e4m3fn, 8);
inline constexpr DLDataType Float8E5M2 = make(kDLFloat8_e5m2, 8);
inline constexpr DLDataType Float4E2M1FN = make(kDLFloat4_e2m1fn, 4);
/// TVM's void type (handle, 0 bits, 0 lanes), named "void".
inline constexpr DLDataType Void = DLDataType{kDLOpaqueHandle, 0, 0};
} // namespace dtype

/// Bytes one element of `T` takes on its own (bits times lanes, rounded
/// up). For a tensor use tensorDataBytes, which packs sub-byte elements.
inline constexpr size_t dtypeBytes(DLDataType T) {
  return (size_t(T.bits) * T.lanes + 7) / 8;
}

/// True when every element of `T` fills whole bytes (bits a multiple of 8),
/// so that element I of a compact tensor starts at byte I * dtypeBytes(T).
/// False for the packed types: int4, uint1, float6_e2m3fn, float4_e2m1fn...
inline constexpr bool isByteAligned(DLDataType T) {
  return T.bits != 0 && T.bits % 8 == 0;
}

/// Bytes of a compact tensor of `Elems` elements of `T`, as DLPack and TVM
/// (tvm-ffi's GetDataSize) lay it out: the bits of all elements and lanes
/// back to back, rounded up to a byte. Equals Elems * dtypeBytes(T) for a
/// byte-aligned type. The caller keeps Elems * bits * lanes below 2^64.
inline constexpr uint64_t tensorDataBytes(uint64_t Elems, DLDataType T) {
  return (Elems * (uint64_t(T.bits) * T.lanes) + 7) / 8;
}

/// The largest element count whose tensorDataBytes stays below 2^63 (so
/// sizes fit an int64_t as well); callers refuse larger tensors.
inline constexpr uint64_t maxTensorElements(DLDataType T) {
  uint64_t BitsPerElem = uint64_t(T.bits) * T.lanes;
  return BitsPerElem == 0 ? UINT64_MAX : (UINT64_MAX / 2) / BitsPerElem;
}

/// The element count of a tensor of shape `Dims` and element type `T`, or
/// nullopt when no tensor has that shape: a negative dimension, or nonzero
/// dimensions whose product exceeds maxTensorElements(T). A zero dimension
/// does not excuse the others, so that the strides and byte offsets of
/// every accepted shape fit. The one rule for tensor shapes: the assembler,
/// the binary and TVM loaders and Tensor::empty all apply it.
inline constexpr std::optional<uint64_t>
tensorElementCount(std::span<const int64_t> Dims, DLDataType T) {
  const uint64_t Max = maxTensorElements(T);
  uint64_t NonZero = 1;
  bool HasZero = false;
  for (int64_t D : Dims) {
    if (D < 0)
      return std::nullopt;
    if (D == 0) {
      HasZero = true;
      continue;
    }
    if (NonZero > Max / uint64_t(D))
      return std::nullopt;
    NonZero *= uint64_t(D);
  }
  return HasZero ? 0 : NonZero;
}

/// True for the float8, float6 and float4 type codes of DLPack 1.1
/// (float8_e4m3fn, float4_e2m1fn, ...), whose names carry no bit count.
inline constexpr bool isMiniFloat(DLDataType T) {
  return T.code >= kDLFloat8_e3m4 && T.code <= kDLFloat4_e2m1fn;
}

/// True when the lanes field is a scalable vector (TVM's "xvscalexN": the
/// lanes, as an int16, are -N).
inline constexpr bool isScalableVector(DLDataType T) {
  return static_cast<int16_t>(T.lanes) < -1;
}

/// TVM's name of a type (tvm-ffi's DLDataTypeToString): "float32",
/// "int64", "bool", "boolx4", "float32x4", "int4", "uint1",
/// "float8_e4m3fn", "float6_e2m3fn", "float4_e2m1fn", "bfloat16",
/// "float32xvscalex4", "handle", "void". A type with no name (an unknown
/// code, 0 bits, float8_e4m3fn with other than 8 bits) gets a descriptive
/// text, such as "code5_64", that parseDType refuses.
VMJIT_DLL std::string dtypeName(DLDataType T);

/// Parses a name written by dtypeName, giving back exactly the type it
/// named; nullopt if it is not one. Also "bool8" and "bool8xN" (TVM reads
/// them as "bool" and "boolxN"). Bits: 1..255 for the codes whose name
/// carries them (int, uint, float, bfloat, bool), as TVM reads them; the
/// float8/6/4 formats their own width. Lanes: "xN" for 1..65535,
/// "xvscalexN" for 2..32768.
VMJIT_DLL std::optional<DLDataType> parseDType(std::string_view Name);

/// True when tensors of `T` can exist: a named type (dtypeName reads back
/// as `T`) with at least one bit, not a handle and not a scalable vector.
/// Every such type loads and saves; which ones kernels compute on is up
/// to each kernel.
VMJIT_DLL bool isTensorElementDType(DLDataType T);

/// The byte size TVM's writer (SaveDLTensor) records for, and writes of, a
/// tensor of `Elems` elements: Elems * ((bits + 7) / 8), whatever the
/// lanes. It is tensorDataBytes for one-lane byte-aligned types; a packed
/// sub-byte tensor is followed by bytes past its data, a vector tensor
/// is cut short.
inline constexpr uint64_t tvmSavedBytes(uint64_t Elems, DLDataType T) {
  return Elems * ((uint64_t(T.bits) + 7) / 8);
}

} // namespace vmjit

#endif // VMJIT_RUNTIME_DATA_TYPE_H
