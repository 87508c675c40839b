//===- executable.cpp - A loaded program -----------------------------------===//

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

std::shared_ptr<Executable> Executable::create(std::vector<FunctionInfo> Fns,
                                               std::vector<Any> Consts,
                                               std::vector<Word> Words) {
  auto E = std::make_shared<Executable>();
  for (size_t I = 0; I < Fns.size(); ++I) {
    if (!E->NameIndex.emplace(Fns[I].Name, static_cast<int64_t>(I)).second)
      throwError("FormatError",
                 fmt::format("function name '{}' appears twice in the "
                             "function table (entries {} and {})",
                             Fns[I].Name, E->NameIndex[Fns[I].Name], I));
  }
  // Split the words into instructions, checking every length first.
  const int64_t N = static_cast<int64_t>(Words.size());
  for (int64_t Pos = 0; Pos < N;) {
    E->InstrOffsets.push_back(Pos);
    int64_t Remaining = N - Pos;
    int64_t Len = 0;
    switch (static_cast<Opcode>(Words[Pos])) {
    case Opcode::Call:
      if (Remaining < kCallHeaderWords)
        throwError("FormatError",
                   fmt::format("instruction {} (a call) is truncated",
                               E->InstrOffsets.size() - 1));
      if (Words[Pos + 3] < 0 || Words[Pos + 3] > Remaining - kCallHeaderWords)
        throwError("FormatError",
                   fmt::format("instruction {} (a call) has {} arguments, "
                               "more than the code holds",
                               E->InstrOffsets.size() - 1, Words[Pos + 3]));
      Len = kCallHeaderWords + Words[Pos + 3];
      break;
    case Opcode::Ret:
      Len = kRetWords;
      break;
    case Opcode::Goto:
      Len = kGotoWords;
      break;
    case Opcode::If:
      Len = kIfWords;
      break;
    default:
      throwError("FormatError",
                 fmt::format("instruction {} has unknown opcode {}",
                             E->InstrOffsets.size() - 1, Words[Pos]));
    }
    if (Len > Remaining)
      throwError("FormatError", fmt::format("instruction {} is truncated",
                                            E->InstrOffsets.size() - 1));
    Pos += Len;
  }
  E->Functions = std::move(Fns);
  E->Constants = std::move(Consts);
  E->Code = std::move(Words);
  return E;
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
