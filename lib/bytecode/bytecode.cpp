//===- bytecode.cpp - Instruction encoding helpers ------------------------===//
//
// Opcode names and the one check of an instruction's length.
//
//===----------------------------------------------------------------------===//

#include "vmjit/bytecode/bytecode.h"

namespace vmjit::vm {

std::string_view opcodeName(Opcode Op) noexcept {
  switch (Op) {
  case Opcode::Call:
    return "call";
  case Opcode::Ret:
    return "ret";
  case Opcode::Goto:
    return "goto";
  case Opcode::If:
    return "if";
  }
  return "?";
}

InstrLength measureInstr(std::span<const Word> Code, int64_t Pos) noexcept {
  const Word *Words = Code.data() + Pos;
  const int64_t Left = static_cast<int64_t>(Code.size()) - Pos;
  const auto Op = static_cast<Opcode>(Words[0]);
  int64_t NumCallArgs = 0;
  if (Op == Opcode::Call) {
    if (Left < kCallHeaderWords)
      return {InstrLengthStatus::CallHeaderTruncated};
    NumCallArgs = Words[kCallNumArgsWord];
    if (NumCallArgs < 0 || NumCallArgs > Left - kCallHeaderWords)
      return {InstrLengthStatus::CallArgsTooMany};
  }
  const int64_t Length = instrWords(Op, NumCallArgs);
  if (Length == 0)
    return {InstrLengthStatus::UnknownOpcode};
  if (Length > Left)
    return {InstrLengthStatus::Truncated};
  return {InstrLengthStatus::Ok, Length};
}

} // namespace vmjit::vm
