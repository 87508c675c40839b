//===- kernel_slot.cpp - A kernel's pool entry ----------------------------===//
//
// See include/vmjit/runtime/kernel_slot.h.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/aligned_call.h"

namespace vmjit {

namespace {

/// Adds one to a statistics counter without a locked read-modify-write (a
/// `lock xadd` on every call of a kernel whose tier failed would cost more
/// than the check around it): VMs on other threads may lose a count.
void countCall(std::atomic<uint64_t> &Counter) noexcept {
  Counter.store(Counter.load(std::memory_order_relaxed) + 1,
                std::memory_order_relaxed);
}

} // namespace

KernelSlotObj::KernelSlotObj(std::string Name, Function Fallback, Entry Kind)
    : FunctionObj(objectDeleter<KernelSlotObj>, &KernelSlotObj::call,
                  std::move(Name), /*FreeEntry=*/false),
      Fallback(std::move(Fallback)),
      Tvm(this->Fallback.defined() ? this->Fallback.get()->entry() : nullptr),
      Kind(Kind) {}

const KernelSlotObj *KernelSlotObj::from(const FunctionObj *F) noexcept {
  return F && F->entry() == &KernelSlotObj::call
             ? static_cast<const KernelSlotObj *>(F)
             : nullptr;
}

void KernelSlotObj::publish(VMJITSafeCallType C, std::shared_ptr<void> Keep,
                            std::optional<KernelEffects> Proven,
                            std::shared_ptr<const void> Inline) {
  Code = std::move(Keep);
  Effects = std::move(Proven);
  InlineForm = std::move(Inline);
  Compiled.store(C, std::memory_order_release);
}

int KernelSlotObj::call(void *Self, const VMJITAny *Args, int32_t Num,
                        VMJITAny *Result) noexcept {
  auto *S = static_cast<KernelSlotObj *>(Self);
  VMJITSafeCallType Target = S->Compiled.load(std::memory_order_acquire);
  if (Target && S->checksAlignment()) [[likely]]
    return Target(Self, Args, Num, Result);
  if (!Target) [[unlikely]] {
    countCall(S->TvmCalls);
    Target = S->Tvm;
    if (!Target) {
      VMJITErrorSetRaisedFromCStr("InternalError",
                                  "a kernel slot without code was called");
      return -1;
    }
  }
  // TVM's code assumes aligned data too (aligned SSE loads).
  if (tensorArgumentsAligned(Args, Num)) [[likely]]
    return Target(nullptr, Args, Num, Result);
  return S->callUnaligned(Target, Args, Num, Result);
}

int KernelSlotObj::callUnaligned(VMJITSafeCallType Target,
                                 const VMJITAny *Args, int32_t Num,
                                 VMJITAny *Result) noexcept {
  AlignedCallKind Kind = AlignedCallKind::Copied;
  const int Rc = callWithAlignedCopies(Target, Tvm, Args, Num, Result, Kind);
  if (Target != Tvm)
    countCall(Kind == AlignedCallKind::Copied ? AlignedCopies : TvmCalls);
  return Rc;
}

} // namespace vmjit

int vmjitKernelUnalignedCall(void *Self, VMJITSafeCallType Kernel,
                             const VMJITAny *Args, int32_t Num,
                             VMJITAny *Result) noexcept {
  using namespace vmjit;
  if (Self)
    return static_cast<KernelSlotObj *>(Self)->callUnaligned(Kernel, Args, Num,
                                                             Result);
  AlignedCallKind Kind = AlignedCallKind::Copied;
  return callWithAlignedCopies(Kernel, nullptr, Args, Num, Result, Kind);
}
