//===- context_layout.h - Offsets of what JIT code reads --------*- C++ -*-===//
//
// Private to jit/: the byte offsets of the VM's structures that tier-2 code
// reads and writes (vm/native_code.h pins them beside the types), named
// once for the lowering and the direct entries.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CONTEXT_LAYOUT_H
#define VMJIT_JIT_CONTEXT_LAYOUT_H

#include "vmjit/vm/native_code.h"

#include <cstddef>
#include <cstdint>

namespace vmjit::jit {

// NativeContext.
inline constexpr int64_t kOffsetVM = offsetof(vm::NativeContext, VM);
inline constexpr int64_t kOffsetResult = offsetof(vm::NativeContext, Result);
inline constexpr int64_t kOffsetErrorPC = offsetof(vm::NativeContext, ErrorPC);
inline constexpr int64_t kOffsetControl = offsetof(vm::NativeContext, Control);
inline constexpr int64_t kOffsetFunc = offsetof(vm::NativeContext, Func);
inline constexpr int64_t kOffsetSites = offsetof(vm::NativeContext, Sites);
inline constexpr int64_t kOffsetCallCounts =
    offsetof(vm::NativeContext, CallCounts);
inline constexpr int64_t kOffsetDepth = offsetof(vm::NativeContext, Depth);
inline constexpr int64_t kOffsetStackLimit =
    offsetof(vm::NativeContext, StackLimit);
inline constexpr int64_t kOffsetState = offsetof(vm::NativeContext, State);
// StepControl.
inline constexpr int64_t kOffsetFuel = offsetof(vm::StepControl, Fuel);
inline constexpr int64_t kOffsetInterrupt =
    offsetof(vm::StepControl, Interrupt);
// NativeCallState.
inline constexpr int64_t kOffsetNativeDepth =
    offsetof(vm::NativeCallState, NativeDepth);
inline constexpr int64_t kOffsetMaxDepth =
    offsetof(vm::NativeCallState, MaxDepth);
inline constexpr int64_t kOffsetLiveRegisters =
    offsetof(vm::NativeCallState, LiveRegisters);
inline constexpr int64_t kOffsetMaxRegisters =
    offsetof(vm::NativeCallState, MaxRegisters);
inline constexpr int64_t kOffsetObserving =
    offsetof(vm::NativeCallState, Observing);

} // namespace vmjit::jit

#endif // VMJIT_JIT_CONTEXT_LAYOUT_H
