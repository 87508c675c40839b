//===- npy.cpp - NumPy .npy files ------------------------------------------===//
//
// The format: "\x93NUMPY", major and minor version bytes, the header length
// (u16 for 1.x, u32 for 2.x/3.x, little-endian), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and a newline to a multiple of 64 bytes, then the raw data.
//
//===----------------------------------------------------------------------===//

#include "vmjit/files/npy.h"
#include "vmjit/files/file_io.h"
#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

namespace vmjit::vm {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

[[noreturn]] void npyError(const std::string &Name, const std::string &Msg) {
  throwError("FormatError", fmt::format("{}: not a readable .npy file: {}",
                                        Name, Msg));
}

/// The parts of the header dict that matter.
struct NpyHeader {
  std::string Descr;
  bool FortranOrder = false;
  std::vector<int64_t> Shape;
};

/// A reader for the small Python-literal subset .npy headers use.
class HeaderParser {
public:
  HeaderParser(std::string_view Text, const std::string &Name)
      : Text(Text), Name(Name) {}

  NpyHeader parse() {
    NpyHeader H;
    bool HaveDescr = false, HaveOrder = false, HaveShape = false;
    expect('{');
    while (!peekIs('}')) {
      std::string Key = parseString();
      expect(':');
      if (Key == "descr") {
        H.Descr = parseString();
        HaveDescr = true;
      } else if (Key == "fortran_order") {
        H.FortranOrder = parseBool();
        HaveOrder = true;
      } else if (Key == "shape") {
        H.Shape = parseTuple();
        HaveShape = true;
      } else {
        npyError(Name, fmt::format("unknown header key '{}'", Key));
      }
      if (!peekIs('}'))
        expect(',');
    }
    expect('}');
    if (!HaveDescr || !HaveOrder || !HaveShape)
      npyError(Name, "the header lacks 'descr', 'fortran_order' or 'shape'");
    return H;
  }

private:
  void skipSpace() {
    while (Pos < Text.size() && std::isspace(static_cast<unsigned char>(Text[Pos])))
      ++Pos;
  }
  bool peekIs(char C) {
    skipSpace();
    return Pos < Text.size() && Text[Pos] == C;
  }
  void expect(char C) {
    if (!peekIs(C))
      npyError(Name, fmt::format("header: expected '{}' at offset {}", C, Pos));
    ++Pos;
  }
  std::string parseString() {
    skipSpace();
    if (Pos >= Text.size() || (Text[Pos] != '\'' && Text[Pos] != '"'))
      npyError(Name, fmt::format("header: expected a string at offset {}", Pos));
    char Quote = Text[Pos++];
    size_t End = Text.find(Quote, Pos);
    if (End == std::string_view::npos)
      npyError(Name, "header: unterminated string");
    std::string S(Text.substr(Pos, End - Pos));
    Pos = End + 1;
    return S;
  }
  bool parseBool() {
    skipSpace();
    if (Text.substr(Pos, 4) == "True") {
      Pos += 4;
      return true;
    }
    if (Text.substr(Pos, 5) == "False") {
      Pos += 5;
      return false;
    }
    npyError(Name, fmt::format("header: expected True or False at offset {}",
                               Pos));
  }
  std::vector<int64_t> parseTuple() {
    std::vector<int64_t> Dims;
    expect('(');
    while (!peekIs(')')) {
      skipSpace();
      size_t Start = Pos;
      int64_t V = 0;
      while (Pos < Text.size() && std::isdigit(static_cast<unsigned char>(Text[Pos]))) {
        int Digit = Text[Pos] - '0';
        if (V > (std::numeric_limits<int64_t>::max() - Digit) / 10)
          npyError(Name, "header: dimension too large");
        V = V * 10 + Digit;
        ++Pos;
      }
      if (Pos == Start)
        npyError(Name, fmt::format("header: expected a dimension at offset {}",
                                   Pos));
      // Python 2 wrote long integers as 3L.
      if (Pos < Text.size() && Text[Pos] == 'L')
        ++Pos;
      Dims.push_back(V);
      if (!peekIs(')'))
        expect(',');
    }
    expect(')');
    return Dims;
  }

