//===- vmjit/report/stats_json.h - Statistics as JSON -----------*- C++ -*-===//
//
// The statistics documents that `vmjit stats --json`, `vmjit run --stats
// --json` and the Python package (Executable.stats(), VirtualMachine.stats())
// all return: one computation, one set of key names (see the command
// reference, docs/command.md).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_REPORT_STATS_JSON_H
#define VMJIT_REPORT_STATS_JSON_H

#include "vmjit/runtime/library.h"
#include "vmjit/vm/bind_params.h"

#include <memory>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace vmjit::vm {
class Executable;
class VirtualMachine;
} // namespace vmjit::vm

namespace vmjit::report {

/// What an executable holds: "functions" (count, by_kind), "constants"
/// (count, by_kind, tensor_bytes), "instructions", "code_words" and
/// "function_table" (index, name, kind, params, registers, instructions,
/// calls, words per function). With the libraries the program came with
/// (a model library), native functions also say whether a library holds
/// their TVM compiled-mode code ("tvm_compiled", and "functions" counts
/// them as "tvm_compiled").
nlohmann::ordered_json executableStatsJson(
    const vm::Executable &Exe,
    const std::vector<std::shared_ptr<KernelLibrary>> &Libraries = {});

/// What a VM did with each function: with `CompileCounts` (builds with
/// the JIT), "baseline_compiles", "compiles" and "cache_hits"; then
/// "functions", one object per row of vm::collectFunctionStats (name,
/// kind, calls, tier, ...).
nlohmann::ordered_json vmStatsJson(const vm::VirtualMachine &VM,
                                   bool CompileCounts);

/// What binding parameters did (`vmjit run --bind`'s and Python's
/// bind_params' "bind" in the stats): "function", "params" (names, or
/// indices for those bound by index) and "folded" (function, callee,
/// instruction per folded call).
nlohmann::ordered_json bindStatsJson(const std::string &Func,
                                     const std::vector<vm::ParamBinding> &P,
                                     const vm::BindResult &B);

/// executableStatsJson's document as text, the way `vmjit stats` prints
/// it (everything after its "file:" line).
std::string executableStatsText(const nlohmann::ordered_json &J);

/// vmStatsJson's "functions" as the table `vmjit run --stats` prints (the
/// header line, then one line per function).
std::string vmStatsTable(const nlohmann::ordered_json &S);

} // namespace vmjit::report

#endif // VMJIT_REPORT_STATS_JSON_H
