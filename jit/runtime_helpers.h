//===- runtime_helpers.h - C functions that JIT code calls -----------------===//
//
// The helpers of tier-2 code live in the VM (vmjit/vm/native_helpers.h,
// shared with ahead-of-time code); this file adds the baseline tier's own
// and the binding of them all into JIT units.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_RUNTIME_HELPERS_H
#define VMJIT_JIT_RUNTIME_HELPERS_H

#include "vmjit/runtime/c_api.h"
#include "vmjit/vm/native_helpers.h"

#include <map>
#include <string>

extern "C" {
/// Baseline code of a function became hot (its TierUpSite counted down):
/// queue it for tier 2 (jit/tier_manager.cpp).
void vmjit_baseline_hot(void *Site);
/// Calls safe-call `Entry` with `Self` and moves its result into *Dst
/// (releasing the old value): the slow path of the baseline tier's inline
/// builtins. 0, or -1 with the callee's error raised.
int vmjit_baseline_call_into(VMJITAny *Dst, const VMJITAny *Args,
                             int32_t NumArgs, void *Entry, void *Self);
/// A guard of speculative tier-2 code failed at `Site` (a loop header or
/// pc 0 for an entry guard, a call's pc for the guard of its result): the
/// registers are in the frame again, and the frame goes on in tier-1 code
/// at `ResumePC`; returns that code's result (jit/tier_manager.cpp).
int vmjit_tier2_deopt(void *Manager, vmjit::vm::NativeContext *Ctx,
                      vmjit::Any *Regs, const vmjit::Any *Consts,
                      std::atomic<vmjit::FunctionObj *> *Funcs, int64_t Site,
                      int64_t ResumePC);
}

namespace vmjit::jit {
namespace helper = vm::helper;
/// The symbols of speculative tier-2 code: the deoptimization helper, and
/// the manager it is called with (bound to the TierManager's address).
inline constexpr const char *kDeoptHelper = "vmjit_tier2_deopt";
inline constexpr const char *kDeoptManager = "__vmjit_tier2_manager";
/// Name -> address of every helper tier-2 code calls
/// (VMJIT_NATIVE_HELPERS), for binding into JIT units.
std::map<std::string, uint64_t> runtimeHelperSymbols();
} // namespace vmjit::jit

#endif // VMJIT_JIT_RUNTIME_HELPERS_H