  std::string_view Text;
  const std::string &Name;
  size_t Pos = 0;
};

/// NumPy's kind letters of the DLPack codes. Besides the table's rows,
/// npy files carry the other byte widths of int, uint and float ("<i3":
/// int24, "<f16": float128, NumPy's long double), which no kernel computes
/// on but which load and save.
constexpr std::pair<char, uint8_t> kNpyKinds[] = {
    {'b', kDLBool}, {'i', kDLInt}, {'u', kDLUInt}, {'f', kDLFloat}};

/// NumPy's type string for a dtype ("<f4"), if it has one: its row's, or
/// "<" kind bytes for the other widths of int, uint and float. NumPy has no
/// sub-byte, float8/6/4, bfloat16 or vector dtypes (int4, float8_e4m3fn,
/// float32x2).
std::optional<std::string> npyDescr(DLDataType T) {
  if (const DTypeTraits *R = findDType(T))
    return R->NumpyDescr.empty() ? std::nullopt
                                 : std::optional(std::string(R->NumpyDescr));
  if (T.lanes != 1 || !isByteAligned(T) || T.code == kDLBool)
    return std::nullopt;
  for (auto [Kind, Code] : kNpyKinds)
    if (Code == T.code)
      return fmt::format("<{}{}", Kind, T.bits / 8);
  return std::nullopt;
}

/// The dtype of NumPy kind `Kind` and item size `Size` (its bits taken
/// modulo 256, as DLPack's field holds them); nullopt if npyDescr has no
/// descr for it.
std::optional<DLDataType> dtypeOfKind(char Kind, int Size) {
  if (const DTypeTraits *R = findDTypeByNumpyKind(Kind, size_t(Size)))
    return R->Type;
  for (auto [K, Code] : kNpyKinds) {
    const DLDataType T{Code, static_cast<uint8_t>(Size * 8), 1};
    if (K == Kind && npyDescr(T) && parseDType(dtypeName(T)))
      return T;
  }
  return std::nullopt;
}

DLDataType dtypeFromDescr(const std::string &Descr, const std::string &Name) {
  if (Descr.size() < 3)
    npyError(Name, fmt::format("unsupported dtype '{}'", Descr));
  char Order = Descr[0], Kind = Descr[1];
  std::string SizeText = Descr.substr(2);
  int Size = 0;
  for (char C : SizeText) {
    if (!std::isdigit(static_cast<unsigned char>(C)) || Size > 64)
      npyError(Name, fmt::format("unsupported dtype '{}'", Descr));
    Size = Size * 10 + (C - '0');
  }
  if (Order == '>' && Size > 1)
    npyError(Name, fmt::format("big-endian dtype '{}' is not supported",
                               Descr));
  if (Order != '<' && Order != '|' && Order != '=' && Order != '>')
    npyError(Name, fmt::format("unsupported dtype '{}'", Descr));
  std::optional<DLDataType> T = dtypeOfKind(Kind, Size);
  if (!T)
    npyError(Name, fmt::format("unsupported dtype '{}'", Descr));
  return *T;
}

} // namespace

