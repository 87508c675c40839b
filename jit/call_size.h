//===- call_size.h - Call arguments: stack and compile size ----*- C++ -*-===//
//
// What the calls of a bytecode function cost its native code: JIT code
// (tier 1, tier 2, `vmjit compile`) keeps a call's arguments on the native
// stack, 16 bytes each, and tier 2's IR grows with every argument as with
// every instruction.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CALL_SIZE_H
#define VMJIT_JIT_CALL_SIZE_H

#include "vmjit/bytecode/bytecode.h"
#include "vmjit/bytecode/executable.h"

#include <algorithm>
#include <cstdint>

namespace vmjit::jit {

/// The most bytes of argument stack one frame of JIT code keeps on the
/// native stack: a function with a call of more than 4096 arguments stays
/// on the interpreter (whose argument arrays are on the heap) in every
/// tier. The native stack check keeps more than this free below a native
/// entry (docs/jit.md, "Native stack").
constexpr int64_t kMaxNativeArgBytes = 64 * 1024;

/// A function's instructions and call arguments.
struct CallSize {
  int64_t Instrs = 0;
  int64_t Args = 0;    ///< over all its calls
  int64_t MaxArgs = 0; ///< of its largest call
};

inline CallSize callSize(const vm::Executable &Exe, const vm::FunctionInfo &F) {
  CallSize S;
  S.Instrs = F.numInstrs();
  for (int64_t PC = F.StartInstr; PC < F.EndInstr; ++PC) {
    vm::InstrView I = Exe.instr(PC);
    if (I.opcode() != vm::Opcode::Call)
      continue;
    S.Args += I.callNumArgs();
    S.MaxArgs = std::max(S.MaxArgs, I.callNumArgs());
  }
  return S;
}

/// Whether JIT code can run `F`: its largest call's arguments fit in
/// kMaxNativeArgBytes.
inline bool argumentsFitNativeStack(const vm::Executable &Exe,
                                    const vm::FunctionInfo &F) {
  return 16 * callSize(Exe, F).MaxArgs <= kMaxNativeArgBytes;
}

} // namespace vmjit::jit

#endif // VMJIT_JIT_CALL_SIZE_H
