//===- stats_json.cpp - Statistics as JSON --------------------------------===//

#include "vmjit/report/stats_json.h"

#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/function_stats.h"
#include "vmjit/vm/virtual_machine.h"

#include <algorithm>
#include <fmt/format.h>
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
  // Uncounted (JIT code ran the builtin inline): no number rather than
  // the interpreter's share of it.
  if (F.CallsCounted)
    E["calls"] = F.Calls;
  else
    E["calls"] = nullptr;
  E["tier"] = F.Tier;
  if (!F.CallsCounted)
    E["calls_counted"] = false;
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
    if (JS->Baseline) {
      E["baseline_bytes"] = JS->BaselineBytes;
      E["baseline_hot_bytes"] = JS->BaselineHotBytes;
    }
    E["compiled"] = JS->Compiled;
    if (JS->AheadOfTime)
      E["aot"] = true;
    E["cache_hit"] = JS->CacheHit;
    if (JS->CacheHit)
      E["cache_load_ms"] = JS->CacheLoadMs;
    if (JS->UnitFunctions > 1)
      E["unit_functions"] = JS->UnitFunctions;
    if (JS->Compiled && !JS->AheadOfTime) {
      E["deopts"] = JS->Deopts;
      E["tier2_recompiles"] = JS->Recompiles;
    }
    if (JS->KernelRecompiles > 0)
      E["tier2_kernel_recompiles"] = JS->KernelRecompiles;
    if (!F.Tier2State.empty())
      E["tier2"] = F.Tier2State;
    if (JS->Failed)
      E["compile_failed"] = true;
  }
  E["compile_ms"] = CompileMs;
  return E;
}

} // namespace

