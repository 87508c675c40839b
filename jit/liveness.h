//===- liveness.h - The registers a function reads later ----*- C++ -*-===//
//
// Private to jit/: a backward dataflow over one bytecode function that
// finds, after each instruction, the registers some path still reads
// before writing them. Tier 2 passes a register that is dead after a call
// as an object rvalue reference (the callee takes the reference; no
// increment or decrement around the call), see docs/jit.md#owned-arguments.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_LIVENESS_H
#define VMJIT_JIT_LIVENESS_H

#include "vmjit/bytecode/executable.h"

#include <cstdint>
#include <vector>

namespace vmjit::jit {

/// LiveOut[PC][R]: whether register R of bytecode function `Func` may be
/// read after instruction PC before it is written (a call's destination
/// is written after its arguments are read).
using LiveTable = std::vector<std::vector<bool>>;
LiveTable liveAfter(const vm::Executable &Exe, int64_t Func);

} // namespace vmjit::jit

#endif // VMJIT_JIT_LIVENESS_H
