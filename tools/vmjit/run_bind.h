//===- run_bind.h - `vmjit run --bind` --------------------------*- C++ -*-===//
//
// The parameters `vmjit run --bind NAME=FILE.npy` (or INDEX=FILE.npy) binds
// before the calls (vm/bind_params.h), and what `--stats` says of them.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TOOLS_VMJIT_RUN_BIND_H
#define VMJIT_TOOLS_VMJIT_RUN_BIND_H

#include "vmjit/vm/bind_params.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace vmjit::tool {

/// The binding `--bind TEXT` names, its tensor read from the file; a
/// UsageError naming the option for a malformed one.
vm::ParamBinding parseBindOption(const std::string &Text);

/// report::bindStatsJson's object as text lines for `--stats` (on
/// standard error).
void printBindStats(const nlohmann::ordered_json &Bind);

} // namespace vmjit::tool

#endif // VMJIT_TOOLS_VMJIT_RUN_BIND_H
