//===- vmjit/jit/jit_environment.h - The JIT's environment ------*- C++ -*-===//
//
// The environment variables that set JIT options (docs/jit.md), read in
// one place: VMJIT_TIER_THRESHOLD, VMJIT_BASELINE_THRESHOLD,
// VMJIT_DEOPT_STRESS and VMJIT_CACHE_DIR, and the default cache directory
// ($XDG_CACHE_HOME/vmjit, else $HOME/.cache/vmjit).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_JIT_ENVIRONMENT_H
#define VMJIT_JIT_JIT_ENVIRONMENT_H

#include <string>

namespace vmjit::jit {

struct JITOptions;

/// `Given` with what the environment sets where the options leave it
/// open: thresholds of 0 from VMJIT_TIER_THRESHOLD and
/// VMJIT_BASELINE_THRESHOLD (else the defaults), DeoptStress from
/// VMJIT_DEOPT_STRESS=1, an empty CacheDir from VMJIT_CACHE_DIR (none at
/// all under NoCache).
JITOptions withEnvironment(const JITOptions &Given);

/// The object cache directory a command-line tool uses by default:
/// $XDG_CACHE_HOME/vmjit, else $HOME/.cache/vmjit; empty when neither
/// variable is set.
std::string defaultCacheDir();

/// The object cache directory of a run: `Given` when not empty, else
/// VMJIT_CACHE_DIR when set, else defaultCacheDir().
std::string cacheDirFor(const std::string &Given);

} // namespace vmjit::jit

#endif // VMJIT_JIT_JIT_ENVIRONMENT_H
