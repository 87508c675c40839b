//===- run_bind.cpp - `vmjit run --bind` ----------------------------------===//
//
// Parsing `--bind NAME=FILE.npy` and the bind object of `--stats`.
//
//===----------------------------------------------------------------------===//

#include "run_bind.h"

#include "vmjit/files/npy.h"
#include "vmjit/runtime/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace vmjit::tool {

vm::ParamBinding parseBindOption(const std::string &Text) {
  const size_t Eq = Text.find('=');
  if (Eq == std::string::npos || Eq == 0 || Eq + 1 == Text.size())
    throwError("UsageError", fmt::format("--bind {}: expected NAME=FILE.npy or "
                                         "INDEX=FILE.npy",
                                         Text));
  const std::string Name = Text.substr(0, Eq);
  Tensor Value = vm::readNpy(Text.substr(Eq + 1));
  const bool IsIndex =
      Name.size() < 10 && std::all_of(Name.begin(), Name.end(), [](char C) {
        return std::isdigit(static_cast<unsigned char>(C));
      });
  if (IsIndex)
    return vm::ParamBinding(std::stoll(Name), std::move(Value));
  return vm::ParamBinding(Name, std::move(Value));
}

void printBindStats(const nlohmann::ordered_json &Bind) {
  std::vector<std::string> Params;
  for (const auto &P : Bind["params"])
    Params.push_back(P.is_string() ? P.get<std::string>() : P.dump());
  fmt::print(stderr, "bound: {}({}); folded calls: {}\n",
             Bind["function"].get<std::string>(), fmt::join(Params, ", "),
             Bind["folded"].size());
  for (const auto &F : Bind["folded"])
    fmt::print(stderr, "  folded: function '{}', instruction {} (call '{}')\n",
               F["function"].get<std::string>(),
               F["instruction"].get<int64_t>(), F["callee"].get<std::string>());
}

} // namespace vmjit::tool
