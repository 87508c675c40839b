//===- tier_registry.h - Engines and managers of a process ------*- C++ -*-===//
//
// One engine (one LLJIT) per distinct set of engine options, and one tier
// manager per executable, callee bindings and JIT options, for the whole
// process: VMs of one program share compiled code. Internal to jit/.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_TIER_REGISTRY_H
#define VMJIT_JIT_TIER_REGISTRY_H

#include "vmjit/jit/engine.h"
#include "vmjit/jit/tier_manager.h"

#include <memory>

namespace vmjit::jit {

/// The process's engine for options `O`, started on first use.
std::shared_ptr<Engine> sharedEngine(const EngineOptions &O);

/// The process's tier manager for `VM`'s executable, its bindings
/// (bindCallees) and `Opts` (with the environment applied), made on first
/// use.
std::shared_ptr<TierManager> sharedTierManager(const vm::VirtualMachine &VM,
                                               const JITOptions &Opts);

} // namespace vmjit::jit

#endif // VMJIT_JIT_TIER_REGISTRY_H
