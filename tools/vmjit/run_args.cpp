//===- run_args.cpp - Arguments of `vmjit run` from their text -------------===//

#include "run_args.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/literals.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <optional>

namespace vmjit::tool {
namespace {

[[noreturn]] void bad(size_t Index, const std::string &Text,
                      const std::string &Why) {
  throwError("UsageError", fmt::format("argument {} ('{}'): {}", Index, Text,
                                       Why));
}

/// An int: decimal or 0x hex, optionally signed (as vmasm writes one).
/// nullopt if `S` is no integer literal; one outside int64 is an error
/// rather than a float.
std::optional<int64_t> parseInt(std::string_view S, size_t Index,
                                const std::string &Text) {
  bool TooLarge = false;
  auto L = vm::parseIntLit(S, TooLarge);
  if (!L)
    return std::nullopt;
  auto V = TooLarge ? std::nullopt : vm::toInt64(*L);
  if (!V)
    bad(Index, Text,
        fmt::format("the integer {} is out of the int64 range (write a "
                    "float as 1e20, or a tensor of uint64 values)",
                    S));
  return V;
}

/// A float: decimal or hex, inf, infinity, nan in any case, optionally
/// signed. nullopt if `S` is no float literal.
std::optional<double> parseFloat(std::string_view S, size_t Index,
                                 const std::string &Text) {
  vm::LiteralBits L = vm::parseFloatLiteral(S, vm::kFloat64);
  if (L.Status == vm::LiteralStatus::OutOfRange)
    bad(Index, Text, fmt::format("{} is out of the float64 range", S));
  if (L.Status != vm::LiteralStatus::Ok)
    return std::nullopt;
  return std::bit_cast<double>(L.Bits);
}

std::vector<std::string_view> split(std::string_view S, char Sep) {
  std::vector<std::string_view> Parts;
  if (S.empty())
    return Parts;
  size_t Start = 0;
  while (true) {
    size_t P = S.find(Sep, Start);
    Parts.push_back(S.substr(Start, P - Start));
    if (P == std::string_view::npos)
      break;
    Start = P + 1;
  }
  return Parts;
}

std::string_view trim(std::string_view S) {
  while (!S.empty() && std::isspace(static_cast<unsigned char>(S.front())))
    S.remove_prefix(1);
  while (!S.empty() && std::isspace(static_cast<unsigned char>(S.back())))
    S.remove_suffix(1);
  return S;
}

Any parseTensor(const std::string &Text, size_t Index) {
  size_t Open = Text.find('['), Close = Text.find(']');
  if (Close == std::string::npos || Close < Open ||
      Close + 1 >= Text.size() || Text[Close + 1] != '=')
    bad(Index, Text, "a tensor is written DTYPE[SHAPE]=V,V,... e.g. "
                     "float32[2,2]=1,2,3,4");
  std::string DTypeText = Text.substr(0, Open);
  auto T = parseDType(DTypeText);
  if (!T || !vm::isVmasmTensorDType(*T))
    bad(Index, Text,
        fmt::format("unsupported tensor dtype '{}' ({})", DTypeText,
                    vm::vmasmTensorDTypeList(", ")));
  std::vector<int64_t> Dims;
  for (std::string_view D :
       split(std::string_view(Text).substr(Open + 1, Close - Open - 1), ',')) {
    auto V = parseInt(trim(D), Index, Text);
    if (!V || *V < 0)
      bad(Index, Text, fmt::format("bad dimension '{}'", D));
    Dims.push_back(*V);
  }
  std::vector<std::string_view> Values =
      split(std::string_view(Text).substr(Close + 2), ',');
  int64_t N = 1;
  for (int64_t D : Dims) {
    if (D && N > (int64_t(1) << 40) / D)
      bad(Index, Text, "the tensor is too large to write as text");
    N *= D;
  }
  if (static_cast<int64_t>(Values.size()) != N)
    bad(Index, Text,
        fmt::format("shape {} needs {} values, {} given", shapeString(Dims), N,
                    Values.size()));
  Tensor Out = Tensor::empty(Dims, *T);
  char *P = static_cast<char *>(Out.data());
  const size_t Bytes = dtypeBytes(*T);
  for (size_t I = 0; I < Values.size(); ++I, P += Bytes) {
    vm::LiteralBits L = vm::parseElementLiteral(trim(Values[I]), *T);
    if (L.Status != vm::LiteralStatus::Ok)
      bad(Index, Text,
          fmt::format("value {} ('{}') {} {}", I + 1, trim(Values[I]),
                      L.Status == vm::LiteralStatus::OutOfRange
                          ? "is out of range for"
                          : "is not a valid",
                      dtypeName(*T)));
    for (size_t B = 0; B < Bytes; ++B) // the element, in host order
      P[std::endian::native == std::endian::little ? B : Bytes - 1 - B] =
          static_cast<char>(L.Bits >> (8 * B));
  }
  return Out;
}

/// The mark: a control character no one types.
constexpr char kValueMark = '\x1f';

/// "-inf", "-infinity", "-nan" (any case) or "-.5": a negative value that
/// CLI11 would split into short options.
bool isNegativeValueWord(std::string_view W) {
  if (W.size() < 2 || W[0] != '-')
    return false;
  if (W[1] == '.')
    return W.size() > 2 && std::isdigit(static_cast<unsigned char>(W[2]));
  return vm::parseFloatLiteral(W, vm::kFloat64).Status ==
             vm::LiteralStatus::Ok &&
         std::isalpha(static_cast<unsigned char>(W[1]));
}

} // namespace

void protectRunValues(std::vector<std::string> &Args) {
  auto Run = std::find(Args.begin(), Args.end(), "run");
  if (Run == Args.end())
    return;
  for (auto It = Run + 1; It != Args.end() && *It != "--"; ++It)
    if (isNegativeValueWord(*It))
      It->insert(It->begin(), kValueMark);
}

std::string unmarkRunValue(const std::string &Text) {
  return !Text.empty() && Text[0] == kValueMark ? Text.substr(1) : Text;
}

Any parseRunArgument(const std::string &Marked, size_t Index) {
  const std::string Text = unmarkRunValue(Marked);
  if (Text == "null")
    return Any();
  if (Text == "true")
    return Any(true);
  if (Text == "false")
    return Any(false);
  if (Text.rfind("str:", 0) == 0)
    return Any(Text.substr(4));
  if (Text.rfind("shape:", 0) == 0) {
    std::vector<int64_t> Dims;
    for (std::string_view D : split(std::string_view(Text).substr(6), ',')) {
      auto V = parseInt(trim(D), Index, Text);
      if (!V)
        bad(Index, Text, fmt::format("bad dimension '{}'", D));
      Dims.push_back(*V);
    }
    return Any(Shape(std::move(Dims)));
  }
  if (Text.size() > 4 && Text.compare(Text.size() - 4, 4, ".npy") == 0) {
    try {
      return Any(vm::readNpy(Text));
    } catch (const Error &E) {
      throwError(E.kind(), fmt::format("argument {}: {}", Index, E.message()));
    }
  }
  if (Text.find('[') != std::string::npos && Text.find('=') != std::string::npos)
    return parseTensor(Text, Index);
  if (auto V = parseInt(Text, Index, Text))
    return Any(*V);
  if (auto D = parseFloat(Text, Index, Text))
    return Any(*D);
  bad(Index, Text,
      "not an int, float, true/false, PATH.npy, DTYPE[SHAPE]=VALUES, "
      "shape:DIMS, str:TEXT or null");
}

} // namespace vmjit::tool
