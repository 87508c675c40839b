//===- callee_binding.cpp - Binding a function table for native code ------===//
//
// See include/vmjit/jit/callee_binding.h.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/callee_binding.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>

namespace vmjit::jit {

const char *siteHelper(SpecialBuiltin What) {
  const std::string_view Helper = vm::specialBuiltin(What).SiteHelper;
  return Helper.empty() ? nullptr : Helper.data();
}

namespace {

/// Appends binding `B` to the key text.
void addToKey(std::string &Key, const CalleeBinding &B) {
  Key += fmt::format("{}:{:x}:{:x}:{}:{}:{}:{:x}:{:x}:{:x};",
                     static_cast<int>(B.How), B.Entry, B.Self,
                     static_cast<int>(B.Inline), static_cast<int>(B.Standard),
                     static_cast<int>(B.CountAtCall), B.KernelCell,
                     B.StackTensorArgs, B.InlineKernel);
}

/// A VM's binding's key: every binding, then the host devices.
std::string keyOf(const BoundCallees &B) {
  std::string Key;
  for (const CalleeBinding &CB : B.Callees)
    addToKey(Key, CB);
  return Key + fmt::format("host devices {};", B.HostDevices);
}

/// The arguments of a kernel with effects `E` that may be tensors on the
/// caller's stack: the tensors it reads or writes, where its code touches
/// no memory but its arguments' (so it keeps no pointer to one), and
/// takes a fixed number of them.
uint64_t stackTensorArgs(const KernelEffects *E) {
  if (!E || !E->OnlyArgumentMemory || E->Args.size() > 64)
    return 0;
  uint64_t Mask = 0;
  for (size_t K = 0; K < E->Args.size(); ++K)
    if (E->Args[K] != ArgAccess::None)
      Mask |= uint64_t{1} << K;
  return Mask;
}

/// A kernel slot whose entry checks alignment: its published entry called
/// directly (the slot as `self`), or, before the swap, the slot's cell read
/// at the call site (tier 2).
void bindKernel(CalleeBinding &CB, const KernelSlotObj *Slot) {
  if (!Slot)
    return;
  CB.KernelCell = 0;
  CB.InlineKernel = 0;
  CB.StackTensorArgs = stackTensorArgs(Slot->effects());
  if (!Slot->checksAlignment())
    return;
  if (VMJITSafeCallType Compiled = Slot->compiled()) {
    CB.Entry = reinterpret_cast<uint64_t>(Compiled);
    CB.InlineKernel = reinterpret_cast<uint64_t>(Slot->inlineForm());
  } else
    CB.KernelCell = reinterpret_cast<uint64_t>(Slot->compiledCell());
}

} // namespace

BoundCallees bindCallees(const vm::VirtualMachine &VM, bool InlineBuiltins) {
  BoundCallees Out;
  const vm::Executable &Exe = VM.executable();
  for (size_t K = 0; K < Exe.functions().size(); ++K) {
    const vm::FunctionInfo &F = Exe.functions()[K];
    CalleeBinding CB;
    if (F.Kind != vm::FunctionKind::Bytecode) {
      FunctionObj *P = VM.poolEntry(static_cast<int64_t>(K));
      CB.How = CalleeBinding::Direct;
      CB.Entry = reinterpret_cast<uint64_t>(P->entry());
      // Free entries ignore `self`: VMs with their own Function objects for
      // the same library symbol still share code.
      CB.Self = P->isFreeEntry() ? 0 : reinterpret_cast<uint64_t>(P);
      auto Std = vm::standardFunction(F.Name);
      CB.Standard = Std && Std->get() == P;
      // Only the standard function may be replaced by its inline form.
      if (InlineBuiltins && CB.Standard)
        CB.Inline = vm::specialBuiltinFor(F.Name);
      CB.CountAtCall = vm::countedAtCall(
          VM.countsAtCall(static_cast<int64_t>(K)), CB.Inline);
      if (const KernelSlotObj *Slot = KernelSlotObj::from(P)) {
        bindKernel(CB, Slot);
        Out.KernelSlots.emplace_back(static_cast<uint32_t>(K), Slot);
      }
      Out.KeepAlive.push_back(Function(ObjectPtr<Object>::share(P)));
    }
    if (CB.Inline != SpecialBuiltin::None)
      Out.Inlined.push_back(static_cast<uint32_t>(K));
    Out.Callees.push_back(CB);
  }
  const std::vector<DLDevice> &Devices = VM.devices();
  const DLDevice Host = cpuDevice();
  while (Out.HostDevices < static_cast<int64_t>(Devices.size()) &&
         Devices[static_cast<size_t>(Out.HostDevices)].device_type ==
             Host.device_type &&
         Devices[static_cast<size_t>(Out.HostDevices)].device_id ==
             Host.device_id)
    ++Out.HostDevices;
  Out.Key = keyOf(Out);
  return Out;
}

BoundCallees bindCallees(const vm::Executable &Exe, bool InlineBuiltins) {
  BoundCallees Out;
  for (size_t K = 0; K < Exe.functions().size(); ++K) {
    const vm::FunctionInfo &F = Exe.functions()[K];
    CalleeBinding CB;
    if (F.Kind != vm::FunctionKind::Bytecode && InlineBuiltins)
      CB.Inline = vm::specialBuiltinFor(F.Name);
    CB.CountAtCall =
        vm::countedAtCall(F.Kind == vm::FunctionKind::Packed, CB.Inline);
    if (CB.Inline != SpecialBuiltin::None)
      Out.Inlined.push_back(static_cast<uint32_t>(K));
    addToKey(Out.Key, CB);
    Out.Callees.push_back(CB);
  }
  return Out;
}

std::optional<BoundCallees> reboundKernels(const BoundCallees &B) {
  std::optional<BoundCallees> Out;
  for (const auto &[K, Slot] : B.KernelSlots) {
    CalleeBinding CB = B.Callees[K];
    bindKernel(CB, Slot);
    if (CB == B.Callees[K])
      continue;
    if (!Out)
      Out = B;
    Out->Callees[K] = CB;
  }
  if (Out)
    Out->Key = keyOf(*Out);
  return Out;
}

bool bindingsDifferFor(const vm::Executable &Exe, int64_t Func,
                       const BoundCallees &Old, const BoundCallees &New) {
  auto Differs = [&](int64_t K) {
    const auto I = static_cast<size_t>(K);
    return I < Old.Callees.size() && I < New.Callees.size() &&
           !(Old.Callees[I] == New.Callees[I]);
  };
  const vm::FunctionInfo &F = Exe.function(Func);
  for (int64_t PC = F.StartInstr; PC < F.EndInstr; ++PC) {
    const vm::InstrView I = Exe.instr(PC);
    if (I.opcode() != vm::Opcode::Call)
      continue;
    if (Differs(I.callFunc()))
      return true;
    for (int64_t A = 0; A < I.callNumArgs(); ++A)
      if (I.callArg(A).kind() == vm::ArgKind::FuncIdx &&
          Differs(I.callArg(A).value()))
        return true;
  }
  return false;
}

} // namespace vmjit::jit