ordered_json
executableStatsJson(const vm::Executable &Exe,
                    const std::vector<std::shared_ptr<KernelLibrary>> &Libs) {
  ordered_json J;
  std::map<std::string, int64_t> KindCounts;
  ordered_json Fns = ordered_json::array();
  for (size_t I = 0; I < Exe.functions().size(); ++I) {
    Fns.push_back(functionTableRow(Exe, I));
    ++KindCounts[Fns.back()["kind"].get<std::string>()];
    const vm::FunctionInfo &F = Exe.function(static_cast<int64_t>(I));
    if (F.Kind == vm::FunctionKind::Native && !Libs.empty()) {
      const std::string Symbol = std::string(vm::tvmfmt::kVMTIRPrefix) + F.Name;
      bool Found = false;
      for (const auto &L : Libs)
        Found = Found || L->find(Symbol).has_value();
      Fns.back()["tvm_compiled"] = Found;
      KindCounts["tvm_compiled"] += Found;
    }
  }
  ordered_json Counts = ordered_json::object();
  for (const char *K : {"bytecode", "packed", "native"})
    Counts[K] = KindCounts[K];
  if (KindCounts["tvm_compiled"] > 0)
    Counts["tvm_compiled"] = KindCounts["tvm_compiled"];
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
      Compiles += JS->Compiled && !JS->CacheHit && !JS->AheadOfTime;
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

std::string executableStatsText(const ordered_json &J) {
  std::string Out;
  const auto &F = J["functions"];
  Out += fmt::format("functions: {} ({} bytecode, {} packed, {} native)\n",
                     F["count"].get<int64_t>(),
                     F["by_kind"]["bytecode"].get<int64_t>(),
                     F["by_kind"]["packed"].get<int64_t>(),
                     F["by_kind"]["native"].get<int64_t>());
  if (F["by_kind"].contains("tvm_compiled"))
    Out += fmt::format("  of which TVM-compiled (code in the library): {}\n",
                       F["by_kind"]["tvm_compiled"].get<int64_t>());
  const auto &C = J["constants"];
  std::string Kinds;
  for (const auto &[K, V] : C["by_kind"].items())
    Kinds +=
        fmt::format("{}{} {}", Kinds.empty() ? "" : ", ", V.get<int64_t>(), K);
  Out +=
      fmt::format("constants: {}{}{}, tensor data {} bytes\n",
                  C["count"].get<int64_t>(), Kinds.empty() ? "" : " (" + Kinds,
                  Kinds.empty() ? "" : ")", C["tensor_bytes"].get<uint64_t>());
  Out += fmt::format("instructions: {} ({} words)\n",
                     J["instructions"].get<int64_t>(),
                     J["code_words"].get<int64_t>());
  Out += fmt::format("\n{:>5}  {:<8}  {:<24}  {:>6}  {:>9}  {:>12}  {:>6}\n",
                     "index", "kind", "name", "params", "registers",
                     "instructions", "calls");
  for (const auto &E : J["function_table"]) {
    auto Num = [&](const char *K) {
      return E.contains(K) ? std::to_string(E[K].get<int64_t>())
                           : std::string("-");
    };
    Out += fmt::format("{:>5}  {:<8}  {:<24}  {:>6}  {:>9}  {:>12}  {:>6}\n",
                       E["index"].get<int64_t>(), E["kind"].get<std::string>(),
                       E["name"].get<std::string>(), Num("params"),
                       Num("registers"), Num("instructions"), Num("calls"));
  }
  return Out;
}

/// The text of one row's tier column: the tier, what tier 2 does with
/// the function, and whether its code came with the program.
static std::string tierText(const ordered_json &F) {
  std::string Tier = F["tier"].get<std::string>();
  if (F.contains("tier2")) {
    const std::string T2 = F["tier2"].get<std::string>();
    Tier += T2 == "not worth it" ? " (" + T2 + ")" : "+" + T2;
  }
  if (F.value("aot", false))
    Tier += "+aot";
  return Tier;
}

std::string vmStatsTable(const ordered_json &S) {
  // Columns as wide as their longest entry (TVM's names run long).
  size_t NameW = 20, TierW = 16;
  for (const auto &F : S["functions"]) {
    NameW = std::max(NameW, F["name"].get<std::string>().size());
    TierW = std::max(TierW, tierText(F).size());
  }
  std::string Out;
  Out +=
      fmt::format("{:<{}} {:<8} {:>11} {:<{}} {:>22} {:>11} {:>10} {:>4}\n",
                  "function", NameW, "kind", "calls", "tier", TierW,
                  "calls interp/base/opt", "baseline us", "compile ms", "osr");
  for (const auto &F : S["functions"]) {
    std::string ByTier = "-";
    if (F.contains("calls_by_tier")) {
      const auto &B = F["calls_by_tier"];
      ByTier = fmt::format("{}/{}/{}", B["interpreter"].get<uint64_t>(),
                           B["baseline"].get<uint64_t>(),
                           B["optimized"].get<uint64_t>());
    }
    // A cache hit compiled nothing.
    std::string Compile =
        F.value("cache_hit", false)
            ? std::string("cached")
            : fmt::format("{:.3f}", F.value("compile_ms", 0.0));
    // JIT code runs some builtins inline without counting them.
    std::string Calls = F.value("calls_counted", true)
                            ? std::to_string(F["calls"].get<uint64_t>())
                            : std::string("not counted");
    Out += fmt::format("{:<{}} {:<8} {:>11} {:<{}} {:>22} {:>11.1f} {:>10} "
                       "{:>4}\n",
                       F["name"].get<std::string>(), NameW,
                       F["kind"].get<std::string>(), Calls, tierText(F), TierW,
                       ByTier, F.value("baseline_us", 0.0), Compile,
                       F.value("osr_entries", uint64_t(0)));
  }
  return Out;
}

nlohmann::ordered_json bindStatsJson(const std::string &Func,
                                     const std::vector<vm::ParamBinding> &P,
                                     const vm::BindResult &B) {
  nlohmann::ordered_json Params = nlohmann::ordered_json::array();
  for (const vm::ParamBinding &Q : P) {
    if (Q.Name.empty())
      Params.push_back(Q.Index);
    else
      Params.push_back(Q.Name);
  }
  nlohmann::ordered_json Folded = nlohmann::ordered_json::array();
  for (const vm::FoldedCall &F : B.Folded)
    Folded.push_back({{"function", F.Function},
                      {"callee", F.Callee},
                      {"instruction", F.Instr}});
  return {{"function", Func}, {"params", Params}, {"folded", Folded}};
}

} // namespace vmjit::report
