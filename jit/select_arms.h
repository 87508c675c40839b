//===- select_arms.h - One math call for the two arms of a select -*- C++
//-*-===//
//
// Private to jit/: a rewrite of the kernels' IR. TVM writes tanh as
// `select(x >= 0, (1 - exp(-2x)) / (1 + exp(-2x)), (exp(2x) - 1) /
// (exp(2x) + 1))`: both arms computed for every element, two calls of
// `exp` where the select keeps one. Elementwise, the kept lane of each arm
// is the same function of the same input whichever call computed it, so
// one call on the selected input gives every kept lane the bits it had.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_SELECT_ARMS_H
#define VMJIT_JIT_SELECT_ARMS_H

namespace llvm {
class Module;
} // namespace llvm

namespace vmjit::jit {

/// Rewrites, in every function of `M`, each `select C, T, F` whose true
/// arm T depends on one call `f(P)` and whose false arm F on one call
/// `f(Q)` of the same elementwise math intrinsic (exp, exp2, exp10, log,
/// log2, log10, sin, cos; the same flags, attributes and `!fpmath`, no
/// operand bundles) into one call `f(select C, P, Q)` feeding both arms.
/// Each call's value must reach nothing but its own arm of that select,
/// through floating-point arithmetic of one lane at a time (fadd, fsub,
/// fmul, fdiv, frem, fneg), all in the select's block before it, and C, P
/// and Q must not depend on the calls. The moved values' debug records are
/// dropped (undef). Returns how many selects it rewrote. The results are the
/// same bit for bit, NaNs included: every lane the select keeps is computed by
/// the same operations from the same values as before.
unsigned shareSelectedCalls(llvm::Module &M);

} // namespace vmjit::jit

#endif // VMJIT_JIT_SELECT_ARMS_H
