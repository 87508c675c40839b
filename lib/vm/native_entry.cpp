//===- native_entry.cpp - Native code in the function pool ---------------===//
//
// The pool entries of bytecode functions the JIT compiled (a native frame
// on the interpreter's register stack, entered through the same
// VirtualMachine::enterFrame as an interpreted one), how the interpreter
// adopts native code at a call (tier-up) or at a backward jump (on-stack
// replacement), and how a VM changes JIT controllers without any call
// reaching freed code.
//
//===----------------------------------------------------------------------===//

#include "vm_internal.h"
#include "vmjit/runtime/logging.h"

namespace vmjit::vm {

using namespace internal;

bool VirtualMachine::Interpreter::tierUp(int64_t Func, uint64_t Count) {
  if (VM.Tier->nativeCode(Func))
    return VM.adoptNativeCode(Func);
  int64_t T = VM.Tier->threshold();
  if (T > 0 && Count == static_cast<uint64_t>(T)) {
    VM.Tier->requestCompile(VM, Func);
    // A synchronous (baseline) compile has code ready for this call.
    if (VM.Tier->nativeCode(Func))
      return VM.adoptNativeCode(Func);
  }
  return false;
}

int VirtualMachine::Interpreter::backEdge(Frame *&F, Any *R, int64_t PC,
                                          size_t FrameIdx, VMJITAny &RetVal) {
  const int64_t Func = F->Func;
  uint64_t Count = ++VM.BackEdges[static_cast<size_t>(Func)];
  if (!VM.Tier || VM.observingCalls())
    return 0;
  NativeFn Code = VM.Tier->nativeCode(Func);
  if (!Code) {
    int64_t T = VM.Tier->threshold();
    if (T > 0 && Count == static_cast<uint64_t>(T))
      VM.Tier->requestCompile(VM, Func);
    // A synchronous (baseline) compile has code ready at this jump.
    Code = VM.Tier->nativeCode(Func);
    if (!Code)
      return 0;
  }
  const uintptr_t StackLimit =
      StayInterpreted ? 0 : availableNativeStackLimit();
  if (StackLimit == 0)
    return 0;
  // On-stack replacement: the frame continues in native code at PC, on
  // the same register file; later calls get the native entry too.
  VM.adoptNativeCode(Func);
  ++VM.OSREntries[static_cast<size_t>(Func)];
  detail::setNone(RetVal);
  NativeContext Ctx{&VM,
                    reinterpret_cast<Any *>(&RetVal),
                    -1,
                    &VM.Control,
                    Func,
                    VM.Sites.madeSitesOf(Func),
                    VM.CallCounts.data(),
                    static_cast<int64_t>(FrameIdx) + VM.CallState.NativeDepth,
                    StackLimit,
                    &VM.CallState};
  F->PC = PC;
  int Rc = Code(&Ctx, R, Consts, VM.Pool.get(), PC);
  F = &VM.Frames[FrameIdx];
  if (Rc != 0) {
    F->PC = Ctx.ErrorPC;
    return -1;
  }
  return 1;
}

/// Too little native stack left here, or a stack vmjit cannot see (a
/// fiber's): the interpreter runs this call and every call it makes, on
/// frames on the heap, with the same results, errors and steps.
int NativeFunctionObj::runInterpreted(VirtualMachine &VM, int64_t Func,
                                      const AnyView *Args, int32_t NumArgs,
                                      Any *Result) noexcept {
  VirtualMachine::Interpreter In(VM);
  In.StayInterpreted = true;
  try {
    In.pushFrame(Func, Args, NumArgs, kVoidRegister, /*Boundary=*/true);
  } catch (...) {
    return detail::raiseCurrentException();
  }
  return In.run(Result);
}

int NativeFunctionObj::entry(void *Self, const VMJITAny *Args,
                             int32_t NumArgs, VMJITAny *Result) noexcept {
  auto *F = static_cast<NativeFunctionObj *>(Self);
  VirtualMachine *VM = F->VM;
  if (!VM) {
    return raiseDestroyedVM(F->name());
  }
  const AnyView *A = reinterpret_cast<const AnyView *>(Args);
  Any *Out = reinterpret_cast<Any *>(Result);
  // Instruments and the profiler see every call only on the interpreter.
  if (VM->observingCalls())
    return VM->runFunction(F->Func, A, NumArgs, Out);
  const FunctionInfo &Fn = VM->Exe->function(F->Func);
  if (NumArgs != Fn.NumParams)
    return raiseArityError(Fn, NumArgs);
  const uintptr_t StackLimit = availableNativeStackLimit();
  if (StackLimit == 0) [[unlikely]]
    return runInterpreted(*VM, F->Func, A, NumArgs, Out);
  // A native frame: registers from the shared stack, counted in the call
  // depth, but no interpreter Frame (nothing reads it).
  const size_t NumRegs = static_cast<size_t>(Fn.RegisterFileSize);
  Any *Regs;
  try {
    // (Native: false: the stack was checked above.)
    Regs = VM->enterFrame(F->Func, A, NumArgs, /*Native=*/false);
  } catch (...) {
    return detail::raiseCurrentException();
  }
  const int64_t Depth =
      static_cast<int64_t>(VM->Frames.size()) + VM->CallState.NativeDepth;
  ++VM->CallState.NativeDepth;
  // The function's allocation sites, once a call made them.
  NativeContext Ctx{VM,
                    Out,
                    -1,
                    &VM->Control,
                    F->Func,
                    VM->Sites.madeSitesOf(F->Func),
                    VM->CallCounts.data(),
                    Depth,
                    StackLimit,
                    &VM->CallState};
  NativeFn Code = F->Slot->load(std::memory_order_acquire);
  int Rc = Code(&Ctx, Regs, VM->Exe->constants().data(), VM->Pool.get(), 0);
  --VM->CallState.NativeDepth;
  VM->Regs->popClean(NumRegs); // the code left every register None
  if (Rc != 0) {
    Error E = takeRaisedError();
    try {
      E.addFrame(VM->frameLine(F->Func, Ctx.ErrorPC));
    } catch (...) {
    }
    setRaisedError(E);
    return -1;
  }
  return 0;
}

VMJITSafeCallType nativeFunctionEntry() noexcept {
  return &NativeFunctionObj::entry;
}

void VirtualMachine::setTierController(std::shared_ptr<TierController> T) {
  // Pool entries go back to the interpreter first: no call may reach code
  // of the old controller through this VM's pool again (its entries keep
  // that code alive for any frame or value still holding them).
  for (size_t I = 0; I < IsNative.size(); ++I) {
    if (!IsNative[I])
      continue;
    replacePoolEntry(static_cast<int64_t>(I),
                     Function(ObjectPtr<Object>::share(
                         Stateful->InterpEntries[I])));
    IsNative[I] = 0;
  }
  Tier = std::move(T);
  for (size_t I = 0; I < Feedback.size(); ++I)
    Feedback[I] = Tier ? Tier->feedback(static_cast<int64_t>(I)) : nullptr;
  dropRetiredPoolEntries();
}

bool VirtualMachine::adoptNativeCode(int64_t Func) {
  size_t I = static_cast<size_t>(Func);
  if (IsNative[I])
    return true;
  if (!Tier || Exe->function(Func).Kind != FunctionKind::Bytecode)
    return false;
  if (!Tier->nativeCode(Func))
    return false;
  auto Entry = makeObject<NativeFunctionObj>(this, Func, Tier,
                                             Exe->function(Func).Name);
  Stateful->NativeEntries.push_back(Entry.get());
  replacePoolEntry(Func, Function(ObjectPtr<Object>(std::move(Entry))));
  IsNative[I] = 1;
  CallsBeforeNative[I] = CallCounts[I];
  logger().debug("swapped native code into function '{}' after {} calls",
                 Exe->function(Func).Name, CallCounts[I]);
  return true;
}

} // namespace vmjit::vm
