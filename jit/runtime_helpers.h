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
}

namespace vmjit::jit {
namespace helper = vm::helper;
/// Name -> address of every helper tier-2 code calls
/// (VMJIT_NATIVE_HELPERS), for binding into JIT units.
std::map<std::string, uint64_t> runtimeHelperSymbols();
} // namespace vmjit::jit

#endif // VMJIT_JIT_RUNTIME_HELPERS_H
