//===- tvm_compiled.cpp - TVM's compiled-mode functions in the pool -------===//
//
// A model built with TVM's `exec_mode="compiled"` has no bytecode: each
// Relax function is a TIR function `__vmtir__NAME` compiled into the model
// library, and the executable lists it as a VMTIR function (vmjit's
// FunctionKind::Native). TVM's VM calls such a function with four handles,
// `(ctx_ptr, registers, constants, functions)`, the last three arrays of
// tagged values (TVM's "AnyLists"): the parameters in registers
// [0, num_params), the result left in register num_params. The code moves
// values in and out of those arrays with the runtime's
// TVMBackendAnyList* functions (tvm_backend.cpp).
//
// Here the registers are a frame on the VM's register stack, so the call
// depth, the step budget and the machine-stack check are those of every
// other native frame.
//
//===----------------------------------------------------------------------===//

#include "vm_internal.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/aligned_call.h"
#include "vmjit/runtime/tensor.h"

#include <cstring>
#include <span>
#include <vector>

namespace vmjit::vm {

using namespace internal;

/// The pool entry of a TVM-compiled function: its code is the library's
/// `__vmtir__NAME` export, a safe-call function of the four handles.
class TvmCompiledFunctionObj : public FunctionObj {
public:
  TvmCompiledFunctionObj(VirtualMachine *VM, int64_t Func, Function Code,
                         std::string Name)
      : FunctionObj(objectDeleter<TvmCompiledFunctionObj>, &entry,
                    std::move(Name), /*FreeEntry=*/false),
        VM(VM), Func(Func), Code(std::move(Code)) {}
  VirtualMachine *VM;
  int64_t Func;

private:
  Function Code;
  static int entry(void *Self, const VMJITAny *Args, int32_t NumArgs,
                   VMJITAny *Result) noexcept;
};

namespace {

/// `Args` with each unaligned compact CPU tensor replaced by an aligned
/// copy. TVM's compiled-mode code calls its kernels from inside, where no
/// kernel slot copies for them, and kernels assume 64-byte aligned data
/// (TVM's generic x86-64 code loads with aligned SSE instructions; code
/// compiled for this CPU with wider ones).
std::vector<Any> alignedArguments(const VMJITAny *Args, int32_t NumArgs) {
  std::vector<Any> Out;
  for (int32_t I = 0; I < NumArgs; ++I) {
    const DLTensor *T = argumentTensor(Args[I]);
    Out.emplace_back(AnyView::fromRaw(Args[I]));
    if (!T || tensorDataAligned(*T) || !isCompactTensor(*T))
      continue;
    Tensor Copy = Tensor::empty(std::span<const int64_t>(T->shape, T->ndim),
                                T->dtype);
    std::memcpy(Copy.data(), static_cast<const char *>(T->data) + T->byte_offset,
                Copy.nbytes());
    Out.back() = Any(std::move(Copy));
  }
  return Out;
}

} // namespace

int TvmCompiledFunctionObj::entry(void *Self, const VMJITAny *Args,
                                  int32_t NumArgs, VMJITAny *Result) noexcept {
  auto *F = static_cast<TvmCompiledFunctionObj *>(Self);
  VirtualMachine *VM = F->VM;
  if (!VM)
    return raiseDestroyedVM(F->name());
  const FunctionInfo &Fn = VM->Exe->function(F->Func);
  if (NumArgs != Fn.NumParams)
    return raiseArityError(Fn, NumArgs);
  if (Fn.RegisterFileSize <= Fn.NumParams) {
    VMJITErrorSetRaisedFromCStr(
        "RuntimeError",
        fmt::format("{}: a TVM-compiled function needs a register for its "
                    "result after its {} parameters, but its register file "
                    "has {}",
                    Fn.Name, Fn.NumParams, Fn.RegisterFileSize)
            .c_str());
    return -1;
  }
  const AnyView *A = reinterpret_cast<const AnyView *>(Args);
  std::vector<Any> Aligned;
  std::vector<AnyView> AlignedViews;
  if (!tensorArgumentsAligned(Args, NumArgs)) [[unlikely]] {
    try {
      Aligned = alignedArguments(Args, NumArgs);
    } catch (...) {
      return detail::raiseCurrentException();
    }
    AlignedViews.assign(Aligned.begin(), Aligned.end());
    A = AlignedViews.data();
  }
  Any *Regs;
  try {
    Regs = VM->enterFrame(F->Func, A, NumArgs, /*Native=*/true);
  } catch (...) {
    return detail::raiseCurrentException();
  }
  VMJITAny Handles[4];
  viewOpaque(Handles[0], VM);
  viewOpaque(Handles[1], Regs);
  viewOpaque(Handles[2], const_cast<Any *>(VM->Exe->constants().data()));
  viewOpaque(Handles[3], VM->Stateful->FunctionList.data());
  VMJITAny Ret;
  detail::setNone(Ret);
  ++VM->CallState.NativeDepth;
  int Rc = F->Code.get()->safeCall(reinterpret_cast<const AnyView *>(Handles),
                                   4, reinterpret_cast<Any *>(&Ret));
  --VM->CallState.NativeDepth;
  detail::releaseValue(Ret); // the TIR function returns nothing itself
  const size_t NumRegs = static_cast<size_t>(Fn.RegisterFileSize);
  if (Rc == 0) { // the result moves out of register NumParams
    VMJITAny &Out = const_cast<VMJITAny &>(Regs[Fn.NumParams].raw());
    detail::copyWords(*Result, Out);
    detail::setNone(Out);
  }
  VM->Regs->pop(Regs, NumRegs);
  if (Rc != 0) {
    Error E = takeRaisedError();
    try {
      E.addFrame(fmt::format("in function '{}' (TVM-compiled code)", Fn.Name));
    } catch (...) {
    }
    setRaisedError(E);
    return -1;
  }
  return 0;
}

std::optional<Function> VirtualMachine::tvmCompiledEntry(int64_t Func) {
  const FunctionInfo &F = Exe->function(Func);
  const std::string Symbol = std::string(tvmfmt::kVMTIRPrefix) + F.Name;
  for (const auto &Lib : Opts.Libraries)
    if (auto Code = Lib->find(Symbol)) {
      auto Obj = makeObject<TvmCompiledFunctionObj>(this, Func,
                                                    std::move(*Code), F.Name);
      Stateful->TvmEntries.Entries.push_back(Obj.get());
      return Function(ObjectPtr<Object>(std::move(Obj)));
    }
  return std::nullopt;
}

VirtualMachine::State::TvmCompiledEntries::~TvmCompiledEntries() {
  for (FunctionObj *F : Entries)
    static_cast<TvmCompiledFunctionObj *>(F)->VM = nullptr;
}

void VirtualMachine::buildFunctionList() {
  // TVM's function pool as an AnyList: the entries as they are now
  // (a bytecode function's interpreter entry runs whatever tier the JIT
  // later swaps in, so the list never needs updating).
  std::vector<Any> &List = Stateful->FunctionList;
  List.clear();
  List.reserve(Exe->functions().size());
  for (size_t I = 0; I < Exe->functions().size(); ++I)
    List.emplace_back(Function(ObjectPtr<Object>::share(
        Pool[I].load(std::memory_order_relaxed))));
}

} // namespace vmjit::vm
