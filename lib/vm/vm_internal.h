//===- vm_internal.h - What the interpreter and native entries share -----===//
//
// Private to lib/vm: the frame stack, the register stack, the dispatch
// loop's class and the pool entries of native code, shared by
// virtual_machine.cpp (the interpreter) and native_entry.cpp (native code
// entries, tier-up and on-stack replacement).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_VM_VM_INTERNAL_H
#define VMJIT_LIB_VM_VM_INTERNAL_H

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/vm/feedback.h"
#include "vmjit/vm/native_code.h"
#include "vmjit/vm/native_stack.h"
#include "vmjit/vm/special_builtins.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <map>
#include <optional>
#include <unordered_map>

namespace vmjit::vm {

namespace internal {

/// What a LinkError adds when no kernel library was given and a missing
/// name is close to no known one: how each front end supplies the kernels.
inline constexpr const char *kSupplyKernelsHint =
    ". A model's kernels come from its kernel library: `vmjit run PROG "
    "--lib model.so`, `vmjit.VirtualMachine(exe, libs=[\"model.so\"])` in "
    "Python, VMOptions::Libraries in C++ (a model.so that TVM's "
    "export_library wrote beside a .tvmexec of the same name is found by "
    "itself)";

/// Throws the LinkError for the packed functions `Missing` (function
/// indices) that no library and no registry provides: each with where the
/// executable first uses it and the closest name that is provided (and
/// kSupplyKernelsHint where it applies).
[[noreturn]] void
throwLinkError(const Executable &Exe, const std::vector<int64_t> &Missing,
               const Registry &Reg,
               const std::vector<std::shared_ptr<KernelLibrary>> &Libraries);

/// The name in `Known` closest to `Name`, if one is close: at most a third
/// of the name's characters differ (and at least one may). For "did you
/// mean" hints.
std::optional<std::string> closestName(const std::string &Name,
                                       const std::vector<std::string> &Known);

/// Raises the TypeError of a call of `F` with the wrong argument count.
inline int raiseArityError(const FunctionInfo &F, int32_t NumArgs) noexcept {
  VMJITErrorSetRaisedFromCStr(
      "TypeError", fmt::format("{}: expected {} argument{} but got {}", F.Name,
                               F.NumParams, F.NumParams == 1 ? "" : "s",
                               NumArgs)
                       .c_str());
  return -1;
}

/// Raises the error of calling a function value whose VM is gone.
inline int raiseDestroyedVM(const std::string &Name) noexcept {
  VMJITErrorSetRaisedFromCStr(
      "RuntimeError",
      fmt::format("function '{}' belongs to a VM that was destroyed", Name)
          .c_str());
  return -1;
}

/// Views of values the dispatch loop builds argument arrays from.
inline void viewOpaque(VMJITAny &Out, void *P) {
  Out.type_index = kVMJITOpaquePtr;
  Out.zero_padding = 0;
  Out.v_ptr = P;
}
inline void viewInt(VMJITAny &Out, int64_t V) {
  Out.type_index = kVMJITInt;
  Out.zero_padding = 0;
  Out.v_int64 = V;
}
inline void viewObject(VMJITAny &Out, FunctionObj *F) {
  Out.type_index = kVMJITFunction;
  Out.zero_padding = 0;
  Out.v_obj = F->raw();
}

/// copyIntoRegister of a raw string or byte array (an owned copy), or of
/// an object rvalue reference (the caller's last use, as tier-2 code
/// passes it), which is taken: the object moves into the register and the
/// caller's slot is left null, so no reference is added here or dropped by
/// the caller.
inline void copyViewIntoRegister(Any &Dst, const AnyView &Src) {
  if (Src.typeIndex() != kVMJITObjectRValueRef) {
    Dst = Any(Src);
    return;
  }
  auto **Slot = static_cast<VMJITObject **>(Src.raw().v_ptr);
  VMJITObject *O = Slot ? *Slot : nullptr;
  VMJITAny &D = const_cast<VMJITAny &>(Dst.raw());
  if (!O) {
    detail::setNone(D);
    return;
  }
  *Slot = nullptr;
  D.type_index = O->type_index;
  D.zero_padding = 0;
  D.v_obj = O;
}

/// Copies a borrowed value into an owned register: a new reference for an
/// object. Views are copyViewIntoRegister's.
inline void copyIntoRegister(Any &Dst, const AnyView &Src) {
  const int32_t T = Src.typeIndex();
  static_assert(kVMJITByteArrayPtr == kVMJITRawStr + 1 &&
                kVMJITObjectRValueRef == kVMJITRawStr + 2);
  // One test on the common path for the three views.
  if (T >= kVMJITRawStr && T <= kVMJITObjectRValueRef) [[unlikely]]
    return copyViewIntoRegister(Dst, Src);
  VMJITAny &D = const_cast<VMJITAny &>(Dst.raw());
  detail::copyWords(D, Src.raw());
  if (T >= kVMJITStaticObjectBegin)
    Object::fromRaw(D.v_obj)->incRef();
}

/// Moves a call's owned result into a register, releasing the old value.
inline void moveIntoRegister(Any &Dst, VMJITAny &Result) {
  VMJITAny &D = const_cast<VMJITAny &>(Dst.raw());
  VMJITAny Old;
  detail::copyWords(Old, D);
  detail::copyWords(D, Result);
  detail::releaseValue(Old);
}

} // namespace internal

//===----------------------------------------------------------------------===//
// Native function objects: pool entries of bytecode functions the JIT
// compiled.
//===----------------------------------------------------------------------===//

/// Runs the native code of bytecode function `Func` on `VM`: pushes a
/// frame (so the call depth and the register stack are shared with the
/// interpreter), copies the arguments into its registers, runs the code,
/// and on an error adds the frame's "in function" line. The code is read
/// from the controller's slot at every call (a higher tier takes over at
/// once), and the controller, which owns the code, lives as long as this
/// entry does.
class NativeFunctionObj : public FunctionObj {
public:
  NativeFunctionObj(VirtualMachine *VM, int64_t Func,
                    std::shared_ptr<TierController> Owner, std::string Name)
      : FunctionObj(objectDeleter<NativeFunctionObj>, &entry, std::move(Name),
                    /*FreeEntry=*/false),
        VM(VM), Func(Func), Slot(Owner->codeSlot(Func)),
        Owner(std::move(Owner)) {}
  VirtualMachine *VM;
  int64_t Func;
  const std::atomic<NativeFn> *Slot;

private:
  std::shared_ptr<TierController> Owner;
  friend VMJITSafeCallType nativeFunctionEntry() noexcept;
  static int entry(void *Self, const VMJITAny *Args, int32_t NumArgs,
                   VMJITAny *Result) noexcept;
  /// A call where native code may not run, on an interpreter that stays
  /// interpreted (out of line: entry's own frame stays small).
  [[gnu::noinline, gnu::cold]] static int
  runInterpreted(VirtualMachine &VM, int64_t Func, const AnyView *Args,
                 int32_t NumArgs, Any *Result) noexcept;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(offsetof(NativeFunctionObj, Slot) == kNativeFunctionSlotOffset);
#pragma GCC diagnostic pop

//===----------------------------------------------------------------------===//
// Frames and register files
//===----------------------------------------------------------------------===//

struct VirtualMachine::Frame {
  int64_t Func;
  /// Local index of the instruction being run (a call in progress).
  int64_t PC;
  Any *Regs;
  int64_t NumRegs;
  /// Where the caller wants the result (kVoidRegister: dropped).
  RegName ResultDst;
  /// Entered from C++ (invoke, a function object): returning from this
  /// frame ends the dispatch loop that runs it.
  bool Boundary;
  /// Entered while an instrument or the profiler was on: only such a frame
  /// reports its calls (while one still is), as only frames entered then
  /// run on the interpreter in every tier. A frame already running when
  /// one is set goes on unobserved, native or not (docs/interpreter.md).
  bool Observing;
};

/// Register files of the frame stack: chunks that never move, used as a
/// stack. Registers are None whenever they are not part of a live frame.
class VirtualMachine::RegisterStack {
public:
  /// Pushes N registers (all None); throws RecursionError if the stack
  /// would hold more than `Limit` registers.
  /// `Live` counts the registers of live frames (NativeCallState).
  explicit RegisterStack(uint64_t &Live) : Live(Live) {}
  Any *push(size_t N, size_t Limit) {
    if (Live + N > Limit)
      throwError("RecursionError",
                 fmt::format("the register stack is full: a frame of {} "
                             "registers on top of {} is over the limit of {}",
                             N, Live, Limit));
    if (Chunks.empty() || Chunks[Top].Used + N > Chunks[Top].Cap) {
      if (!Chunks.empty() && Chunks[Top].Used != 0)
        ++Top;
      while (Top < Chunks.size() && Chunks[Top].Cap < N)
        Chunks.erase(Chunks.begin() + static_cast<ptrdiff_t>(Top));
      if (Top == Chunks.size()) {
        size_t Cap = std::max<size_t>(N, kChunkRegs);
        Chunks.push_back({std::make_unique<Any[]>(Cap), Cap, 0});
      }
    }
    Chunk &C = Chunks[Top];
    Any *P = C.Data.get() + C.Used;
    C.Used += N;
    Live += N;
    return P;
  }
  /// Releases the values of the top N registers and pops them.
  void pop(Any *P, size_t N) noexcept {
    for (size_t I = 0; I < N; ++I)
      P[I].reset();
    popClean(N);
  }
  /// Pops the top N registers, which are already all None.
  void popClean(size_t N) noexcept {
    Chunk &C = Chunks[Top];
    C.Used -= N;
    Live -= N;
    if (C.Used == 0 && Top > 0)
      --Top;
  }

private:
  static constexpr size_t kChunkRegs = 16384;
  struct Chunk {
    std::unique_ptr<Any[]> Data;
    size_t Cap;
    size_t Used;
  };
  std::vector<Chunk> Chunks;
  size_t Top = 0;
  uint64_t &Live;
};

struct VirtualMachine::State {
  std::unordered_map<std::string, std::vector<Any>> Inputs;
  std::unordered_map<std::string, Any> Outputs;
  std::map<std::string, Function, std::less<>> Saved;
  /// Pool entries that run bytecode on the interpreter (null otherwise).
  std::vector<FunctionObj *> InterpEntries;
  /// Every native-code entry this VM made (they may outlive the VM).
  std::vector<NativeFunctionObj *> NativeEntries;
  /// Per function: runs TVM compiled-mode code (tvm_compiled.cpp).
  std::vector<char> TvmCompiled;
  /// Those functions' pool entries, which may outlive the VM: cut off
  /// from it when it is destroyed (the VM's PoolOwners, destroyed after
  /// this, keep them alive until then).
  struct TvmCompiledEntries {
    std::vector<FunctionObj *> Entries;
    ~TvmCompiledEntries();
  } TvmEntries;
  /// The pool as TVM-compiled code reads it (empty without such code).
  std::vector<Any> FunctionList;
};

class VirtualMachine::Interpreter {
public:
  explicit Interpreter(VirtualMachine &VM)
      : VM(VM), Exe(*VM.Exe), Code(Exe.code().data()),
        Offsets(Exe.instrOffsets().data()), Consts(Exe.constants().data()),
        InterpEntries(VM.Stateful->InterpEntries.data()),
        TvmCompiled(VM.Stateful->TvmCompiled.data()),
        AllocTensor(standardSpecial(SpecialBuiltin::AllocTensor)),
        AllocStorage(standardSpecial(SpecialBuiltin::AllocStorage)),
        MakeShape(standardSpecial(SpecialBuiltin::MakeShape)) {}

