//===- executable.cpp - A loaded program ----------------------------------===//
//
// An executable made from its parts (every instruction's length checked)
// and deep equality of two executables.
//
//===----------------------------------------------------------------------===//

#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <cstring>
#include <fmt/format.h>

namespace vmjit::vm {

std::string_view functionKindName(FunctionKind K) noexcept {
  switch (K) {
  case FunctionKind::Packed:
    return "packed";
  case FunctionKind::Bytecode:
    return "bytecode";
  case FunctionKind::Native:
    return "native";
  }
  return "?";
}

std::optional<int64_t> Executable::findFunction(std::string_view Name) const {
  auto It = NameIndex.find(Name);
  if (It == NameIndex.end())
    return std::nullopt;
  return It->second;
}

namespace {

/// The FormatError of instruction `Index`, at word `Pos` of `Words`, whose
/// length measureInstr found bad (`Status`).
[[noreturn]] void failInstrLength(InstrLengthStatus Status,
                                  const std::vector<Word> &Words, int64_t Pos,
                                  size_t Index) {
  switch (Status) {
  case InstrLengthStatus::CallHeaderTruncated:
    throwError("FormatError",
               fmt::format("instruction {} (a call) is truncated", Index));
  case InstrLengthStatus::CallArgsTooMany:
    throwError("FormatError",
               fmt::format("instruction {} (a call) has {} arguments, "
                           "more than the code holds",
                           Index, Words[Pos + kCallNumArgsWord]));
  case InstrLengthStatus::UnknownOpcode:
    throwError(
        "FormatError",
        fmt::format("instruction {} has unknown opcode {}", Index, Words[Pos]));
  case InstrLengthStatus::Ok:
  case InstrLengthStatus::Truncated:
    break;
  }
  throwError("FormatError", fmt::format("instruction {} is truncated", Index));
}

} // namespace

std::shared_ptr<Executable> Executable::create(std::vector<FunctionInfo> Fns,
                                               std::vector<Any> Consts,
                                               std::vector<Word> Words) {
  auto Exe = std::make_shared<Executable>();
  for (size_t I = 0; I < Fns.size(); ++I) {
    if (!Exe->NameIndex.emplace(Fns[I].Name, static_cast<int64_t>(I)).second)
      throwError("FormatError",
                 fmt::format("function name '{}' appears twice in the "
                             "function table (entries {} and {})",
                             Fns[I].Name, Exe->NameIndex[Fns[I].Name], I));
  }
  // Split the words into instructions, checking every length first.
  const int64_t NumWords = static_cast<int64_t>(Words.size());
  for (int64_t Pos = 0; Pos < NumWords;) {
    const size_t Index = Exe->InstrOffsets.size();
    Exe->InstrOffsets.push_back(Pos);
    const InstrLength Length = measureInstr(Words, Pos);
    if (Length.Status != InstrLengthStatus::Ok)
      failInstrLength(Length.Status, Words, Pos, Index);
    Pos += Length.Words;
  }
  Exe->Functions = std::move(Fns);
  Exe->Constants = std::move(Consts);
  Exe->Code = std::move(Words);
  return Exe;
}

namespace {

bool sameConstant(const Any &A, const Any &B) {
  if (A.typeIndex() != B.typeIndex()) {
    // Strings may be small in one and objects in the other.
    auto SA = A.as<std::string>(), SB = B.as<std::string>();
    return SA && SB && *SA == *SB && A.typeName() == B.typeName();
  }
  const VMJITAny &RA = A.raw(), &RB = B.raw();
  switch (A.typeIndex()) {
  case kVMJITNone:
    return true;
  case kVMJITInt:
  case kVMJITBool:
    return RA.v_int64 == RB.v_int64;
  case kVMJITFloat:
    // Bitwise: NaN equals NaN, -0.0 differs from 0.0.
    return std::memcmp(&RA.v_float64, &RB.v_float64, 8) == 0;
  case kVMJITDataType:
    return RA.v_dtype.code == RB.v_dtype.code &&
           RA.v_dtype.bits == RB.v_dtype.bits &&
           RA.v_dtype.lanes == RB.v_dtype.lanes;
  case kVMJITSmallStr:
  case kVMJITStr:
    return *A.as<std::string>() == *B.as<std::string>();
  case kVMJITShape: {
    Shape X = *A.as<Shape>(), Y = *B.as<Shape>();
    return std::equal(X.begin(), X.end(), Y.begin(), Y.end());
  }
  case kVMJITTensor: {
    Tensor X = *A.as<Tensor>(), Y = *B.as<Tensor>();
    return X.dtype() == Y.dtype() &&
           std::equal(X.shape().begin(), X.shape().end(), Y.shape().begin(),
                      Y.shape().end()) &&
           std::memcmp(X.data(), Y.data(), X.nbytes()) == 0;
  }
  default:
    return RA.v_obj == RB.v_obj;
  }
}

} // namespace

bool Executable::equals(const Executable &O) const {
  if (Functions != O.Functions || Code != O.Code ||
      Constants.size() != O.Constants.size())
    return false;
  for (size_t I = 0; I < Constants.size(); ++I)
    if (!sameConstant(Constants[I], O.Constants[I]))
      return false;
  return true;
}

} // namespace vmjit::vm
