//===- runtime_helpers.h - C functions that JIT code calls -----------------===//

#ifndef VMJIT_JIT_RUNTIME_HELPERS_H
#define VMJIT_JIT_RUNTIME_HELPERS_H

#include "vmjit/runtime/c_api.h"
#include "vmjit/vm/native_code.h"

#include <map>
#include <string>

extern "C" {
/// The last strong reference of `O` was dropped by JIT code; `Old` is the
/// combined count before the decrement.
void vmjit_jit_destroy(VMJITObject *O, uint64_t Old);
/// Raises the TypeError of an `if` on a value that is not an int or bool.
int vmjit_jit_if_error(const VMJITAny *Cond);
/// The slow path of a step taken by JIT code: 0, or -1 with an error.
int vmjit_jit_step(vmjit::vm::NativeContext *Ctx);
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
/// Name -> address of every helper, for binding into JIT units.
std::map<std::string, uint64_t> runtimeHelperSymbols();
} // namespace vmjit::jit

#endif // VMJIT_JIT_RUNTIME_HELPERS_H
