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
#include "vmjit/runtime/kernel_effects.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace vmjit {
class KernelSlotObj;
}

extern "C" {
/// Where an alignment-checking kernel entry sends a call with an unaligned
/// tensor: `Self` is its kernel slot (or null), `Kernel` the entry that
/// assumes aligned data. Copies the unaligned tensors for the call
/// (runtime/aligned_call.h; counted by the slot, whose TVM code takes a
/// strided one). A safe call.
VMJIT_DLL int vmjitKernelUnalignedCall(void *Self, VMJITSafeCallType Kernel,
                                       const VMJITAny *Args, int32_t Num,
                                       VMJITAny *Result) noexcept;
}

namespace vmjit {

/// vmjitKernelUnalignedCall's name, for code that binds it (declared once).
inline constexpr char kKernelUnalignedCallSymbol[] = "vmjitKernelUnalignedCall";

class KernelSlotObj : public FunctionObj {
public:
  /// How the entry a slot publishes treats unaligned tensors.
  enum class Entry {
    /// It assumes aligned data: the slot checks before each call.
    Raw,
    /// It checks the tensors' alignment itself and hands an unaligned call
    /// to kKernelUnalignedCallSymbol with the `self` it was given (the
    /// kernel tier's aligned entries, jit/kernel_entries.h): the slot
    /// calls it at once, and native code may call it directly with the
    /// slot as `self`.
    AlignmentChecking,
  };

  /// A slot of kernel `Name` calling `Fallback` (a Function with a free
  /// entry: TVM's machine code) until publish(). Without a fallback, the
  /// slot must be published before its first call, and a strided
  /// unaligned tensor is an error.
  VMJIT_DLL KernelSlotObj(std::string Name, Function Fallback,
                          Entry Kind = Entry::Raw);

  /// From the next call on, calls run `Compiled` (an entry of this slot's
  /// Entry kind in `Code`, which the slot keeps alive; `self` ignored
  /// except as Entry::AlignmentChecking says). `Effects`: what the kernel's
  /// IR proves it does with its arguments, when known (effects()). Once
  /// only; any thread.
  VMJIT_DLL void publish(VMJITSafeCallType Compiled, std::shared_ptr<void> Code,
                         std::optional<KernelEffects> Effects = std::nullopt,
                         std::shared_ptr<const void> InlineForm = nullptr);
  /// Whether the published entry checks alignment itself.
  bool checksAlignment() const noexcept {
    return Kind == Entry::AlignmentChecking;
  }
  /// The compiled entry, or null while TVM's code runs.
  VMJITSafeCallType compiled() const noexcept {
    return Compiled.load(std::memory_order_acquire);
  }
  /// Where the compiled entry is published (null until then). Of a slot
  /// whose entry checks alignment, tier-2 code compiled before the swap
  /// loads it at each call site and calls it with the slot as `self`, so
  /// that each site's indirect branch has one target (jit/lower_calls.cpp).
  const std::atomic<VMJITSafeCallType> *compiledCell() const noexcept {
    return &Compiled;
  }
  /// What the kernel is proven to do with its arguments (published with
  /// the compiled entry; null before, or when unproven). Tier 2 passes
  /// tensors of its own stack to a kernel that touches only its arguments'
  /// memory (docs/jit.md#tensors-on-the-stack).
  const KernelEffects *effects() const noexcept {
    return compiled() && Effects ? &*Effects : nullptr;
  }
  /// What the JIT that published the entry keeps for native code to inline
  /// the kernel (its IR: jit/kernel_inline.h), or null.
  const void *inlineForm() const noexcept {
    return compiled() ? InlineForm.get() : nullptr;
  }
  /// `F` as a kernel slot, or null when it is another function.
  VMJIT_DLL static const KernelSlotObj *from(const FunctionObj *F) noexcept;
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
  friend int ::vmjitKernelUnalignedCall(void *, VMJITSafeCallType,
                                        const VMJITAny *, int32_t,
                                        VMJITAny *) noexcept;

  Function Fallback;
  VMJITSafeCallType Tvm; ///< Fallback's entry, or null
  Entry Kind;
  std::atomic<VMJITSafeCallType> Compiled{nullptr};
  // Generated code loads the cell as a plain pointer.
  static_assert(sizeof(std::atomic<VMJITSafeCallType>) == sizeof(void *) &&
                std::atomic<VMJITSafeCallType>::is_always_lock_free);
  std::shared_ptr<void> Code;
  /// Written before Compiled's release store, read after its acquire.
  std::optional<KernelEffects> Effects;
  std::shared_ptr<const void> InlineForm;
  std::atomic<uint64_t> TvmCalls{0};
  std::atomic<uint64_t> AlignedCopies{0};
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_KERNEL_SLOT_H