  /// Pushes a frame for bytecode function `Func` with its parameters copied
  /// from `Args` (VirtualMachine::enterFrame, shared with native entries).
  /// Throws RecursionError past the depth limit.
  void pushFrame(int64_t Func, const AnyView *Args, int64_t NumArgs,
                 RegName ResultDst, bool Boundary) {
    // A boundary frame starts a dispatch loop nested in the C++ caller's
    // (a call that re-entered the VM): it needs C stack, interpreted or
    // not, which runs out before MaxCallDepth on a small stack.
    if (Boundary && nativeStackNearlyExhausted()) [[unlikely]]
      throwError("RecursionError",
                 fmt::format("maximum call depth exceeded: the native stack "
                             "is exhausted at depth {}",
                             static_cast<int64_t>(VM.Frames.size()) +
                                 VM.CallState.NativeDepth));
    const int64_t NumRegs = Exe.function(Func).RegisterFileSize;
    Any *R = VM.enterFrame(Func, Args, NumArgs, /*Native=*/false);
    if (FeedbackSlot *Fb = VM.Feedback[static_cast<size_t>(Func)])
      for (int64_t K = 0; K < NumArgs; ++K)
        feedback::note(Fb[K], R[K].raw()); // (not a view)
    try {
      VM.Frames.push_back(
          {Func, 0, R, NumRegs, ResultDst, Boundary, VM.observingCalls()});
    } catch (...) {
      VM.Regs->pop(R, static_cast<size_t>(NumRegs));
      throw;
    }
  }

