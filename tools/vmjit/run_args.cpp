//===- run_args.cpp - Arguments of `vmjit run` from their text -------------===//

#include "run_args.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/npy.h"

#include <cerrno>
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

std::optional<int64_t> parseInt(std::string_view S) {
  if (S.empty())
    return std::nullopt;
  int64_t V = 0;
  const char *B = S.data(), *E = S.data() + S.size();
  if (*B == '+')
    ++B;
  auto [P, Ec] = std::from_chars(B, E, V);
  if (Ec != std::errc() || P != E)
    return std::nullopt;
  return V;
}

std::optional<double> parseFloat(std::string_view S) {
  if (S.empty())
    return std::nullopt;
  std::string Copy(S);
  std::string Lower;
  for (char C : Copy)
    Lower += static_cast<char>(std::tolower(static_cast<unsigned char>(C)));
  if (Lower == "inf" || Lower == "+inf")
    return INFINITY;
  if (Lower == "-inf")
    return -INFINITY;
  if (Lower == "nan")
    return NAN;
  char *End = nullptr;
  errno = 0;
  double D = std::strtod(Copy.c_str(), &End);
  if (End != Copy.c_str() + Copy.size() || errno == ERANGE)
    return std::nullopt;
  // Only decimal forms: strtod would also read hex and "infinity".
  if (Copy.find_first_not_of("0123456789+-.eE") != std::string::npos)
    return std::nullopt;
  return D;
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

template <typename T> void store(char *P, T V) { std::memcpy(P, &V, sizeof V); }

/// Writes `Text` as one element of type `T` at `P`.
bool storeElement(char *P, DLDataType T, std::string_view Text) {
  Text = trim(Text);
  if (T.code == kDLBool) {
    if (Text == "true" || Text == "1")
      return *P = 1, true;
    if (Text == "false" || Text == "0")
      return *P = 0, true;
    return false;
  }
  if (T.code == kDLFloat) {
    auto D = parseFloat(Text);
    if (!D)
      return false;
    if (T.bits == 32)
      store(P, static_cast<float>(*D));
    else if (T.bits == 64)
      store(P, *D);
    else
      return false;
    return true;
  }
  auto V = parseInt(Text);
  if (!V)
    return false;
  bool Signed = T.code == kDLInt;
  int64_t Lo = !Signed          ? 0
               : T.bits == 64 ? INT64_MIN
                              : -(int64_t(1) << (T.bits - 1));
  int64_t Hi = T.bits == 64 ? INT64_MAX
               : Signed     ? (int64_t(1) << (T.bits - 1)) - 1
                            : (int64_t(1) << T.bits) - 1;
  if (*V < Lo || *V > Hi)
    return false;
  switch (T.bits) {
  case 8: store(P, static_cast<int8_t>(*V)); break;
  case 16: store(P, static_cast<int16_t>(*V)); break;
  case 32: store(P, static_cast<int32_t>(*V)); break;
  default: store(P, *V); break;
  }
  return true;
}

Any parseTensor(const std::string &Text, size_t Index) {
  size_t Open = Text.find('['), Close = Text.find(']');
  if (Close == std::string::npos || Close < Open ||
      Close + 1 >= Text.size() || Text[Close + 1] != '=')
    bad(Index, Text, "a tensor is written DTYPE[SHAPE]=V,V,... e.g. "
                     "float32[2,2]=1,2,3,4");
  std::string DTypeText = Text.substr(0, Open);
  auto T = parseDType(DTypeText);
  if (!T || T->lanes != 1 ||
      (T->code != kDLFloat && T->code != kDLInt && T->code != kDLUInt &&
       T->code != kDLBool) ||
      (T->code == kDLFloat && T->bits == 16))
    bad(Index, Text, fmt::format("unsupported tensor dtype '{}'", DTypeText));
  std::vector<int64_t> Dims;
  for (std::string_view D :
       split(std::string_view(Text).substr(Open + 1, Close - Open - 1), ',')) {
    auto V = parseInt(trim(D));
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
  for (size_t I = 0; I < Values.size(); ++I, P += dtypeBytes(*T))
    if (!storeElement(P, *T, Values[I]))
      bad(Index, Text, fmt::format("value {} ('{}') is not a valid {}", I + 1,
                                   Values[I], dtypeName(*T)));
  return Out;
}

} // namespace

Any parseRunArgument(const std::string &Text, size_t Index) {
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
      auto V = parseInt(trim(D));
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
  if (auto V = parseInt(Text))
    return Any(*V);
  if (auto D = parseFloat(Text))
    return Any(*D);
  bad(Index, Text,
      "not an int, float, true/false, PATH.npy, DTYPE[SHAPE]=VALUES, "
      "shape:DIMS, str:TEXT or null");
}

} // namespace vmjit::tool
