//===- data_type.cpp - DLPack data type names ------------------------------===//

#include "vmjit/runtime/data_type.h"

#include <charconv>

namespace vmjit {

std::string dtypeName(DLDataType T) {
  std::string Base;
  switch (T.code) {
  case kDLInt:
    Base = "int";
    break;
  case kDLUInt:
    Base = "uint";
    break;
  case kDLFloat:
    Base = "float";
    break;
  case kDLBfloat:
    Base = "bfloat";
    break;
  case kDLBool:
    if (T.bits == 8 && T.lanes == 1)
      return "bool";
    Base = "bool";
    break;
  case kDLOpaqueHandle:
    return "handle";
  default:
    Base = "code" + std::to_string(T.code) + "_";
    break;
  }
  Base += std::to_string(T.bits);
  if (T.lanes != 1)
    Base += "x" + std::to_string(T.lanes);
  return Base;
}

std::optional<DLDataType> parseDType(std::string_view Name) {
  if (Name == "bool")
    return dtype::Bool;
  if (Name == "handle")
    return DLDataType{kDLOpaqueHandle, 64, 1};
  struct Prefix {
    std::string_view Text;
    uint8_t Code;
  };
  // Longest prefixes first so that "uint" is not read as "int".
  static constexpr Prefix Prefixes[] = {{"bfloat", kDLBfloat},
                                        {"float", kDLFloat},
                                        {"uint", kDLUInt},
                                        {"int", kDLInt}};
  for (const Prefix &P : Prefixes) {
    if (Name.substr(0, P.Text.size()) != P.Text)
      continue;
    std::string_view Rest = Name.substr(P.Text.size());
    unsigned Bits = 0, Lanes = 1;
    auto [End, Ec] = std::from_chars(Rest.data(), Rest.data() + Rest.size(),
                                     Bits);
    if (Ec != std::errc() || End == Rest.data())
      return std::nullopt;
    std::string_view Tail(End, Rest.data() + Rest.size() - End);
    if (!Tail.empty()) {
      if (Tail[0] != 'x')
        return std::nullopt;
      auto [E2, Ec2] =
          std::from_chars(Tail.data() + 1, Tail.data() + Tail.size(), Lanes);
      if (Ec2 != std::errc() || E2 != Tail.data() + Tail.size() || Lanes == 0)
        return std::nullopt;
    }
    bool ValidBits = P.Code == kDLBfloat ? Bits == 16
                     : P.Code == kDLFloat
                         ? (Bits == 16 || Bits == 32 || Bits == 64)
                         : (Bits == 8 || Bits == 16 || Bits == 32 || Bits == 64);
    if (!ValidBits || Lanes > 0xFFFF)
      return std::nullopt;
    return DLDataType{P.Code, static_cast<uint8_t>(Bits),
                      static_cast<uint16_t>(Lanes)};
  }
  return std::nullopt;
}

} // namespace vmjit
