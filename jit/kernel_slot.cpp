//===- kernel_slot.cpp - One kernel's function-pool entry -----------------===//
//
// See kernel_slot.h.
//
//===----------------------------------------------------------------------===//

#include "kernel_slot.h"

#include "vmjit/runtime/aligned_call.h"

namespace vmjit::jit {

KernelSlotObj::KernelSlotObj(Function TvmFn)
    : FunctionObj(objectDeleter<KernelSlotObj>, &KernelSlotObj::call,
                  TvmFn.name(), /*FreeEntry=*/false),
      TvmFunction(std::move(TvmFn)), Tvm(TvmFunction.get()->entry()) {}

void KernelSlotObj::publish(VMJITSafeCallType C, std::shared_ptr<void> Keep) {
  Code = std::move(Keep);
  Compiled.store(C, std::memory_order_release);
}

int KernelSlotObj::call(void *Self, const VMJITAny *Args, int32_t Num,
                        VMJITAny *Result) noexcept {
  auto *S = static_cast<KernelSlotObj *>(Self);
  const VMJITSafeCallType C = S->Compiled.load(std::memory_order_acquire);
  if (!C) [[unlikely]] {
    S->TvmCalls.fetch_add(1, std::memory_order_relaxed);
    return S->Tvm(nullptr, Args, Num, Result);
  }
  if (tensorArgumentsAligned(Args, Num)) [[likely]]
    return C(nullptr, Args, Num, Result);
  return S->callUnaligned(C, Args, Num, Result);
}

int KernelSlotObj::callUnaligned(VMJITSafeCallType C, const VMJITAny *Args,
                                 int32_t Num, VMJITAny *Result) noexcept {
  AlignedCallKind Kind = AlignedCallKind::Copied;
  const int Rc = callWithAlignedCopies(C, Tvm, Args, Num, Result, Kind);
  (Kind == AlignedCallKind::Copied ? AlignedCopies : TvmCalls)
      .fetch_add(1, std::memory_order_relaxed);
  return Rc;
}

} // namespace vmjit::jit
