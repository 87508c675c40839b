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
/// Drops one strong reference of `O` (the out-of-line release of
/// register-file code: flat lowering, see jit/lowering.cpp).
void vmjit_jit_release(VMJITObject *O);
/// Adds one strong reference to `O` (flat lowering).
void vmjit_jit_retain(VMJITObject *O);
/// Releases registers [0, N) of a frame and leaves them None: the exit of
/// a flat-lowered function.
void vmjit_jit_release_frame(VMJITAny *Regs, int64_t N);
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

/// The helpers tier-2 code calls, by symbol: the one list that both the
/// lowering (which declares them) and the binding (runtimeHelperSymbols)
/// read, as ORC's OrcRTBridge.h declares its runtime's names once.
#define VMJIT_JIT_HELPERS(X)                                                   \
  X(vmjit_jit_destroy)                                                         \
  X(vmjit_jit_release)                                                         \
  X(vmjit_jit_retain)                                                          \
  X(vmjit_jit_release_frame)                                                   \
  X(vmjit_jit_if_error)                                                        \
  X(vmjit_jit_step)

namespace vmjit::jit {
namespace helper {
#define VMJIT_HELPER_NAME(N) inline constexpr const char *N = #N;
VMJIT_JIT_HELPERS(VMJIT_HELPER_NAME)
#undef VMJIT_HELPER_NAME
} // namespace helper
/// Name -> address of every helper, for binding into JIT units.
std::map<std::string, uint64_t> runtimeHelperSymbols();
} // namespace vmjit::jit

#endif // VMJIT_JIT_RUNTIME_HELPERS_H
