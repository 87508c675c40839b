//===- link_error.cpp - Packed functions nothing provides ------------------===//
//
// The LinkError a VM raises at creation when the executable names packed
// functions that no loaded library and no registry provides: one message
// naming each, where the executable first uses it, and the closest name
// that is provided ("did you mean 'scalar.add'?").
//
//===----------------------------------------------------------------------===//

#include "vm_internal.h"

#include <algorithm>
#include <optional>

namespace vmjit::vm::internal {
namespace {

/// Edit distance with insertions, deletions, substitutions and swaps of
/// two neighbours ("mian" is one edit from "main"), three rows.
size_t editDistance(std::string_view A, std::string_view B) {
  std::vector<size_t> Before(B.size() + 1), Prev(B.size() + 1),
      Cur(B.size() + 1);
  for (size_t J = 0; J <= B.size(); ++J)
    Prev[J] = J;
  for (size_t I = 1; I <= A.size(); ++I) {
    Cur[0] = I;
    for (size_t J = 1; J <= B.size(); ++J) {
      Cur[J] = std::min({Prev[J] + 1, Cur[J - 1] + 1,
                         Prev[J - 1] + (A[I - 1] != B[J - 1])});
      if (I > 1 && J > 1 && A[I - 1] == B[J - 2] && A[I - 2] == B[J - 1])
        Cur[J] = std::min(Cur[J], Before[J - 2] + 1);
    }
    std::swap(Before, Prev);
    std::swap(Prev, Cur);
  }
  return Prev[B.size()];
}

} // namespace

std::optional<std::string> closestName(const std::string &Name,
                                       const std::vector<std::string> &Known) {
  const size_t Limit = std::max<size_t>(1, Name.size() / 3);
  std::optional<std::string> Best;
  size_t BestD = Limit + 1;
  for (const std::string &K : Known) {
    size_t Len = std::max(K.size(), Name.size()) - std::min(K.size(), Name.size());
    if (Len > Limit)
      continue;
    if (size_t D = editDistance(Name, K); D < BestD) {
      BestD = D;
      Best = K;
    }
  }
  return Best;
}

namespace {

/// "called in function 'F', instruction N" or "used as a value in ...":
/// the first place a bytecode function refers to function `Func`.
std::string firstUse(const Executable &Exe, int64_t Func) {
  for (const FunctionInfo &F : Exe.functions()) {
    if (F.Kind != FunctionKind::Bytecode)
      continue;
    for (int64_t L = 0; L < F.numInstrs(); ++L) {
      InstrView I = Exe.instr(F.StartInstr + L);
      if (I.opcode() != Opcode::Call)
        continue;
      if (I.callFunc() == Func)
        return fmt::format("called in function '{}', instruction {}", F.Name,
                           L);
      for (int64_t A = 0; A < I.callNumArgs(); ++A) {
        Arg X = I.callArg(A);
        if (X.kindByte() == static_cast<uint8_t>(ArgKind::FuncIdx) &&
            X.value() == Func)
          return fmt::format("used as a value in function '{}', "
                             "instruction {}",
                             F.Name, L);
      }
    }
  }
  return "declared, not used";
}

} // namespace

void throwLinkError(
    const Executable &Exe, const std::vector<int64_t> &Missing,
    const Registry &Reg,
    const std::vector<std::shared_ptr<KernelLibrary>> &Libraries) {
  std::vector<std::string> Known = Reg.names();
  for (const auto &Lib : Libraries) {
    std::vector<std::string> Names = Lib->functionNames();
    Known.insert(Known.end(), Names.begin(), Names.end());
  }
  std::string List;
  bool Unknown = false; // a name no known one is close to: a kernel?
  for (int64_t K : Missing) {
    const std::string &Name = Exe.function(K).Name;
    std::string Hint = firstUse(Exe, K);
    if (auto C = closestName(Name, Known))
      Hint += fmt::format("; did you mean '{}'?", *C);
    else
      Unknown = true;
    List += fmt::format("{}'{}' ({})", List.empty() ? "" : ", ", Name, Hint);
  }
  // Without any library, they are most likely a model's kernels.
  const std::string HowTo =
      Unknown && Libraries.empty() ? std::string(kSupplyKernelsHint) : "";
  throwError("LinkError",
             fmt::format("{} packed function{} not found in any loaded "
                         "library or the registry: {}{}",
                         Missing.size(), Missing.size() == 1 ? " is" : "s are",
                         List, HowTo));
}

} // namespace vmjit::vm::internal
