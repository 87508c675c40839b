//===- data_type.cpp - DLPack data type names ------------------------------===//
//
// The names are TVM's (tvm-ffi's DLDataTypeToString and its parser): a
// prefix per type code, the bits for the codes whose width varies, then
// the lanes.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/data_type.h"

#include <charconv>

namespace vmjit {
namespace {

/// A type code and its name; `FixedBits` is the width of the formats whose
/// name does not carry it (0 for the codes whose names do).
struct CodeName {
  uint8_t Code;
  std::string_view Name;
  uint8_t FixedBits;
};

// Longest names first among those sharing a prefix, so that the parser
// takes "float8_e4m3fnuz" before "float8_e4m3fn" and "uint" before "int".
constexpr CodeName CodeNames[] = {
    {kDLFloat8_e4m3b11fnuz, "float8_e4m3b11fnuz", 8},
    {kDLFloat8_e4m3fnuz, "float8_e4m3fnuz", 8},
    {kDLFloat8_e5m2fnuz, "float8_e5m2fnuz", 8},
    {kDLFloat8_e8m0fnu, "float8_e8m0fnu", 8},
    {kDLFloat8_e4m3fn, "float8_e4m3fn", 8},
    {kDLFloat8_e3m4, "float8_e3m4", 8},
    {kDLFloat8_e4m3, "float8_e4m3", 8},
    {kDLFloat8_e5m2, "float8_e5m2", 8},
    {kDLFloat6_e2m3fn, "float6_e2m3fn", 6},
    {kDLFloat6_e3m2fn, "float6_e3m2fn", 6},
    {kDLFloat4_e2m1fn, "float4_e2m1fn", 4},
    {kDLBfloat, "bfloat", 0},
    {kDLFloat, "float", 0},
    {kDLUInt, "uint", 0},
    {kDLInt, "int", 0},
    {kDLBool, "bool", 0},
};

const CodeName *findCode(uint8_t Code) {
  for (const CodeName &C : CodeNames)
    if (C.Code == Code)
      return &C;
  return nullptr;
}

/// Whether a name with these bits reads back as this type, in TVM as
/// here: any width for the codes whose names carry it ("int12" is what TVM
/// writes and reads for 12 bits; 0 it would read as its default), only
/// their own for the others.
bool validBits(const CodeName &C, unsigned Bits) {
  if (C.FixedBits)
    return Bits == C.FixedBits;
  return Bits >= 1 && Bits <= 255;
}

/// Reads all of `Text` as a decimal number without sign or leading zero.
std::optional<unsigned> readCount(std::string_view Text) {
  unsigned V = 0;
  if (Text.empty() || (Text.size() > 1 && Text[0] == '0'))
    return std::nullopt;
  auto [End, Ec] = std::from_chars(Text.data(), Text.data() + Text.size(), V);
  if (Ec != std::errc() || End != Text.data() + Text.size())
    return std::nullopt;
  return V;
}

/// The lanes of "", "xN" or "xvscalexN".
std::optional<uint16_t> readLanes(std::string_view Tail) {
  if (Tail.empty())
    return uint16_t(1);
  if (Tail[0] != 'x')
    return std::nullopt;
  Tail.remove_prefix(1);
  constexpr std::string_view VScale = "vscalex";
  if (Tail.substr(0, VScale.size()) == VScale) {
    auto N = readCount(Tail.substr(VScale.size()));
    if (!N || *N < 2 || *N > 32768)
      return std::nullopt;
    return static_cast<uint16_t>(65536 - *N); // -N as an int16
  }
  auto N = readCount(Tail);
  if (!N || *N == 0 || *N > 0xFFFF)
    return std::nullopt;
  return static_cast<uint16_t>(*N);
}

} // namespace

std::string dtypeName(DLDataType T) {
  if (T == dtype::Void)
    return "void";
  if (T.code == kDLOpaqueHandle)
    return "handle";
  const CodeName *C = findCode(T.code);
  if (!C || !validBits(*C, T.bits) || T.lanes == 0) {
    // No name reads back as this type: say what it is.
    std::string Text = "code" + std::to_string(T.code) + "_" +
                       std::to_string(T.bits);
    if (T.lanes != 1)
      Text += "x" + std::to_string(T.lanes);
    return Text;
  }
  std::string Name(C->Name);
  if (!C->FixedBits && !(C->Code == kDLBool && T.bits == 8))
    Name += std::to_string(T.bits);
  const auto Lanes = static_cast<int16_t>(T.lanes);
  if (Lanes > 1 || Lanes == -1) // -1: 65535 lanes, which TVM cannot name
    Name += "x" + std::to_string(T.lanes);
  else if (Lanes < -1)
    Name += "xvscalex" + std::to_string(-int(Lanes));
  return Name;
}

std::optional<DLDataType> parseDType(std::string_view Name) {
  if (Name == "void")
    return dtype::Void;
  if (Name == "handle")
    return DLDataType{kDLOpaqueHandle, 64, 1};
  for (const CodeName &C : CodeNames) {
    if (Name.substr(0, C.Name.size()) != C.Name)
      continue;
    std::string_view Rest = Name.substr(C.Name.size());
    unsigned Bits = C.FixedBits;
    if (!C.FixedBits) {
      size_t Digits = 0;
      while (Digits < Rest.size() && Rest[Digits] >= '0' &&
             Rest[Digits] <= '9')
        ++Digits;
      if (Digits == 0 && C.Code == kDLBool)
        Bits = 8;
      else if (auto B = readCount(Rest.substr(0, Digits)))
        Bits = *B;
      else
        return std::nullopt;
      Rest.remove_prefix(Digits);
    }
    auto Lanes = readLanes(Rest);
    if (!Lanes || !validBits(C, Bits))
      return std::nullopt;
    return DLDataType{C.Code, static_cast<uint8_t>(Bits), *Lanes};
  }
  return std::nullopt;
}

bool isTensorElementDType(DLDataType T) {
  if (T.code == kDLOpaqueHandle || T.bits == 0 || isScalableVector(T))
    return false;
  auto Back = parseDType(dtypeName(T));
  return Back && *Back == T;
}

} // namespace vmjit
