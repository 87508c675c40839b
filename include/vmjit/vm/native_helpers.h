//===- vmjit/vm/native_helpers.h - C functions that native code calls -*- C++ -*-===//
//
// The helpers that tier-2 code calls, whether the JIT made it in this
// process or `vmjit compile` made it ahead of time: releasing objects,
// the error of a bad `if` condition, the slow path of a step. They live
// in the VM, not the JIT library, so that ahead-of-time code runs in a
// build without LLVM. Declared once here, as ORC's OrcRTBridge.h declares
// its runtime's names: the lowering (which calls them by these symbols),
// the JIT's binding of those symbols and the ahead-of-time loader all read
// VMJIT_NATIVE_HELPERS.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_NATIVE_HELPERS_H
#define VMJIT_VM_NATIVE_HELPERS_H

#include "vmjit/runtime/c_api.h"
#include "vmjit/vm/native_code.h"

#include <string_view>

extern "C" {
/// The last strong reference of `O` was dropped by native code; `Old` is
/// the combined count before the decrement.
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
/// The slow path of a step taken by native code: 0, or -1 with an error.
int vmjit_jit_step(vmjit::vm::NativeContext *Ctx);
/// A direct call's callee (the frame of `Ctx`) failed: adds its frame line
/// to the raised error, as the pool entry of native code does.
void vmjit_jit_callee_frame(vmjit::vm::NativeContext *Ctx);
/// The standard vm.builtin.alloc_tensor called at instruction `PC` of the
/// function Ctx runs, through the VM's cache of that call site
/// (vm/alloc_sites.h); the safe-call convention: 0 with the tensor in
/// `*Result`, or -1 with the error raised.
int vmjit_jit_alloc_tensor(vmjit::vm::NativeContext *Ctx, int64_t PC,
                           const VMJITAny *Args, int32_t N, VMJITAny *Result);
/// The standard vm.builtin.alloc_storage, likewise.
int vmjit_jit_alloc_storage(vmjit::vm::NativeContext *Ctx, int64_t PC,
                            const VMJITAny *Args, int32_t N, VMJITAny *Result);
/// The standard vm.builtin.make_shape, likewise.
int vmjit_jit_make_shape(vmjit::vm::NativeContext *Ctx, int64_t PC,
                         const VMJITAny *Args, int32_t N, VMJITAny *Result);
}

/// Every helper, by symbol.
#define VMJIT_NATIVE_HELPERS(X)                                                \
  X(vmjit_jit_destroy)                                                         \
  X(vmjit_jit_release)                                                         \
  X(vmjit_jit_retain)                                                          \
  X(vmjit_jit_release_frame)                                                   \
  X(vmjit_jit_if_error)                                                        \
  X(vmjit_jit_step)                                                            \
  X(vmjit_jit_callee_frame)                                                    \
  X(vmjit_jit_alloc_tensor)                                                    \
  X(vmjit_jit_alloc_storage)                                                   \
  X(vmjit_jit_make_shape)

namespace vmjit::vm {
namespace helper {
#define VMJIT_HELPER_NAME(N) inline constexpr const char *N = #N;
VMJIT_NATIVE_HELPERS(VMJIT_HELPER_NAME)
#undef VMJIT_HELPER_NAME
} // namespace helper

/// The address of the helper named `Name`, or null if there is none.
void *nativeHelperAddress(std::string_view Name) noexcept;

} // namespace vmjit::vm

#endif // VMJIT_VM_NATIVE_HELPERS_H
