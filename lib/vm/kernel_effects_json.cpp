//===- kernel_effects_json.cpp - Kernel effects as JSON -------------------===//
//
// See vmjit/vm/kernel_effects_json.h. nlohmann-json reads and writes it.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/kernel_effects_json.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace vmjit::vm {
namespace {

/// The names of ArgAccess's values, by value.
constexpr std::array<const char *, 4> kAccessNames = {"none", "read", "write",
                                                      "read_write"};

} // namespace

std::string
kernelEffectsJson(const std::map<std::string, KernelEffects> &Effects) {
  nlohmann::ordered_json J = nlohmann::ordered_json::object();
  for (const auto &[Name, E] : Effects) {
    nlohmann::ordered_json Args = nlohmann::ordered_json::array();
    for (ArgAccess A : E.Args)
      Args.push_back(kAccessNames[static_cast<size_t>(A)]);
    J[Name] = {{"only_argument_memory", E.OnlyArgumentMemory},
               {"args", std::move(Args)}};
  }
  return J.dump();
}

std::optional<std::map<std::string, KernelEffects>>
parseKernelEffectsJson(std::string_view Text, std::string &Why) {
  const nlohmann::json J = nlohmann::json::parse(Text, nullptr, false);
  if (J.is_discarded() || !J.is_object()) {
    Why = "the kernels' effects are not a JSON object";
    return std::nullopt;
  }
  std::map<std::string, KernelEffects> Out;
  for (const auto &[Name, E] : J.items()) {
    auto Only = E.find("only_argument_memory");
    auto Args = E.find("args");
    if (!E.is_object() || Only == E.end() || !Only->is_boolean() ||
        Args == E.end() || !Args->is_array()) {
      Why = "the effects of kernel '" + Name + "' are malformed";
      return std::nullopt;
    }
    KernelEffects K;
    K.OnlyArgumentMemory = Only->get<bool>();
    for (const nlohmann::json &A : *Args) {
      auto It = A.is_string()
                    ? std::find(kAccessNames.begin(), kAccessNames.end(),
                                A.get_ref<const std::string &>())
                    : kAccessNames.end();
      if (It == kAccessNames.end()) {
        Why = "kernel '" + Name + "' has an unknown argument access";
        return std::nullopt;
      }
      K.Args.push_back(static_cast<ArgAccess>(It - kAccessNames.begin()));
    }
    Out.emplace(Name, std::move(K));
  }
  return Out;
}

} // namespace vmjit::vm
