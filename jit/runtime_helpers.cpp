//===- runtime_helpers.cpp - C functions that JIT code calls ---------------===//
//
// The baseline tier's slow-path call, and the addresses of the VM's native
// helpers (vmjit/vm/native_helpers.h) that every JIT unit is bound to
// (jit/tier_manager.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime_helpers.h"
#include "vmjit/runtime/any.h"

extern "C" {

int vmjit_baseline_call_into(VMJITAny *Dst, const VMJITAny *Args,
                             int32_t NumArgs, void *Entry, void *Self) {
  VMJITAny R;
  vmjit::detail::setNone(R);
  if (reinterpret_cast<VMJITSafeCallType>(Entry)(Self, Args, NumArgs, &R))
    return -1;
  VMJITAny Old;
  vmjit::detail::copyWords(Old, *Dst);
  vmjit::detail::copyWords(*Dst, R);
  vmjit::detail::releaseValue(Old);
  return 0;
}

} // extern "C"

namespace vmjit::jit {

std::map<std::string, uint64_t> runtimeHelperSymbols() {
  std::map<std::string, uint64_t> Out;
#define VMJIT_HELPER_ADDRESS(N) Out[#N] = reinterpret_cast<uint64_t>(&N);
  VMJIT_NATIVE_HELPERS(VMJIT_HELPER_ADDRESS)
#undef VMJIT_HELPER_ADDRESS
  return Out;
}

} // namespace vmjit::jit
