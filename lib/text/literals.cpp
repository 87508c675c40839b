//===- literals.cpp - Number literals as vmasm writes them -----------------===//

#include "vmjit/text/literals.h"
#include "vmjit/runtime/shape.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <vector>

namespace vmjit::vm {
namespace {

bool equalsNoCase(std::string_view A, std::string_view B) {
  if (A.size() != B.size())
    return false;
  for (size_t I = 0; I < A.size(); ++I) {
    char X = A[I];
    if (X >= 'A' && X <= 'Z')
      X = static_cast<char>(X - 'A' + 'a');
    if (X != B[I])
      return false;
  }
  return true;
}

constexpr LiteralBits ok(uint64_t Bits) { return {LiteralStatus::Ok, Bits}; }
constexpr LiteralBits kInvalid{LiteralStatus::Invalid, 0};
constexpr LiteralBits kOutOfRange{LiteralStatus::OutOfRange, 0};

/// from_chars of all of `Body` into `V`.
template <typename T>
LiteralStatus readNumber(std::string_view Body, std::chars_format Format,
                         T &V) {
  const char *End = Body.data() + Body.size();
  auto [Ptr, Ec] = std::from_chars(Body.data(), End, V, Format);
  if (Ec == std::errc::invalid_argument || Ptr != End)
    return LiteralStatus::Invalid;
  if (Ec == std::errc::result_out_of_range)
    return LiteralStatus::OutOfRange;
  return LiteralStatus::Ok;
}

} // namespace

std::optional<IntLit> parseIntLit(std::string_view Text, bool &TooLarge) {
  TooLarge = false;
  IntLit L;
  if (!Text.empty() && (Text[0] == '+' || Text[0] == '-')) {
    L.Neg = Text[0] == '-';
    Text.remove_prefix(1);
  }
  int Base = 10;
  if (Text.size() > 2 && Text[0] == '0' && (Text[1] == 'x' || Text[1] == 'X')) {
    Base = 16;
    Text.remove_prefix(2);
  }
  if (Text.empty())
    return std::nullopt;
  for (char C : Text) {
    const int Digit = hexDigitValue(C);
    if (Digit < 0 || Digit >= Base)
      return std::nullopt;
  }
  auto [Ptr, Ec] =
      std::from_chars(Text.data(), Text.data() + Text.size(), L.Mag, Base);
  if (Ec == std::errc::result_out_of_range) {
    TooLarge = true;
    return L;
  }
  if (Ec != std::errc() || Ptr != Text.data() + Text.size())
    return std::nullopt;
  return L;
}

std::optional<int64_t> toInt64(IntLit L) {
  constexpr uint64_t MinMag = uint64_t(1) << 63;
  if (L.Neg) {
    if (L.Mag > MinMag)
      return std::nullopt;
    return static_cast<int64_t>(~L.Mag + 1); // two's complement negation
  }
  if (L.Mag >= MinMag)
    return std::nullopt;
  return static_cast<int64_t>(L.Mag);
}

const FloatFormat *floatFormatOf(DLDataType T) {
  const DTypeTraits *R = findDType(T);
  return R && R->Literal == LiteralKind::Float ? &R->Float : nullptr;
}

uint64_t roundToFormat(double D, const FloatFormat &F) {
  const uint64_t Sign = std::signbit(D) ? F.signBit() : 0;
  const double A = std::fabs(D);
  if (std::isinf(A))
    return Sign | F.expMask();
  if (A == 0)
    return Sign;
  const int Bias = (1 << (F.ExpBits - 1)) - 1;
  const int MinExp = 1 - Bias; // of the smallest normal number
  int E2 = 0;
  std::frexp(A, &E2);
  const int Exp = E2 - 1; // A = 1.m * 2^Exp
  if (Exp + Bias >= (1 << F.ExpBits) - 1)
    return Sign | F.expMask();
  // The significand in units of the format's ulp at this exponent; the
  // scaling by a power of two is exact, rint rounds ties to even.
  const int Quantum = std::max(Exp, MinExp) - F.MantBits;
  const auto N = static_cast<uint64_t>(std::rint(std::ldexp(A, -Quantum)));
  uint64_t Bits = Exp >= MinExp ? (uint64_t(Exp + Bias) << F.MantBits) +
                                      (N - (uint64_t(1) << F.MantBits))
                                : N; // a subnormal (or the smallest normal)
  if (Bits >= F.expMask())
    return Sign | F.expMask();
  return Sign | Bits;
}

float narrowFloatValue(uint64_t Bits, const FloatFormat &F) {
  const uint64_t ExpMax = (uint64_t(1) << F.ExpBits) - 1;
  const uint64_t Exp = (Bits >> F.MantBits) & ExpMax;
  const uint64_t Mant = Bits & ((uint64_t(1) << F.MantBits) - 1);
  float V;
  if (Exp == ExpMax) {
    V = Mant ? NAN : INFINITY;
  } else {
    const int Bias = (1 << (F.ExpBits - 1)) - 1;
    // Scaling by a power of two is exact for every format up to float32's.
    V = Exp == 0
            ? std::ldexp(static_cast<float>(Mant), 1 - Bias - F.MantBits)
            : std::ldexp(static_cast<float>(Mant | (uint64_t(1) << F.MantBits)),
                         static_cast<int>(Exp) - Bias - F.MantBits);
  }
  return (Bits & F.signBit()) ? -V : V;
}

LiteralBits parseFloatLiteral(std::string_view S, const FloatFormat &F) {
  if (S.empty())
    return kInvalid;
  bool Neg = false;
  if (S[0] == '+' || S[0] == '-') {
    Neg = S[0] == '-';
    S.remove_prefix(1);
  }
  const uint64_t Sign = Neg ? F.signBit() : 0;
  if (equalsNoCase(S, "inf") || equalsNoCase(S, "infinity"))
    return ok(Sign | F.expMask());
  if (equalsNoCase(S, "nan")) // the default quiet NaN
    return ok(Sign | F.expMask() | (uint64_t(1) << (F.MantBits - 1)));
  const bool Hex = S.size() > 2 && S[0] == '0' && (S[1] == 'x' || S[1] == 'X');
  std::string_view Body = Hex ? S.substr(2) : S;
  if (Body.empty() || Body[0] == '+' || Body[0] == '-')
    return kInvalid;
  const auto Format = Hex ? std::chars_format::hex : std::chars_format::general;
  // float32 is read as float32 (not rounded twice through a double).
  if (F.MantBits == kFloat32.MantBits && F.ExpBits == kFloat32.ExpBits) {
    float V = 0;
    if (LiteralStatus St = readNumber(Body, Format, V); St != LiteralStatus::Ok)
      return {St, 0};
    return ok(std::bit_cast<uint32_t>(Neg ? -V : V));
  }
  double D = 0;
  if (LiteralStatus St = readNumber(Body, Format, D); St != LiteralStatus::Ok)
    return {St, 0};
  if (Neg)
    D = -D;
  if (F.MantBits == kFloat64.MantBits)
    return ok(std::bit_cast<uint64_t>(D));
  uint64_t Bits = roundToFormat(D, F);
  uint64_t Mag = Bits & ~F.signBit();
  if (Mag == F.expMask() || (Mag == 0 && D != 0))
    return kOutOfRange;
  return ok(Bits);
}

namespace {

/// A bool element: true, false or an integer 0..255.
LiteralBits parseBoolLiteral(std::string_view Text) {
  if (Text == "true" || Text == "false")
    return ok(Text == "true");
  bool TooLarge = false;
  auto L = parseIntLit(Text, TooLarge);
  if (!L)
    return kInvalid;
  if (TooLarge || (L->Neg && L->Mag != 0) || L->Mag > 255)
    return kOutOfRange;
  return ok(L->Mag);
}

/// An int or uint element of `Bits` bits, in its range.
LiteralBits parseIntElement(std::string_view Text, bool Signed, int Bits) {
  bool TooLarge = false;
  auto L = parseIntLit(Text, TooLarge);
  if (!L)
    return kInvalid;
  const uint64_t MaxPos =
      Signed ? (uint64_t(1) << (Bits - 1)) - 1
             : (Bits == 64 ? ~uint64_t(0) : (uint64_t(1) << Bits) - 1);
  const uint64_t MaxNeg = Signed ? uint64_t(1) << (Bits - 1) : 0;
  if (TooLarge || (L->Neg ? L->Mag > MaxNeg : L->Mag > MaxPos))
    return kOutOfRange;
  return ok(L->Neg ? ~L->Mag + 1 : L->Mag);
}

} // namespace

LiteralBits parseElementLiteral(std::string_view Text, DLDataType T) {
  const DTypeTraits *R = findDType(T);
  if (!R)
    return kInvalid;
  switch (R->Literal) {
  case LiteralKind::Bool:
    return parseBoolLiteral(Text);
  case LiteralKind::Signed:
  case LiteralKind::Unsigned:
    return parseIntElement(Text, R->Literal == LiteralKind::Signed, T.bits);
  case LiteralKind::Float:
    return parseFloatLiteral(Text, R->Float);
  }
  return kInvalid;
}

std::string vmasmTensorDTypeList(std::string_view LastSep) {
  std::vector<std::string> Items;
  std::span<const DTypeTraits> Rows = dtypeTable();
  for (size_t I = 0; I < Rows.size();) {
    size_t End = I + 1; // a run of one integer kind: "int8..int64"
    const bool Integer = Rows[I].Literal == LiteralKind::Signed ||
                         Rows[I].Literal == LiteralKind::Unsigned;
    while (Integer && End < Rows.size() && Rows[End].Literal == Rows[I].Literal)
      ++End;
    Items.push_back(
        End - I > 1 ? fmt::format("{}..{}", Rows[I].Name, Rows[End - 1].Name)
                    : std::string(Rows[I].Name));
    I = End;
  }
  std::string Out;
  for (size_t I = 0; I < Items.size(); ++I) {
    Out += I == 0 ? "" : I + 1 == Items.size() ? LastSep : ", ";
    Out += Items[I];
  }
  return Out;
}

int hexDigitValue(char C) noexcept {
  if (C >= '0' && C <= '9')
    return C - '0';
  if (C >= 'a' && C <= 'f')
    return C - 'a' + 10;
  if (C >= 'A' && C <= 'F')
    return C - 'A' + 10;
  return -1;
}

std::string toHexDigits(const void *Data, size_t Size) {
  static constexpr char Digits[] = "0123456789abcdef";
  std::string Out(Size * 2, '0');
  const auto *P = static_cast<const unsigned char *>(Data);
  for (size_t I = 0; I < Size; ++I) {
    Out[2 * I] = Digits[P[I] >> 4];
    Out[2 * I + 1] = Digits[P[I] & 15];
  }
  return Out;
}

std::optional<std::string> fromHexDigits(std::string_view Text) {
  if (Text.size() % 2)
    return std::nullopt;
  std::string Out(Text.size() / 2, '\0');
  for (size_t I = 0; I < Out.size(); ++I) {
    int Hi = hexDigitValue(Text[2 * I]), Lo = hexDigitValue(Text[2 * I + 1]);
    if (Hi < 0 || Lo < 0)
      return std::nullopt;
    Out[I] = static_cast<char>(Hi * 16 + Lo);
  }
  return Out;
}

Tensor tensorFromHex(std::string_view Hex, DLDataType DT,
                     std::span<const int64_t> Dims, std::string &Error) {
  const std::optional<uint64_t> Elems = tensorElementCount(Dims, DT);
  if (!Elems) {
    Error =
        fmt::format("tensor shape {} has too many elements", shapeString(Dims));
    return Tensor();
  }
  const uint64_t Need = tensorDataBytes(*Elems, DT);
  auto Bytes = fromHexDigits(Hex);
  if (!Bytes) {
    Error = "expected pairs of hex digits (the tensor's bytes)";
    return Tensor();
  }
  if (Bytes->size() != Need) {
    Error = fmt::format("tensor {} {} has {} byte{} ({} hex digits), not {}",
                        dtypeName(DT), shapeString(Dims), Need,
                        Need == 1 ? "" : "s", 2 * Need, Bytes->size());
    return Tensor();
  }
  Tensor Out = Tensor::empty(Dims, DT);
  if (Need)
    std::memcpy(Out.data(), Bytes->data(), Bytes->size());
  return Out;
}

} // namespace vmjit::vm
