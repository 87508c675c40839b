//===- vmjit/jit/speculation.h - What tier 2 assumes ------------*- C++ -*-===//
//
// The assumptions tier 2 compiles a function under, from the feedback of
// its earlier runs; the tier manager makes them, the analyses and the
// lowering read them.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_SPECULATION_H
#define VMJIT_JIT_SPECULATION_H

#include <cstdint>
#include <vector>

namespace vmjit::jit {

/// What tier 2 assumes of one function (docs/jit.md#speculation-and-
/// deoptimization). Kinds are vm::kind bits; a guard is emitted for an
/// assumption of one scalar kind (None, Int, Bool, Float), 0 assumes
/// nothing. A failing guard deoptimizes: the registers are written back to
/// the frame and the call of the deoptimization helper
/// (runtime_helpers.h: kDeoptHelper, with the manager kDeoptManager) goes
/// on in tier 1 at that instruction.
struct FunctionSpeculation {
  /// Per parameter: its kind on entry (guarded at pc 0).
  std::vector<uint8_t> Params;
  /// Per instruction: for a call that is not inlined, the kind of its
  /// result (guarded after the call; tier 1 goes on at the next pc).
  std::vector<uint8_t> Results;
  /// Per parameter (empty: none): 0, or the rank and dtype
  /// (vm::feedback::tensorWord) of the tensor it holds on entry, guarded
  /// at pc 0. Tier 2 then drops the checks of check_tensor_info and
  /// match_shape that the guard answers (docs/jit.md#tensor-feedback).
  std::vector<uint64_t> ParamTensors;
  /// Per instruction (empty: none): 0, or for a call that is not inlined
  /// the rank and dtype of the tensor it returns, guarded after the call.
  std::vector<uint64_t> ResultTensors;
  /// Loop headers whose on-stack-replacement entry guards nothing (their
  /// guards failed too often); every other loop header guards the
  /// registers whose kind the inference knows there.
  std::vector<int64_t> GenericEntries;
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_SPECULATION_H
