//===- function_stats.cpp - Per-function VM statistics --------------------===//

#include "vmjit/vm/function_stats.h"

#include "vmjit/vm/virtual_machine.h"

namespace vmjit::vm {

namespace {

/// Fills the tier fields of a bytecode function's row.
void describeTier(const VirtualMachine &VM, int64_t K, FunctionStats &S) {
  const bool Native = VM.isNative(K) || VM.osrCount(K);
  S.Tier = Native ? "native" : "interpreter";
  S.BackwardJumps = VM.backEdgeCount(K);
  S.OsrEntries = VM.osrCount(K);
  S.InterpretedCalls = VM.interpretedCalls(K);
  const TierController *TC = VM.tierController();
  if (!TC)
    return;
  const TierStats JS = TC->tierStats(K);
  S.JIT = JS;
  if (Native)
    S.Tier = JS.tier() == 2 ? "optimized" : "baseline";
  // Without tier-2 code every native call ran tier 1 (baseline mode, a
  // function kept at tier 1, one whose tier-2 compile is pending or
  // failed); with it, counted tier-1 code counted its own calls.
  S.BaselineCalls = JS.BaselineMode || (Native && JS.tier() < 2)
                        ? S.Calls - S.InterpretedCalls
                        : JS.BaselineCalls;
  S.OptimizedCalls = S.Calls - S.InterpretedCalls - S.BaselineCalls;
  if (JS.Requested && !JS.Compiled && !JS.Failed)
    S.Tier2State = JS.Compiling ? "compiling" : "queued";
  if (JS.Compiled && !Native)
    S.Tier2State = "ready";
  if (JS.StaysAtBaseline)
    S.Tier2State = "not worth it";
}

} // namespace

std::vector<FunctionStats> collectFunctionStats(const VirtualMachine &VM) {
  std::vector<FunctionStats> Rows;
  const Executable &Exe = VM.executable();
  for (size_t I = 0; I < Exe.functions().size(); ++I) {
    const FunctionInfo &F = Exe.functions()[I];
    const int64_t K = static_cast<int64_t>(I);
    FunctionStats S;
    S.Name = F.Name;
    S.Kind = F.Kind;
    S.Calls = VM.callCount(K);
    if (F.Kind != FunctionKind::Bytecode) {
      if (const TierController *TC = VM.tierController())
        S.CallsCounted = TC->countsEveryCall(K);
      // (A row for every function JIT code may have run uncounted.)
      if (S.Calls == 0 && S.CallsCounted)
        continue;
      S.Tier = VM.isTvmCompiled(K) ? "tvm-compiled" : "packed";
    } else {
      describeTier(VM, K, S);
    }
    Rows.push_back(std::move(S));
  }
  return Rows;
}

} // namespace vmjit::vm
