//===- tier_registry.cpp - Engines and managers shared in a process -------===//
//
// See tier_registry.h.
//
//===----------------------------------------------------------------------===//

#include "tier_registry.h"
#include "vmjit/jit/engine.h"
#include "vmjit/runtime/error.h"

#include <fmt/format.h>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace vmjit::jit {

namespace {

/// The pipeline of level 1 (the tier-up level): promotion of registers to
/// SSA values, local clean-up and CFG simplification. The default O1
/// pipeline's jump threading duplicates blocks along the correlated type
/// guards of inlined builtins, which made a 100-instruction function take
/// seconds to compile; this one stays near-linear (see docs/jit.md). First
/// the kernels tier 2 inlines (jit/kernel_inline.h; none: nothing to do);
/// the second sroa and early-cse, once the branches on the arguments' type
/// indices are folded, turn the DLTensors those kernels read into their
/// constants, and their checks fold (docs/jit.md#tensors-on-the-stack).
constexpr const char *kTierUpPipeline =
    "always-inline,function(sroa,early-cse,sccp,simplifycfg,sroa,early-cse,"
    "instcombine<no-verify-fixpoint>,simplifycfg)";

std::string engineKey(const EngineOptions &O) {
  return fmt::format("O{}|CG{}|{}|{}|{}|{}|{}|{}", O.OptLevel,
                     O.CodegenOptLevel, O.Pipeline, O.CacheDir, O.PerfSupport,
                     O.DebuggerSupport, O.Polly, O.FastMath);
}

/// The engine options of a manager's engine.
EngineOptions engineOptions(const JITOptions &Opts) {
  EngineOptions EO;
  EO.OptLevel = Opts.OptLevel;
  EO.Pipeline = Opts.OptLevel == 1 ? kTierUpPipeline : "";
  EO.CacheDir = Opts.CacheDir;
  EO.PerfSupport = Opts.PerfSupport;
  EO.DebuggerSupport = Opts.DebuggerSupport;
  return EO;
}

/// What managers are shared by: the executable, the bindings and every
/// option that changes the code or the tiering. Baseline mode's tier-1
/// code does not count toward tier 2; the other modes share code.
std::string managerKey(const vm::VirtualMachine &VM, const BoundCallees &B,
                       const EngineOptions &EO, const JITOptions &Opts) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                     static_cast<const void *>(&VM.executable()), B.Key,
                     engineKey(EO), Opts.PromoteLimit, Opts.Threshold,
                     Opts.BaselineThreshold, Opts.UseBaseline,
                     Opts.Mode == vm::ExecMode::Baseline, Opts.Background,
                     Opts.FailCompilesForTesting) +
         fmt::format("|{}|{}|{}", Opts.Speculate, Opts.DeoptStress,
                     Opts.OwnedArguments);
}

} // namespace

std::shared_ptr<Engine> sharedEngine(const EngineOptions &O) {
  static std::mutex Mutex;
  static std::map<std::string, std::weak_ptr<Engine>> Engines;
  std::lock_guard Lock(Mutex);
  std::erase_if(Engines, [](const auto &KV) { return KV.second.expired(); });
  std::string Key = engineKey(O);
  if (auto E = Engines[Key].lock())
    return E;
  llvm::Expected<std::unique_ptr<Engine>> Made = Engine::tryCreate(O);
  if (!Made)
    throwError("JITError",
               "cannot start the JIT: " + llvm::toString(Made.takeError()));
  std::shared_ptr<Engine> E = std::move(*Made);
  Engines[Key] = E;
  return E;
}

/// The process's managers, by managerKey.
class TierManagerRegistry {
public:
  /// Keys that map to a manager, alive or (until the next get) expired.
  static size_t size() {
    std::lock_guard Lock(Mutex);
    return Managers.size();
  }

  static std::shared_ptr<TierManager> get(const vm::VirtualMachine &VM,
                                          const JITOptions &Opts) {
    // Bound under the lock: kernels published meanwhile are either seen
    // here or, their rebinding listing the managers after this, taken up
    // by the manager made (rebindPublishedKernels).
    std::lock_guard Lock(Mutex);
    BoundCallees B = bindCallees(VM, Opts.InlineBuiltins);
    const EngineOptions EO = engineOptions(Opts);
    const std::string Key = managerKey(VM, B, EO, Opts);
    // Expired keys go, or a process making executables grows without end.
    std::erase_if(Managers, [](const auto &KV) { return KV.second.expired(); });
    if (auto M = Managers[Key].lock())
      return M;
    std::shared_ptr<Engine> Eng = sharedEngine(EO);
    // Large units get O0 codegen: at O1 codegen time grows steeply with
    // size (a 1000-instruction function took 22 s, 0.3 s at O0).
    EngineOptions Large = EO;
    Large.CodegenOptLevel = 0;
    std::shared_ptr<Engine> LargeEng =
        EO.OptLevel == 0 ? Eng : sharedEngine(Large);
    std::shared_ptr<TierManager> M = TierManager::create(
        VM, Opts, std::move(Eng), std::move(LargeEng), std::move(B));
    Managers[Key] = M;
    return M;
  }

  /// The managers alive now.
  static std::vector<std::shared_ptr<TierManager>> live() {
    std::lock_guard Lock(Mutex);
    std::vector<std::shared_ptr<TierManager>> Out;
    for (const auto &KV : Managers)
      if (std::shared_ptr<TierManager> M = KV.second.lock())
        Out.push_back(std::move(M));
    return Out;
  }

private:
  static std::mutex Mutex;
  static std::map<std::string, std::weak_ptr<TierManager>> Managers;
};
std::mutex TierManagerRegistry::Mutex;
std::map<std::string, std::weak_ptr<TierManager>> TierManagerRegistry::Managers;

std::shared_ptr<TierManager> sharedTierManager(const vm::VirtualMachine &VM,
                                               const JITOptions &Opts) {
  return TierManagerRegistry::get(VM, Opts);
}

size_t tierManagerRegistrySize() { return TierManagerRegistry::size(); }

void rebindPublishedKernels() {
  // Outside the registry's lock: a rebinding may compile (synchronously,
  // without background compiles), which may make managers.
  for (const std::shared_ptr<TierManager> &M : TierManagerRegistry::live())
    M->rebindKernels();
}

} // namespace vmjit::jit
