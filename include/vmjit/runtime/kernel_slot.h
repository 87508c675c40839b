//===- vmjit/runtime/kernel_slot.h - A kernel's pool entry ------*- C++ -*-===//
//
// The Function a VM holds for one of TVM's kernels compiled for this CPU:
// by the JIT's kernel tier (jit/kernel_tier.h) or into a `vmjit compile
// --kernels` library. It calls the fallback (TVM's machine code, the
// model library's entry) until the compiled kernel is published, and that
// from the next call on: the swap is one atomic store, seen by every tier
// (the interpreter, tier 1 and tier 2 all call through the Function), by
// every VM holding the slot, and by TVM-compiled code (which calls through
// its function list). The compiled code assumes 64-byte aligned data, so
// a call with an unaligned tensor copies it (runtime/aligned_call.h).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_KERNEL_SLOT_H
#define VMJIT_RUNTIME_KERNEL_SLOT_H

#include "vmjit/runtime/function.h"

#include <atomic>
#include <cstdint>
#include <memory>

namespace vmjit {

class KernelSlotObj : public FunctionObj {
public:
  /// A slot of kernel `Name` calling `Fallback` (a Function with a free
  /// entry: TVM's machine code) until publish(). Without a fallback, the
  /// slot must be published before its first call, and a strided
  /// unaligned tensor is an error.
  VMJIT_DLL KernelSlotObj(std::string Name, Function Fallback);

  /// From the next call on, calls run `Compiled` (a free entry in `Code`,
  /// which the slot keeps alive). Once only; any thread.
  VMJIT_DLL void publish(VMJITSafeCallType Compiled,
                         std::shared_ptr<void> Code);
  /// The compiled entry, or null while TVM's code runs.
  VMJITSafeCallType compiled() const noexcept {
    return Compiled.load(std::memory_order_acquire);
  }
  /// Calls that ran TVM's code: before the swap, or with an unaligned
  /// strided tensor the copy could not take (statistics: calls made on
  /// several threads at once may be undercounted).
  uint64_t tvmCalls() const noexcept {
    return TvmCalls.load(std::memory_order_relaxed);
  }
  /// Calls of the compiled kernel with an unaligned tensor copied.
  uint64_t alignedCopies() const noexcept {
    return AlignedCopies.load(std::memory_order_relaxed);
  }

private:
  static int call(void *Self, const VMJITAny *Args, int32_t Num,
                  VMJITAny *Result) noexcept;
  int callUnaligned(VMJITSafeCallType Target, const VMJITAny *Args,
                    int32_t Num, VMJITAny *Result) noexcept;

  Function Fallback;
  VMJITSafeCallType Tvm; ///< Fallback's entry, or null
  std::atomic<VMJITSafeCallType> Compiled{nullptr};
  std::shared_ptr<void> Code;
  std::atomic<uint64_t> TvmCalls{0};
  std::atomic<uint64_t> AlignedCopies{0};
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_KERNEL_SLOT_H
