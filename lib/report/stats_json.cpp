//===- stats_json.cpp - Statistics as JSON --------------------------------===//

#include "vmjit/report/stats_json.h"

#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/function_stats.h"
#include "vmjit/vm/virtual_machine.h"

#include <map>

namespace vmjit::report {

using nlohmann::ordered_json;

namespace {

std::string constantKind(const Any &C) {
  switch (C.typeIndex()) {
  case kVMJITNone:
    return "null";
  case kVMJITInt:
    return "int";
  case kVMJITFloat:
    return "float";
  case kVMJITBool:
    return "bool";
  case kVMJITSmallStr:
  case kVMJITStr:
    return "str";
  case kVMJITDataType:
    return "dtype";
  case kVMJITShape:
    return "shape";
  case kVMJITTensor:
    return "tensor";
  default:
    return std::string(C.typeName());
  }
}

ordered_json functionTableRow(const vm::Executable &Exe, size_t I) {
  const vm::FunctionInfo &F = Exe.function(static_cast<int64_t>(I));
  ordered_json E;
  E["index"] = I;
  E["name"] = F.Name;
  E["kind"] = std::string(vm::functionKindName(F.Kind));
  if (F.Kind == vm::FunctionKind::Native) {
    // TVM's VMTIR functions: arguments and result in a register file.
    E["params"] = F.NumParams;
    E["registers"] = F.RegisterFileSize;
  }
  if (F.Kind == vm::FunctionKind::Bytecode) {
    int64_t Calls = 0, Words = 0;
    for (int64_t P = F.StartInstr; P < F.EndInstr; ++P) {
      vm::InstrView In = Exe.instr(P);
      Calls += In.opcode() == vm::Opcode::Call;
      Words += In.numWords();
    }
    E["params"] = F.NumParams;
    E["registers"] = F.RegisterFileSize;
    E["instructions"] = F.numInstrs();
    E["calls"] = Calls;
    E["words"] = Words;
  }
  return E;
}

/// One row of vmStatsJson's "functions".
ordered_json functionRow(const vm::FunctionStats &F) {
  ordered_json E;
  E["name"] = F.Name;
  E["kind"] = std::string(vm::functionKindName(F.Kind));
  E["calls"] = F.Calls;
  E["tier"] = F.Tier;
  if (F.Kind != vm::FunctionKind::Bytecode)
    return E;
  E["backward_jumps"] = F.BackwardJumps;
  E["osr_entries"] = F.OsrEntries;
  double CompileMs = 0;
  if (const std::optional<vm::TierStats> &JS = F.JIT) {
    E["calls_by_tier"] = {{"interpreter", F.InterpretedCalls},
                          {"baseline", F.BaselineCalls},
                          {"optimized", F.OptimizedCalls}};
    CompileMs = JS->CompileMs;
    if (JS->UnitFunctions > 1)
      E["unit_compile_ms"] = JS->UnitCompileMs;
    E["baseline"] = JS->Baseline;
    E["baseline_us"] = JS->BaselineUs;
    E["compiled"] = JS->Compiled;
    E["cache_hit"] = JS->CacheHit;
    if (JS->UnitFunctions > 1)
      E["unit_functions"] = JS->UnitFunctions;
    if (!F.Tier2State.empty())
      E["tier2"] = F.Tier2State;
    if (JS->Failed)
      E["compile_failed"] = true;
  }
  E["compile_ms"] = CompileMs;
  return E;
}

} // namespace

ordered_json executableStatsJson(const vm::Executable &Exe) {
  ordered_json J;
  std::map<std::string, int64_t> KindCounts;
  ordered_json Fns = ordered_json::array();
  for (size_t I = 0; I < Exe.functions().size(); ++I) {
    Fns.push_back(functionTableRow(Exe, I));
    ++KindCounts[Fns.back()["kind"].get<std::string>()];
  }
  ordered_json Counts = ordered_json::object();
  for (const char *K : {"bytecode", "packed", "native"})
    Counts[K] = KindCounts[K];
  J["functions"] = {{"count", Exe.functions().size()}, {"by_kind", Counts}};

  std::map<std::string, int64_t> ConstCounts;
  uint64_t TensorBytes = 0;
  for (const Any &C : Exe.constants()) {
    ++ConstCounts[constantKind(C)];
    if (auto T = C.as<Tensor>())
      TensorBytes += T->nbytes();
  }
  J["constants"] = {{"count", Exe.constants().size()},
                    {"by_kind", ConstCounts},
                    {"tensor_bytes", TensorBytes}};
  J["instructions"] = Exe.numInstrs();
  J["code_words"] = Exe.code().size();
  J["function_table"] = std::move(Fns);
  return J;
}

ordered_json vmStatsJson(const vm::VirtualMachine &VM, bool CompileCounts) {
  ordered_json S = ordered_json::object();
  ordered_json Fns = ordered_json::array();
  int64_t Compiles = 0, CacheHits = 0, BaselineCompiles = 0;
  for (const vm::FunctionStats &F : vm::collectFunctionStats(VM)) {
    if (const std::optional<vm::TierStats> &JS = F.JIT) {
      Compiles += JS->Compiled && !JS->CacheHit;
      CacheHits += JS->Compiled && JS->CacheHit;
      BaselineCompiles += JS->Baseline;
    }
    Fns.push_back(functionRow(F));
  }
  if (CompileCounts) {
    S["baseline_compiles"] = BaselineCompiles;
    S["compiles"] = Compiles;
    S["cache_hits"] = CacheHits;
  }
  S["functions"] = std::move(Fns);
  return S;
}

} // namespace vmjit::report
