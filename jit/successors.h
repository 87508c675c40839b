//===- successors.h - Where control goes after an instruction ---*- C++ -*-===//
//
// Private to jit/: the instructions control may go to after one bytecode
// instruction, which every dataflow over a function (liveness, kinds,
// tensor facts) follows.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_SUCCESSORS_H
#define VMJIT_JIT_SUCCESSORS_H

#include "vmjit/bytecode/bytecode.h"

#include <cstdint>
#include <vector>

namespace vmjit::jit {

/// The instructions control may go to after `I` (at `PC`): none after a
/// return.
inline std::vector<int64_t> successors(vm::InstrView I, int64_t PC) {
  switch (I.opcode()) {
  case vm::Opcode::Call:
    return {PC + 1};
  case vm::Opcode::Ret:
    return {};
  case vm::Opcode::Goto:
    return {PC + I.gotoOffset()};
  case vm::Opcode::If:
    return {PC + 1, PC + I.ifFalseOffset()};
  }
  return {};
}

} // namespace vmjit::jit

#endif // VMJIT_JIT_SUCCESSORS_H
