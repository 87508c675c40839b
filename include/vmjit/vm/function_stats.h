//===- vmjit/vm/function_stats.h - Per-function VM statistics ---*- C++ -*-===//
//
// What a VM did with each function: calls, the tier it runs in now, how
// many calls each tier ran, and what the JIT tier (when one is attached)
// spent compiling it. One computation, read by `vmjit run --stats` and
// Python's VirtualMachine.stats().
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_FUNCTION_STATS_H
#define VMJIT_VM_FUNCTION_STATS_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/vm/native_code.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::vm {

class VirtualMachine;

struct FunctionStats {
  std::string Name;
  FunctionKind Kind = FunctionKind::Bytecode;
  /// Times the function was entered; a packed function's calls by the
  /// VM's code, in every tier (VirtualMachine::callCount).
  uint64_t Calls = 0;
  /// False when JIT code runs the function inline without counting
  /// (vm::countedAtCall): Calls then counts only the interpreter's calls
  /// and those the JIT code made out of line.
  bool CallsCounted = true;
  /// Where it runs now: "packed" (not bytecode), "tvm-compiled" (TVM's
  /// compiled-mode code of a VMTIR function, from the model library),
  /// "interpreter", "native" (no JIT statistics), "baseline" (tier 1) or
  /// "optimized" (tier 2).
  std::string_view Tier;
  uint64_t BackwardJumps = 0;
  uint64_t OsrEntries = 0;
  /// Calls each tier ran (they add up to Calls); set with JIT.
  uint64_t InterpretedCalls = 0;
  uint64_t BaselineCalls = 0;
  uint64_t OptimizedCalls = 0;
  /// What the JIT tier did, when one is attached.
  std::optional<TierStats> JIT;
  /// Tier-2 state beyond Tier: "queued", "compiling", "ready" (compiled
  /// after the last call entered it), "not worth it" (kept at tier 1), or
  /// empty.
  std::string_view Tier2State;
};

/// One row per bytecode function and per packed function that was called
/// (or that JIT code runs inline without counting), in function-table
/// order.
std::vector<FunctionStats> collectFunctionStats(const VirtualMachine &VM);

} // namespace vmjit::vm

#endif // VMJIT_VM_FUNCTION_STATS_H
