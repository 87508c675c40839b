//===- native_helpers.cpp - C functions that native code calls ------------===//
//
// Native code releases references inline (an atomic decrement) and calls
// vmjit_jit_destroy only when the count reaches zero, or, in flat-lowered
// (large) functions, calls vmjit_jit_release / vmjit_jit_release_frame;
// it reports a bad `if` condition through vmjit_jit_if_error, with the
// interpreter's message, and takes the slow path of a step (budget,
// deadline, interrupt) through vmjit_jit_step; the standard
// alloc_tensor and alloc_storage go through their call site's cache
// (vm/alloc_sites.h) by vmjit_jit_alloc_tensor and vmjit_jit_alloc_storage,
// defined in alloc_sites.cpp (where the sites' hit paths inline into them). The JIT binds their
// addresses into every unit; the ahead-of-time loader into a library's
// import table.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/native_helpers.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/virtual_machine.h"

extern "C" {

void vmjit_jit_destroy(VMJITObject *O, uint64_t Old) {
  // Pairs with the release decrements of other owners.
  (void)__atomic_load_n(&O->combined_ref_count, __ATOMIC_ACQUIRE);
  if ((Old >> 32) == 1) {
    O->deleter(O, kVMJITObjectDeleterFlagBoth);
    return;
  }
  O->deleter(O, kVMJITObjectDeleterFlagStrong);
  uint64_t Weak = __atomic_fetch_sub(&O->combined_ref_count, uint64_t(1) << 32,
                                     __ATOMIC_ACQ_REL);
  if ((Weak >> 32) == 1)
    O->deleter(O, kVMJITObjectDeleterFlagWeak);
}

void vmjit_jit_release(VMJITObject *O) {
  vmjit::Object::fromRaw(O)->decRef();
}

void vmjit_jit_retain(VMJITObject *O) { vmjit::Object::fromRaw(O)->incRef(); }

void vmjit_jit_release_frame(VMJITAny *Regs, int64_t N) {
  // The register file is an array of Any (NativeFunctionObj passes it so).
  vmjit::Any *A = reinterpret_cast<vmjit::Any *>(Regs);
  for (int64_t R = 0; R < N; ++R)
    A[R].reset();
}

int vmjit_jit_if_error(const VMJITAny *Cond) {
  try {
    vmjit::setRaisedError(vmjit::vm::ifConditionError(*Cond));
  } catch (...) {
    VMJITErrorSetRaisedFromCStr("TypeError",
                                "if: the condition must be an int or a bool");
  }
  return -1;
}

int vmjit_jit_step(vmjit::vm::NativeContext *Ctx) {
  return Ctx->VM->stepSlow();
}

void vmjit_jit_callee_frame(vmjit::vm::NativeContext *Ctx) {
  vmjit::Error E = vmjit::takeRaisedError();
  try {
    E.addFrame(Ctx->VM->frameLine(Ctx->Func, Ctx->ErrorPC));
  } catch (...) {
  }
  vmjit::setRaisedError(E);
}

} // extern "C"

namespace vmjit::vm {

void *nativeHelperAddress(std::string_view Name) noexcept {
#define VMJIT_HELPER_ADDRESS(N)                                                \
  if (Name == #N)                                                              \
    return reinterpret_cast<void *>(&N);
  VMJIT_NATIVE_HELPERS(VMJIT_HELPER_ADDRESS)
#undef VMJIT_HELPER_ADDRESS
  return nullptr;
}

} // namespace vmjit::vm
