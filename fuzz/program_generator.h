//===- program_generator.h - Programs from fuzz bytes -----------*- C++ -*-===//
//
// generateProgram reads a FuzzedDataProvider and builds (through
// vm::ExecutableBuilder) a small program the verifier accepts by
// construction: one to four functions (`main(n)` first) over int
// registers, every register written in a prologue; calls to safe builtins
// (scalar.*, vm.builtin.copy, make_tuple, tuple_getitem, closures) and to
// the program's functions, recursion included, also under up to 150 nested
// runs of the VM (a generated `reenter(k, f, x)` calls f(x) through
// invoke_closure under k invoke_closure calls of itself); `if` and `goto` to
// labels before or after the jump (loops); `ret` in the middle of a body.
// Operands are registers, immediates, constants (ints, floats with -0,
// inf and NaN, a bool, a string, null) and function references, so calls
// also fail (type errors, division by zero, bad tuple indices, deep
// recursion, endless loops stopped by the step budget).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_FUZZ_PROGRAM_GENERATOR_H
#define VMJIT_FUZZ_PROGRAM_GENERATOR_H

#include "vmjit/bytecode/executable.h"

#include <cstdint>
#include <memory>

class FuzzedDataProvider;

namespace vmjit::fuzz {

struct GeneratedProgram {
  std::shared_ptr<vm::Executable> Exe;
  /// The argument main is called with.
  int64_t Arg = 0;
};

/// Builds a program from `P`'s bytes. Throws the verifier's
/// Error("VerifyError") if the program breaks a rule (rare: see the
/// replay test), never another error.
GeneratedProgram generateProgram(FuzzedDataProvider &P);

} // namespace vmjit::fuzz

#endif // VMJIT_FUZZ_PROGRAM_GENERATOR_H
