//===- native_stack.h - The native stack JIT code runs on ------*- C++ -*-===//
//
// JIT code (both tiers and `vmjit compile` output) recurses on the native
// stack of the thread that calls the VM; the interpreter keeps its frames
// on the heap. Before native code is entered, vmjit checks that enough of
// that stack is left; where it is not, or where vmjit cannot see the stack
// (a fiber's or a coroutine's, allocated by the program), the call runs on
// the interpreter instead: same results, errors and steps, no overflow.
// A program that switches stacks declares each one to keep native speed.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_NATIVE_STACK_H
#define VMJIT_VM_NATIVE_STACK_H

#include <cstddef>
#include <cstdint>

namespace vmjit::vm {

/// What native code keeps free below its frames on a stack of `Size`
/// bytes: a quarter of the stack, at least 128 KiB (one frame's largest
/// argument area, 64 KiB, and the kernels it calls), at most 256 KiB. A
/// stack of 128 KiB or less runs every call on the interpreter.
size_t nativeStackReserve(size_t Size) noexcept;

/// Declares that the calling thread now runs on the stack [Base, Base +
/// Size) (Base its lowest address), until the next call: after switching
/// to a fiber, before calling a VM on it. A Size of 0 forgets the
/// declaration: the thread's own stack (from pthread_getattr_np) again.
void setNativeStack(void *Base, size_t Size) noexcept;

/// setNativeStack for a scope, restoring the declaration before it.
class NativeStackScope {
public:
  NativeStackScope(void *Base, size_t Size) noexcept;
  ~NativeStackScope();
  NativeStackScope(const NativeStackScope &) = delete;
  NativeStackScope &operator=(const NativeStackScope &) = delete;

private:
  uintptr_t PrevLow, PrevHigh;
};

/// Whether native code may be entered here: the current frame is on the
/// declared stack or the thread's own, above its reserve.
bool nativeStackAvailable() noexcept;

/// After nativeStackAvailable() said yes: the lowest address native code
/// may reach on this stack (its reserve's top), which direct calls between
/// native frames compare their frame address with (NativeContext).
uintptr_t nativeStackLimit() noexcept;

/// Whether the current frame is on a known stack (declared or the thread's
/// own) and within half its reserve of the end: a nested run of the
/// interpreter (a call that re-enters the VM: invoke_closure of a bytecode
/// function, a packed function calling the VM) is refused there with a
/// RecursionError, as each nests a dispatch loop on the C stack. False on a
/// stack vmjit does not know.
bool nativeStackNearlyExhausted() noexcept;

/// Both questions in one look at the thread's state, as every native entry
/// asks them: nativeStackLimit() when nativeStackAvailable(), else 0.
uintptr_t availableNativeStackLimit() noexcept;

} // namespace vmjit::vm

#endif // VMJIT_VM_NATIVE_STACK_H