Tensor parseNpy(std::span<const char> Bytes, const std::string &Name) {
  if (Bytes.size() < kNpyMagicLen + 4 ||
      std::memcmp(Bytes.data(), kNpyMagic, kNpyMagicLen) != 0)
    npyError(Name, "bad magic");
  uint8_t Major = static_cast<uint8_t>(Bytes[6]);
  size_t HeaderLen = 0, Prefix = 0;
  if (Major == 1) {
    uint16_t L;
    std::memcpy(&L, Bytes.data() + 8, 2);
    HeaderLen = L;
    Prefix = 10;
  } else if (Major == 2 || Major == 3) {
    if (Bytes.size() < 12)
      npyError(Name, "truncated header");
    uint32_t L;
    std::memcpy(&L, Bytes.data() + 8, 4);
    HeaderLen = L;
    Prefix = 12;
  } else {
    npyError(Name, fmt::format("format version {} is not supported", Major));
  }
  if (HeaderLen > Bytes.size() - Prefix)
    npyError(Name, "truncated header");
  NpyHeader H = HeaderParser(std::string_view(Bytes.data() + Prefix, HeaderLen),
                             Name)
                    .parse();
  if (H.FortranOrder)
    npyError(Name, "Fortran-order arrays are not supported (save a C-order "
                   "array, e.g. with numpy.ascontiguousarray)");
  DLDataType T = dtypeFromDescr(H.Descr, Name);
  size_t DataOffset = Prefix + HeaderLen;
  size_t Available = Bytes.size() - DataOffset;
  uint64_t Elems = 1;
  for (int64_t D : H.Shape) {
    if (D != 0 && Elems > std::numeric_limits<uint64_t>::max() / uint64_t(D))
      npyError(Name, "shape overflows");
    Elems *= uint64_t(D);
  }
  uint64_t Need = Elems > Available ? Available + 1 : Elems * dtypeBytes(T);
  if (Need != Available)
    npyError(Name, fmt::format("shape {} of {} needs {} data bytes, the file "
                               "has {}",
                               shapeString(H.Shape), dtypeName(T),
                               Elems * dtypeBytes(T), Available));
  Tensor Out = Tensor::empty(H.Shape, T);
  if (Available)
    std::memcpy(Out.data(), Bytes.data() + DataOffset, Available);
  return Out;
}

Tensor readNpy(const std::string &Path) {
  return parseNpy(readWholeFile(Path), Path);
}

std::string serializeNpy(const Tensor &T) {
  auto Descr = npyDescr(T.dtype());
  if (!Descr)
    throwError("ValueError",
               fmt::format("a {} tensor cannot be saved as .npy (NumPy has "
                           "no such dtype)",
                           dtypeName(T.dtype())));
  if (T.device().device_type != kDLCPU || !T.isContiguous())
    throwError("ValueError", "only compact CPU tensors can be saved as .npy");
  std::string ShapeText = "(";
  for (int64_t D : T.shape())
    ShapeText += fmt::format("{}, ", D);
  if (T.ndim() > 1)
    ShapeText.resize(ShapeText.size() - 1), ShapeText.back() = ')';
  else if (T.ndim() == 1)
    ShapeText.pop_back(), ShapeText += ")";
  else
    ShapeText += ")";
  std::string Dict = fmt::format("{{'descr': '{}', 'fortran_order': False, "
                                 "'shape': {}, }}",
                                 *Descr, ShapeText);
  // Pad with spaces and a newline so the data starts 64-byte aligned.
  size_t Prefix = Dict.size() + 1 + 10 <= 65535 ? 10 : 12;
  size_t Total = (Prefix + Dict.size() + 1 + 63) / 64 * 64;
  Dict.append(Total - Prefix - Dict.size() - 1, ' ');
  Dict += '\n';
  std::string Out(kNpyMagic, kNpyMagicLen);
  Out += static_cast<char>(Prefix == 10 ? 1 : 2);
  Out += '\0';
  if (Prefix == 10) {
    uint16_t L = static_cast<uint16_t>(Dict.size());
    Out.append(reinterpret_cast<const char *>(&L), 2);
  } else {
    uint32_t L = static_cast<uint32_t>(Dict.size());
    Out.append(reinterpret_cast<const char *>(&L), 4);
  }
  Out += Dict;
  Out.append(static_cast<const char *>(T.data()), T.nbytes());
  return Out;
}

void writeNpy(const Tensor &T, const std::string &Path) {
  std::string Image = serializeNpy(T);
  std::ofstream Out(Path, std::ios::binary | std::ios::trunc);
  if (!Out)
    throwError("IOError", fmt::format("cannot write '{}': {}", Path,
                                      std::strerror(errno)));
  Out.write(Image.data(), static_cast<std::streamsize>(Image.size()));
  Out.close();
  if (!Out)
    throwError("IOError", fmt::format("cannot write '{}'", Path));
}

} // namespace vmjit::vm
