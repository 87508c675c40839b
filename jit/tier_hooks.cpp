//===- tier_hooks.cpp - The C entry points native code calls --------------===//
//
// What tier-1 and tier-2 code call by symbol (runtime_helpers.h): a failed
// guard's deoptimization and a hot tier-1 function's request for tier 2.
//
//===----------------------------------------------------------------------===//

#include "baseline/baseline_compiler.h"
#include "runtime_helpers.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/logging.h"

extern "C" int vmjit_tier2_deopt(void *Manager, vmjit::vm::NativeContext *Ctx,
                                 vmjit::Any *Regs, const vmjit::Any *Consts,
                                 std::atomic<vmjit::FunctionObj *> *Funcs,
                                 int64_t Site, int64_t ResumePC) {
  return static_cast<vmjit::jit::TierManager *>(Manager)->deoptimize(
      Ctx, Regs, Consts, Funcs, Site, ResumePC);
}

extern "C" void vmjit_baseline_hot(void *P) {
  auto *Site = static_cast<vmjit::jit::baseline::TierUpSite *>(P);
  // Counted down once: the request is made; stop counting.
  __atomic_store_n(&Site->Countdown, INT64_MAX, __ATOMIC_RELAXED);
  try {
    static_cast<vmjit::jit::TierManager *>(Site->Manager)
        ->requestOptimized(Site->Func);
  } catch (const std::exception &E) {
    vmjit::logger().warn("cannot queue function {} for tier 2: {}", Site->Func,
                         E.what());
  }
}
