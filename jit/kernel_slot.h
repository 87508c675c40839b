//===- kernel_slot.h - One kernel's function-pool entry ---------*- C++ -*-===//
//
// Private to jit/: under the kernel tier, the Function every VM holds for
// one of TVM's kernels. It calls TVM's machine code (the kernel library's
// entry) until the kernel tier publishes the kernel compiled for this CPU,
// and that from the next call on: the swap is one atomic store, seen by
// every tier (the interpreter, tier 1 and tier 2 all call through the
// Function), by every VM holding the slot, and by TVM-compiled code
// (which calls through its function list). The compiled code assumes
// 64-byte aligned data, so a call with an unaligned tensor copies it
// (runtime/aligned_call.h).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_SLOT_H
#define VMJIT_JIT_KERNEL_SLOT_H

#include "vmjit/runtime/function.h"

#include <atomic>
#include <cstdint>
#include <memory>

namespace vmjit::jit {

class KernelSlotObj : public FunctionObj {
public:
  /// A slot calling `Tvm` (a free entry, kept alive by `TvmFunction`).
  KernelSlotObj(Function TvmFunction);

  /// From the next call on, calls run `Compiled` (a free entry in `Code`,
  /// which the slot keeps alive). Once only; any thread.
  void publish(VMJITSafeCallType Compiled, std::shared_ptr<void> Code);
  /// The compiled entry, or null while TVM's code runs.
  VMJITSafeCallType compiled() const noexcept {
    return Compiled.load(std::memory_order_acquire);
  }
  /// Calls that ran TVM's code: before the swap, or with an unaligned
  /// tensor the copy could not take.
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
  int callUnaligned(VMJITSafeCallType C, const VMJITAny *Args, int32_t Num,
                    VMJITAny *Result) noexcept;

  Function TvmFunction;
  VMJITSafeCallType Tvm;
  std::atomic<VMJITSafeCallType> Compiled{nullptr};
  std::shared_ptr<void> Code;
  std::atomic<uint64_t> TvmCalls{0};
  std::atomic<uint64_t> AlignedCopies{0};
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_SLOT_H
