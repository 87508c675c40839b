//===- vmjit/jit/callee_binding.h - How native code calls -------*- C++ -*-===//
//
// The vocabulary both JIT tiers, their analyses and ahead-of-time code
// share: how calls of one function-table entry are made (through the
// function pool, directly, or as the inline form of a special builtin,
// vm/special_builtins.h), whether the code counts them, and the one place
// that binds a VM's (or an executable's) function table.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CALLEE_BINDING_H
#define VMJIT_JIT_CALLEE_BINDING_H

#include "vmjit/runtime/function.h"
#include "vmjit/vm/special_builtins.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vmjit {
class KernelSlotObj;
} // namespace vmjit

namespace vmjit::vm {
class Executable;
class VirtualMachine;
} // namespace vmjit::vm

namespace vmjit::jit {

using vm::SpecialBuiltin;

/// How calls of one function-table entry are made.
struct CalleeBinding {
  enum Kind { Pool, Direct } How = Pool;
  /// Direct: the safe-call entry and the `self` it is called with.
  uint64_t Entry = 0;
  uint64_t Self = 0;
  /// Also inline this builtin, falling back to the call (bindCallees
  /// binds it only where the callee is the standard function of that
  /// name: for Pool, every VM the code runs in must resolve it so).
  SpecialBuiltin Inline = SpecialBuiltin::None;
  /// Direct: the callee is the registry's standard function of its name,
  /// not one registered in its place (what Inline and tier 2's direct
  /// closure calls, jit/closure_call.h, rely on).
  bool Standard = false;
  /// The code adds one to the VM's count of this function
  /// (NativeContext::CallCounts) before each call, inlined or not
  /// (vm::countedAtCall).
  bool CountAtCall = false;
  /// Direct, the callee a kernel slot whose entry checks alignment
  /// (runtime/kernel_slot.h) not yet published: the address of its
  /// compiled-entry cell, which tier 2 reads at the call site to call the
  /// entry once published (the slot before); 0 otherwise. Once published,
  /// Entry is the kernel's entry itself, called with the slot as Self.
  uint64_t KernelCell = 0;
  /// A kernel slot whose published kernel touches only its arguments'
  /// memory (KernelSlotObj::effects): bit K set where argument K is a
  /// tensor the kernel may be given as a DLTensor on the caller's stack
  /// (tier 2's tensors on the stack, jit/stack_tensors.h).
  uint64_t StackTensorArgs = 0;
  /// A published kernel slot whose kernel tier kept the kernel's IR for
  /// inlining (KernelSlotObj::inlineForm, jit/kernel_inline.h: an
  /// InlineKernels); 0 otherwise.
  uint64_t InlineKernel = 0;

  bool operator==(const CalleeBinding &) const = default;
};

/// The builtin calls of a callee bound `B` are inlined as when builtins
/// are inlined at all (`InlineBuiltins`), else None. A call whose form
/// the builtin's inline form does not take (vm::inlineFormApplies) is
/// made as a call, but nothing is speculated on its result.
inline SpecialBuiltin inlinedBuiltin(const CalleeBinding &B,
                                     bool InlineBuiltins) {
  return InlineBuiltins ? B.Inline : SpecialBuiltin::None;
}

/// The native helper (vm/native_helpers.h) through which both JIT tiers
/// call a builtin with call-site caches (vm/alloc_sites.h): alloc_tensor,
/// alloc_storage, make_shape; null for the others.
const char *siteHelper(SpecialBuiltin What);

/// A function table bound for native code.
struct BoundCallees {
  /// One per function-table entry.
  std::vector<CalleeBinding> Callees;
  /// The packed functions the bindings point into (Direct), kept alive.
  std::vector<Function> KeepAlive;
  /// Every binding, as text (part of the object-cache key: VMs with the
  /// same bindings share code).
  std::string Key;
  /// Entries bound inline (ahead-of-time code records them: the VM that
  /// runs it must resolve each to its standard function).
  std::vector<uint32_t> Inlined;
  /// How many of the VM's first device indices are the host CPU
  /// (cpuDevice()): storage the code allocates on one of them, or on -1,
  /// may live on its stack (jit/stack_tensors.h). 0 for an executable alone.
  int64_t HostDevices = 0;
  /// The function-table entries that are kernel slots (runtime/
  /// kernel_slot.h; kept alive by KeepAlive), whose bindings change when
  /// their kernels are published (reboundKernels).
  std::vector<std::pair<uint32_t, const KernelSlotObj *>> KernelSlots;
};

/// The JIT's binding of `VM`'s function table: packed callees Direct
/// (their entries known now), special builtins inline where the pool
/// holds the standard function and `InlineBuiltins` is set, each call
/// counted as vm::countedAtCall says.
BoundCallees bindCallees(const vm::VirtualMachine &VM, bool InlineBuiltins);

/// Ahead-of-time code's binding of `Exe`'s function table, whose
/// addresses are not known: every callee Pool; the special builtins
/// inline under `InlineBuiltins` (the loader checks that the VM resolves
/// them to the standard functions); packed functions counted (a library
/// function may be TVM-compiled code, which counts its own entries).
BoundCallees bindCallees(const vm::Executable &Exe, bool InlineBuiltins);

/// `B` with its kernel slots bound as they are now (a kernel published
/// since: its entry called directly, its effects and inline form used)
/// and its key updated; nothing when no binding changed (nothing copied).
std::optional<BoundCallees> reboundKernels(const BoundCallees &B);

/// Whether function `Func` of `Exe` names a table entry (a call or a
/// function argument) that `Old` and `New` bind differently: its code
/// compiled with `Old` is not what `New` would compile.
bool bindingsDifferFor(const vm::Executable &Exe, int64_t Func,
                       const BoundCallees &Old, const BoundCallees &New);

} // namespace vmjit::jit

#endif // VMJIT_JIT_CALLEE_BINDING_H
