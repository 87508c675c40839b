//===- vmjit/text/literals.h - Number literals of vmasm ---------*- C++ -*-===//
//
// The one reader of number text: integers (decimal or 0x hex, optionally
// signed, the whole uint64 range), floats in every width vmasm has
// (decimal or hex, inf, infinity, nan; float16 and bfloat16 rounded to
// nearest, ties to even) and tensor elements of any vmasm dtype. The
// assembler and `vmjit run`'s argument reader both use it, so a number
// the one accepts the other accepts too.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TEXT_LITERALS_H
#define VMJIT_TEXT_LITERALS_H

#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/tensor.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vmjit::vm {

/// An integer literal: sign and magnitude, so that the whole uint64 range
/// (for uint64 tensors) and INT64_MIN are both representable.
struct IntLit {
  bool Neg = false;
  uint64_t Mag = 0;
};

/// Parses `[+-](digits | 0x hexdigits)`. nullopt if `Text` is not an
/// integer literal; `TooLarge` is set (and a value returned) if it is one
/// whose magnitude does not fit in 64 bits.
std::optional<IntLit> parseIntLit(std::string_view Text, bool &TooLarge);

/// The literal as an int64; nullopt if it does not fit.
std::optional<int64_t> toInt64(IntLit L);

using vmjit::FloatFormat;

/// The formats of C++'s double and float.
inline constexpr FloatFormat kFloat64{11, 52, "float64"};
inline constexpr FloatFormat kFloat32{8, 23, "float32"};

/// The format of a float dtype of the table (float16, bfloat16, float32,
/// float64); nullptr for other dtypes.
const FloatFormat *floatFormatOf(DLDataType T);

/// Rounds a non-NaN double to the nearest value (ties to even) of a format
/// narrower than float32's significand, returning its bits.
uint64_t roundToFormat(double D, const FloatFormat &F);

/// The value of the bits `Bits` of a format no wider than float32 (float16,
/// bfloat16), exactly; infinities and NaNs as such.
float narrowFloatValue(uint64_t Bits, const FloatFormat &F);

/// The element types whose values vmasm tensor constants write as numbers
/// (and `vmjit run` tensor arguments and npy files take): the dtypes of
/// the table (dtype_traits.h): one lane of bool (8 bits), int/uint 8..64,
/// float 16/32/64 or bfloat16. Tensors of the other element types
/// (isTensorElementDType) are written as `hex "..."`.
inline bool isVmasmTensorDType(DLDataType T) { return findDType(T) != nullptr; }

/// Those dtypes as messages list them, runs of integer widths shortened:
/// "bool, int8..int64, uint8..uint64, float16, bfloat16, float32" then
/// `LastSep` (", ", " and ") and "float64".
std::string vmasmTensorDTypeList(std::string_view LastSep);

/// What reading a literal gave.
enum class LiteralStatus { Ok, Invalid, OutOfRange };

struct LiteralBits {
  LiteralStatus Status = LiteralStatus::Invalid;
  uint64_t Bits = 0; // little-endian element bits when Ok
};

/// Reads a float literal into the bits of `F`: C syntax (decimal or hex),
/// inf, infinity and nan in any case, optionally signed. A finite value
/// that rounds to infinity or (non-zero) to zero is OutOfRange.
LiteralBits parseFloatLiteral(std::string_view Text, const FloatFormat &F);

/// Reads one tensor element of dtype `T` (a vmasm tensor dtype): bool as
/// true, false or an integer 0..255; int and uint as integer literals in
/// the dtype's range; floats as parseFloatLiteral.
LiteralBits parseElementLiteral(std::string_view Text, DLDataType T);

/// The value of a hex digit in either case (0-15); -1 for any other
/// character. The one reading of a hex digit: integer literals, `hex "..."`
/// tensor data and the assembler's `\xHH` string escapes.
int hexDigitValue(char C) noexcept;

/// Bytes as lowercase hex digits, two per byte: the data of a vmasm tensor
/// constant written `hex "..."` (the form of the types whose elements vmasm
/// has no literals for: int4, float8_e4m3fn, float32x2, ...).
std::string toHexDigits(const void *Data, size_t Size);

/// The bytes of `Text`, pairs of hex digits in either case; nullopt if
/// `Text` is anything else (an odd count, another character).
std::optional<std::string> fromHexDigits(std::string_view Text);

/// A tensor of `DT` and shape `Dims` whose bytes (tensorDataBytes of them)
/// are the hex digits `Hex`. On a mistake, an empty tensor and `Error` set
/// to what is wrong ("tensor int4 [3] has 2 bytes (4 hex digits), not 3").
Tensor tensorFromHex(std::string_view Hex, DLDataType DT,
                     std::span<const int64_t> Dims, std::string &Error);

} // namespace vmjit::vm

#endif // VMJIT_TEXT_LITERALS_H
