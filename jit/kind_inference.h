//===- kind_inference.h - The kinds of value each register holds -*- C++
//-*-===//
//
// Private to jit/: a forward dataflow over one bytecode function that finds
// the kinds of value (vm::kind bits) each register may hold before each
// instruction, given what tier 2 speculates (lowering.h:
// FunctionSpeculation). Tier 2 guards its on-stack-replacement entries with
// it; the guards, not this analysis, are what the optimizer relies on, so
// an imprecise answer costs speed (a deoptimization), never a wrong result.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KIND_INFERENCE_H
#define VMJIT_JIT_KIND_INFERENCE_H

#include "vmjit/jit/lowering.h"

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

} // namespace vmjit::jit

#endif // VMJIT_JIT_KIND_INFERENCE_H
