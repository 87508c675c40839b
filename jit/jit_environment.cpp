//===- jit_environment.cpp - The JIT's environment variables --------------===//
//
// See include/vmjit/jit/jit_environment.h.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/tier_manager.h"

#include <cstdlib>
#include <string_view>

namespace vmjit::jit {

namespace {

/// The value of `Var`, or null when it is unset or empty.
const char *variable(const char *Var) {
  const char *Value = std::getenv(Var);
  return Value && *Value ? Value : nullptr;
}

/// `T` when positive, else `Var`'s positive value, else `Default`.
int64_t threshold(int64_t T, const char *Var, int64_t Default) {
  if (T > 0)
    return T;
  if (const char *Env = variable(Var))
    if (long long V = std::atoll(Env); V > 0)
      return V;
  return Default;
}

} // namespace

JITOptions withEnvironment(const JITOptions &Given) {
  JITOptions Opts = Given;
  Opts.Threshold =
      threshold(Opts.Threshold, "VMJIT_TIER_THRESHOLD", kDefaultTierThreshold);
  Opts.BaselineThreshold =
      threshold(Opts.BaselineThreshold, "VMJIT_BASELINE_THRESHOLD",
                kDefaultBaselineThreshold);
  if (const char *Env = variable("VMJIT_DEOPT_STRESS");
      Env && std::string_view(Env) == "1")
    Opts.DeoptStress = true;
  if (Opts.NoCache)
    Opts.CacheDir.clear();
  else if (Opts.CacheDir.empty())
    if (const char *Env = std::getenv("VMJIT_CACHE_DIR"))
      Opts.CacheDir = Env;
  return Opts;
}

std::string defaultCacheDir() {
  if (const char *Xdg = variable("XDG_CACHE_HOME"))
    return std::string(Xdg) + "/vmjit";
  if (const char *Home = variable("HOME"))
    return std::string(Home) + "/.cache/vmjit";
  return "";
}

std::string cacheDirFor(const std::string &Given) {
  if (!Given.empty())
    return Given;
  if (const char *Env = variable("VMJIT_CACHE_DIR"))
    return Env;
  return defaultCacheDir();
}

} // namespace vmjit::jit
