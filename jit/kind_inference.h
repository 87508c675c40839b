//===- kind_inference.h - The kinds of value of each register ---*- C++ -*-===//
//
// Private to jit/: a forward dataflow over one bytecode function that finds
// the kinds of value (vm::kind bits) each register may hold before each
// instruction, given what tier 2 speculates (speculation.h:
// FunctionSpeculation). Tier 2 guards its on-stack-replacement entries with
// it and lowers each instruction for the kinds its operands can have there.
// Every way into tier-2 code checks what the table says at that point (a
// call's entry its parameters, a loop header every register whose kinds
// are scalar, a call the result it speculates on; a header that stopped
// guarding admits anything), so the table holds for every frame that runs
// tier-2 code; a wrong speculation costs a deoptimization, never a wrong
// result.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KIND_INFERENCE_H
#define VMJIT_JIT_KIND_INFERENCE_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/jit/speculation.h"

#include <cstdint>
#include <vector>

namespace vmjit::jit {

/// Kinds[PC][R]: the kinds register R may hold before instruction PC of
/// bytecode function `Func` in a frame that tier-2 code entered at pc 0
/// (parameters of the kinds `Spec` assumes, every other register None),
/// with every call result `Spec` assumes. All 0 at an instruction no path
/// reaches.
using KindTable = std::vector<std::vector<uint8_t>>;
KindTable inferKinds(const vm::Executable &Exe, int64_t Func,
                     const std::vector<CalleeBinding> &Callees,
                     bool InlineBuiltins, const FunctionSpeculation &Spec);

/// Whether `K` is exactly one scalar kind (None, Int, Bool, Float): the
/// assumptions tier 2 guards.
bool guardableKind(uint8_t K);

/// Whether `K` holds scalar kinds only (no object, nothing else): the sets
/// an on-stack-replacement entry guards, so that lowering may trust them
/// (no reference counting, no type dispatch they rule out).
bool scalarKinds(uint8_t K);

/// Without feedback (compiled mode runs no call first): whether register
/// `R` of bytecode function `Func` is read as an operand of a scalar.*
/// builtin tier 2 inlines and otherwise only as an `if` condition or a
/// returned value, and is written by no instruction but the one at `DefPC`
/// (-1: a parameter, never written). Tier 2 then assumes an int there,
/// guarded like feedback (at entry, after the call); a wrong guess
/// deoptimizes and, repeated, makes the site generic.
bool intByUse(const vm::Executable &Exe, int64_t Func,
              const std::vector<CalleeBinding> &Callees, bool InlineBuiltins,
              int64_t R, int64_t DefPC);

/// The kinds argument `A` of an instruction can have, given the kinds of
/// the registers before it (`In`).
uint8_t argKinds(const vm::Executable &Exe, const std::vector<uint8_t> &In,
                 vm::Arg A);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KIND_INFERENCE_H
