//===- bytecode.cpp - Instruction encoding helpers -------------------------===//

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

} // namespace vmjit::vm