  /// Runs until the boundary frame on top of the stack returns. On an error
  /// every frame down to it adds its "in function" line and is popped.
  int run(Any *Out) noexcept;

  /// Runs every bytecode function this interpreter calls itself, native
  /// code or not, and takes no on-stack replacement: a native entry with
  /// too little native stack left runs its call so (nativeStackAvailable).
  bool StayInterpreted = false;

private:
  std::string frameLine(const Frame &F) const {
    return VM.frameLine(F.Func, F.PC);
  }
  /// Unwinds to (and including) the boundary frame, recording each frame
  /// in `E`, and raises it.
  int fail(Error E) noexcept;
  int callSlow(Frame &F, const Word *I, const AnyView *Args, int64_t N,
               Any &Dst);
  // The dispatch loop's steps (inlined into it).
  /// null_value() into `Dst` of the registers `R`: the old value released,
  /// None stored, the call of `Callee` counted.
  [[gnu::always_inline]] inline void clearRegister(int64_t Callee, RegName Dst,
                                                   Any *R) noexcept;
  /// Views of the N argument words at `Words` (registers of `R`,
  /// immediates, constants, functions) into `Args`.
  [[gnu::always_inline]] inline void viewArguments(AnyView *Args,
                                                   const Word *Words, int64_t N,
                                                   const Any *R) noexcept;
  /// Calls packed function `Fn` (at instruction PC of function Caller);
  /// the standard allocation builtins through the call site's cache.
  [[gnu::always_inline]] inline int callPacked(FunctionObj *Fn, int64_t Caller,
                                               int64_t PC, const VMJITAny *A,
                                               int32_t NA,
                                               VMJITAny &Result) noexcept;
  /// Records result `V` of the call at `PC` of `Func` as type feedback,
  /// when the JIT wants it (TierController::feedback).
  void noteResult(int64_t Func, int64_t PC, const VMJITAny &V) noexcept {
    if (FeedbackSlot *Fb = VM.Feedback[static_cast<size_t>(Func)])
      feedback::note(Fb[Exe.function(Func).NumParams + PC], V);
  }

public:
  /// The JIT tier at a call of bytecode function `Func` (its `Count`th):
  /// adopts native code if it is ready (returns true), else reports the
  /// function hot at the threshold.
  bool tierUp(int64_t Func, uint64_t Count);
  /// A backward jump to PC was taken: counts it and, if native code for
  /// the function exists, finishes the frame there (OSR). Returns 1 with
  /// the frame's result in RetVal when it did, 0 to go on interpreting,
  /// -1 with an error raised (and the frame's PC at the failure).
  int backEdge(Frame *&F, Any *R, int64_t PC, size_t FrameIdx,
               VMJITAny &RetVal);

  VirtualMachine &VM;
  const Executable &Exe;
  const Word *Code;
  const int64_t *Offsets;
  const Any *Consts;
  FunctionObj *const *InterpEntries;
  const char *TvmCompiled;
  /// The standard allocation builtins (callPacked).
  FunctionObj *const AllocTensor, *const AllocStorage, *const MakeShape;
};

} // namespace vmjit::vm

#endif // VMJIT_LIB_VM_VM_INTERNAL_H
