//===- virtual_machine.cpp - The bytecode interpreter ----------------------===//
//
// The dispatch loop runs bytecode frames without recursing on the native
// stack for VM-to-VM calls: a call of a bytecode function whose pool entry
// is still the interpreter pushes a frame; Ret pops it and moves the result
// into the caller's destination register. Everything else (packed
// functions, native code swapped in by the JIT) is called through its
// safe-call entry with an argument array of borrowed views built from
// registers, immediates and constants.
//
//===----------------------------------------------------------------------===//

#include "vm_internal.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/logging.h"
#include "vmjit/runtime/string.h"
#include "vmjit/vm/signal_check.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <pthread.h>
#include <unordered_map>

namespace vmjit::vm {

using namespace internal;

//===----------------------------------------------------------------------===//
// VM function objects: the pool entries of bytecode functions.
//===----------------------------------------------------------------------===//

namespace {

/// Runs bytecode function `Func` on `VM`. The VM clears `VM` when it is
/// destroyed, so an escaped function (a closure returned to the caller)
/// fails cleanly instead of touching freed memory.
class VMFunctionObj : public FunctionObj {
public:
  VMFunctionObj(VirtualMachine *VM, int64_t Func, std::string Name)
      : FunctionObj(objectDeleter<VMFunctionObj>, &entry, std::move(Name),
                    /*FreeEntry=*/false),
        VM(VM), Func(Func) {}
  VirtualMachine *VM;
  int64_t Func;

private:
  static int entry(void *Self, const VMJITAny *Args, int32_t NumArgs,
                   VMJITAny *Result) noexcept {
    auto *F = static_cast<VMFunctionObj *>(Self);
    if (!F->VM) {
        return raiseDestroyedVM(F->name());
    }
    return F->VM->runFunction(F->Func,
                              reinterpret_cast<const AnyView *>(Args), NumArgs,
                              reinterpret_cast<Any *>(Result));
  }
};

constexpr int kInlineArgs = 16;

/// What `if %void` tests: None (type index 0, zero payload).
constexpr VMJITAny kNoneValue = {};

} // namespace

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

VirtualMachine::VirtualMachine(std::shared_ptr<const Executable> E, VMOptions O)
    : Exe(std::move(E)), Opts(std::move(O)),
      Alloc(makeAllocator(Opts.Allocator)),
      Regs(std::make_unique<RegisterStack>(CallState.LiveRegisters)),
      Stateful(std::make_unique<State>()) {
  if (Opts.Devices.empty())
    Opts.Devices.push_back(cpuDevice());
  CallState.MaxDepth = Opts.MaxCallDepth;
  CallState.MaxRegisters = static_cast<uint64_t>(Opts.MaxStackRegisters);
  size_t N = Exe->functions().size();
  Pool = std::make_unique<std::atomic<FunctionObj *>[]>(N);
  CallCounts.assign(N, 0);
  BackEdges.assign(N, 0);
  OSREntries.assign(N, 0);
  IsNative.assign(N, 0);
  CallsBeforeNative.assign(N, 0);
  Feedback.assign(N, nullptr);
  Profile.resize(N);
  Stateful->InterpEntries.assign(N, nullptr);
  Stateful->TvmCompiled.assign(N, 0);
  Frames.reserve(64);
}

std::unique_ptr<VirtualMachine>
VirtualMachine::create(std::shared_ptr<const Executable> Exe, VMOptions Opts) {
  registerVMBuiltins();
  std::unique_ptr<VirtualMachine> VM(
      new VirtualMachine(std::move(Exe), std::move(Opts)));
  VM->resolvePool();
  return VM;
}

void VirtualMachine::resolvePool() {
  const Registry &Reg =
      Opts.FunctionRegistry ? *Opts.FunctionRegistry : Registry::global();
  std::vector<int64_t> Missing;
  for (size_t I = 0; I < Exe->functions().size(); ++I) {
    const FunctionInfo &F = Exe->functions()[I];
    Function Entry;
    if (F.Kind == FunctionKind::Bytecode) {
      auto Obj = makeObject<VMFunctionObj>(this, static_cast<int64_t>(I),
                                           F.Name);
      Stateful->InterpEntries[I] = Obj.get();
      Entry = Function(ObjectPtr<Object>(std::move(Obj)));
    } else if (auto Compiled = F.Kind == FunctionKind::Native
                                   ? tvmCompiledEntry(static_cast<int64_t>(I))
                                   : std::nullopt) {
      Entry = std::move(*Compiled);
      Stateful->TvmCompiled[I] = 1;
    } else {
      for (const auto &Lib : Opts.Libraries) {
        if (auto Found = Lib->find(F.Name)) {
          Entry = *Found;
          break;
        }
      }
      if (!Entry.defined())
        if (auto Found = Reg.find(F.Name))
          Entry = *Found;
      if (!Entry.defined()) {
        Missing.push_back(static_cast<int64_t>(I));
        continue;
      }
    }
    Pool[I].store(Entry.get(), std::memory_order_relaxed);
    PoolOwners.push_back(std::move(Entry));
  }
  if (!Missing.empty())
    throwLinkError(*Exe, Missing, Reg, Opts.Libraries);
  if (std::find(Stateful->TvmCompiled.begin(), Stateful->TvmCompiled.end(),
                1) != Stateful->TvmCompiled.end())
    buildFunctionList();
}

bool VirtualMachine::isTvmCompiled(int64_t Func) const noexcept {
  return Stateful->TvmCompiled[static_cast<size_t>(Func)] != 0;
}

bool VirtualMachine::countsAtCall(int64_t Func) const noexcept {
  return Exe->function(Func).Kind != FunctionKind::Bytecode &&
         !isTvmCompiled(Func);
}

VirtualMachine::~VirtualMachine() {
  // Function objects that escaped (closures handed to the caller) must not
  // reach this VM any more.
  for (FunctionObj *F : Stateful->InterpEntries)
    if (F)
      static_cast<VMFunctionObj *>(F)->VM = nullptr;
  for (NativeFunctionObj *F : Stateful->NativeEntries)
    F->VM = nullptr;
}

Error ifConditionError(const VMJITAny &Cond) {
  return Error("TypeError",
               fmt::format("if: the condition must be an int or a bool, not {}",
                           valueTypeName(Cond)));
}

namespace {
/// What a frame line says about instruction `I`: its kind where it is a
/// call or an if (" (call 'G')", " (if)"), else nothing.
std::string instrNote(const Executable &Exe, InstrView I) {
  switch (I.opcode()) {
  case Opcode::Call:
    return fmt::format(" (call '{}')", Exe.function(I.callFunc()).Name);
  case Opcode::If:
    return " (if)";
  default:
    return {};
  }
}

/// " at FILE:LINE:COL" (" at FILE:LINE" without a column) where the
/// program knows the text of instruction `Index`, else nothing.
std::string sourceNote(const Executable &Exe, int64_t Index) {
  const SourcePos *P = Exe.sourcePos(Index);
  if (!P)
    return {};
  const std::string &File = Exe.sourceMap()->File;
  return P->Col ? fmt::format(" at {}:{}:{}", File, P->Line, P->Col)
                : fmt::format(" at {}:{}", File, P->Line);
}
} // namespace

std::string VirtualMachine::frameLine(int64_t Func, int64_t PC) const {
  const FunctionInfo &Fn = Exe->function(Func);
  std::string S = fmt::format("in function '{}', instruction {}", Fn.Name, PC);
  if (PC < 0 || PC >= Fn.numInstrs())
    return S;
  const int64_t Index = Fn.StartInstr + PC;
  return S + instrNote(*Exe, Exe->instr(Index)) + sourceNote(*Exe, Index);
}

void VirtualMachine::replacePoolEntry(int64_t Func, Function Entry) {
  FunctionObj *P = Entry.get();
  // An entry may come back (the interpreter's, when the JIT is detached):
  // it is owned once.
  if (std::none_of(PoolOwners.begin(), PoolOwners.end(),
                   [P](const Function &F) { return F.get() == P; }))
    PoolOwners.push_back(std::move(Entry));
  Pool[static_cast<size_t>(Func)].store(P, std::memory_order_release);
}

void VirtualMachine::dropRetiredPoolEntries() {
  // Only between calls: a running call may be inside an entry the pool no
  // longer holds. A native-code entry no frame, value or pool slot refers
  // to any more (its only reference is PoolOwners') goes; the
  // interpreter's entries stay (InterpEntries points at them).
  if (!Frames.empty() || CallState.NativeDepth != 0)
    return;
  const size_t N = Exe->functions().size();
  auto inPool = [&](const Function &F) {
    for (size_t I = 0; I < N; ++I)
      if (Pool[I].load(std::memory_order_relaxed) == F.get())
        return true;
    return false;
  };
  auto &Native = Stateful->NativeEntries;
  std::erase_if(PoolOwners, [&](const Function &F) {
    auto It = std::find(Native.begin(), Native.end(),
                        static_cast<const void *>(F.get()));
    if (It == Native.end() || F.useCount() != 1 || inPool(F))
      return false;
    Native.erase(It);
    return true;
  });
}

//===----------------------------------------------------------------------===//
// The dispatch loop
//===----------------------------------------------------------------------===//

int VirtualMachine::Interpreter::fail(Error E) noexcept {
  try {
    while (true) {
      Frame F = VM.Frames.back();
      E.addFrame(frameLine(F));
      VM.Regs->pop(F.Regs, static_cast<size_t>(F.NumRegs));
      VM.Frames.pop_back();
      if (F.Boundary)
        break;
    }
  } catch (...) {
    // Out of memory while recording frames: still unwind.
    while (!VM.Frames.empty()) {
      Frame F = VM.Frames.back();
      VM.Regs->pop(F.Regs, static_cast<size_t>(F.NumRegs));
      VM.Frames.pop_back();
      if (F.Boundary)
        break;
    }
  }
  setRaisedError(E);
  return -1;
}

int VirtualMachine::Interpreter::callSlow(Frame &F, const Word *I,
                                          const AnyView *Args, int64_t N,
                                          Any &Dst) {
  int64_t Callee = I[2];
  CallEvent Ev{VM, F.Func, F.PC, Callee, Exe.function(Callee).Name,
               std::span<const AnyView>(Args, static_cast<size_t>(N)), true};
  if (VM.Instrument &&
      VM.Instrument(Ev) == InstrumentAction::SkipCall) {
    Dst.reset();
    return 0;
  }
  auto Start = std::chrono::steady_clock::now();
  Any Result;
  FunctionObj *Fn = VM.poolEntry(Callee);
  if (InterpEntries[Callee] == nullptr && !TvmCompiled[Callee])
    ++VM.CallCounts[static_cast<size_t>(Callee)];
  int Rc = Fn->safeCall(Args, static_cast<int32_t>(N), &Result);
  if (VM.Profiling) {
    ProfileEntry &P = VM.Profile[static_cast<size_t>(Callee)];
    ++P.Calls;
    P.TotalNs += std::chrono::duration<double, std::nano>(
                     std::chrono::steady_clock::now() - Start)
                     .count();
  }
  if (Rc != 0)
    return Rc;
  if (VM.Instrument) {
    Ev.Before = false;
    Ev.Result = &Result;
    VM.Instrument(Ev);
  }
  Dst = std::move(Result);
  return 0;
}

void VirtualMachine::Interpreter::clearRegister(int64_t Callee, RegName Dst,
                                                Any *R) noexcept {
  // The standard vm.builtin.null_value(), which TVM's compiler emits after
  // the last use of every value: the destination's old value released and
  // None stored, no call. Counted as the call it stands for.
  ++VM.CallCounts[static_cast<size_t>(Callee)];
  if (Dst == kVoidRegister)
    return;
  // A view an allocation site holds too goes back to it without an atomic
  // operation.
  VMJITAny &D = const_cast<VMJITAny &>(R[Dst].raw());
  VMJITAny Old;
  detail::copyWords(Old, D);
  detail::setNone(D);
  if (!releasedToSite(Old, &VM))
    detail::releaseValue(Old);
}

void VirtualMachine::Interpreter::viewArguments(AnyView *Args,
                                                const Word *Words, int64_t N,
                                                const Any *R) noexcept {
  for (int64_t K = 0; K < N; ++K) {
    const Arg A = Arg::fromWord(Words[K]);
    const int64_t V = A.value();
    VMJITAny &Slot = const_cast<VMJITAny &>(Args[K].raw());
    switch (A.kind()) {
    case ArgKind::Register:
      // One compare: the verifier admits only registers of the file
      // (below 2^54) and the two special ones at 2^54, 2^54 + 1.
      static_assert(kVMRegister == kVoidRegister + 1);
      if (V >= kVoidRegister) [[unlikely]] {
        if (V == kVMRegister)
          viewOpaque(Slot, &VM);
        else // %void reads as None
          detail::setNone(Slot);
      } else {
        detail::copyWords(Slot, R[V].raw());
      }
      break;
    case ArgKind::Immediate:
      viewInt(Slot, V);
      break;
    case ArgKind::ConstIdx:
      detail::copyWords(Slot, Consts[V].raw());
      break;
    default: // FuncIdx (the verifier admits only the four kinds)
      viewObject(Slot, VM.poolEntry(V));
      break;
    }
  }
}

int VirtualMachine::Interpreter::callPacked(FunctionObj *Fn, int64_t Caller,
                                            int64_t PC, const VMJITAny *A,
                                            int32_t NA,
                                            VMJITAny &Result) noexcept {
  // The standard allocation builtins go through their call site's cache
  // (vm/alloc_sites.h), as in the JIT tiers.
  if (Fn == AllocTensor)
    return VM.Sites.allocTensor(VM, Caller, PC, A, NA, &Result);
  if (Fn == AllocStorage)
    return VM.Sites.allocStorage(VM, Caller, PC, A, NA, &Result);
  if (Fn == MakeShape)
    return VM.Sites.makeShape(VM, Caller, PC, A, NA, &Result);
  return Fn->entry()(Fn, A, NA, &Result);
}

// One function (its steps always inlined), over 120 lines on purpose: the
// dispatch loop's state (the frame, its registers, the pc, the offsets)
// lives in machine registers across instructions only while the loop is
// one function; a step out of line would take it through memory.
int VirtualMachine::Interpreter::run(Any *Out) noexcept {
  AnyView InlineArgs[kInlineArgs];
  std::vector<AnyView> HeapArgs;
  Any Discard; // the destination of calls into the void register
  VMJITAny RetVal;
  // null_value runs inline (clearRegister) when the pool holds the
  // standard function object: a user's replacement is called.
  FunctionObj *const NullValue = standardSpecial(SpecialBuiltin::NullValue);

  size_t FrameIdx = VM.Frames.size() - 1;
  Frame *F = &VM.Frames[FrameIdx];
  // Whether the current frame reports its calls (Frame::Observing).
  auto observing = [&] { return F->Observing && VM.observingCalls(); };
  const int64_t *Off = Offsets + Exe.function(F->Func).StartInstr;
  Any *R = F->Regs;
  int64_t PC = F->PC;

  // Takes a jump; a backward one is counted and may move the frame into
  // native code (see backEdge for the result).
  auto jump = [&](int64_t Offset) {
    PC += Offset;
    if (Offset > 0)
      return 0;
    if (VM.step() != 0) [[unlikely]] {
      F->PC = PC - Offset; // the failing jump
      return -1;
    }
    return backEdge(F, R, PC, FrameIdx, RetVal);
  };

  try {
    for (;;) {
      const Word *I = Code + Off[PC];
      switch (static_cast<Opcode>(I[0])) {
      case Opcode::Call: {
        const int64_t N = I[3];
        if (N == 0 && VM.poolEntry(I[2]) == NullValue && !observing()) {
          clearRegister(I[2], I[1], R);
          ++PC;
          continue;
        }
        AnyView *Args = InlineArgs;
        if (N > kInlineArgs) {
          HeapArgs.resize(static_cast<size_t>(N));
          Args = HeapArgs.data();
        }
        viewArguments(Args, I + 4, N, R);
        const int64_t Callee = I[2];
        const RegName DstReg = I[1];
        FunctionObj *Fn = VM.poolEntry(Callee);
        F->PC = PC;
        if ((Fn == InterpEntries[Callee] ||
             (StayInterpreted && VM.IsNative[static_cast<size_t>(Callee)])) &&
            !observing()) {
          // (Bytecode mode decides on VM.Tier alone, as before.)
          if (!VM.Tier || StayInterpreted ||
              !tierUp(Callee, VM.CallCounts[static_cast<size_t>(Callee)] + 1)) {
            // A bytecode function still run by the interpreter: a new frame.
            pushFrame(Callee, Args, N, DstReg, /*Boundary=*/false);
            F = &VM.Frames[++FrameIdx];
            Off = Offsets + Exe.function(Callee).StartInstr;
            R = F->Regs;
            PC = 0;
            continue;
          }
          Fn = VM.poolEntry(Callee); // native code was just swapped in
        }
        Any &Dst = DstReg == kVoidRegister ? Discard : R[DstReg];
        if (observing()) {
          if (callSlow(*F, I, Args, N, Dst) != 0)
            return fail(takeRaisedError());
        } else {
          VMJITAny Result;
          detail::setNone(Result);
          const auto *A = reinterpret_cast<const VMJITAny *>(Args);
          const auto NA = static_cast<int32_t>(N);
          // Read before the call: it may re-enter this VM (invoke_closure
          // of a bytecode function, a callback calling the VM) and grow
          // the frame vector, so F is not read again until taken anew.
          const int64_t Caller = F->Func;
          int Rc = callPacked(Fn, Caller, PC, A, NA, Result);
          // Every call made is counted, one that fails too (bytecode
          // functions and TVM-compiled code count their own entries).
          if (InterpEntries[Callee] == nullptr && !TvmCompiled[Callee])
            ++VM.CallCounts[static_cast<size_t>(Callee)];
          if (Rc != 0) [[unlikely]]
            return fail(takeRaisedError());
          noteResult(Caller, PC, Result);
          moveIntoRegister(Dst, Result);
        }
        if (DstReg == kVoidRegister)
          Discard.reset();
        // A nested run may have grown the frame vector.
        F = &VM.Frames[FrameIdx];
        ++PC;
        continue;
      }
      case Opcode::Ret: {
        if (I[1] == kVoidRegister) [[unlikely]] {
          detail::setNone(RetVal); // `ret %void` returns None
          break;
        }
        VMJITAny &Src = const_cast<VMJITAny &>(R[I[1]].raw());
        detail::copyWords(RetVal, Src);
        detail::setNone(Src);
        break; // to the return below
      }
      case Opcode::Goto: {
        int Osr = jump(I[1]);
        if (Osr < 0)
          return fail(takeRaisedError());
        if (Osr > 0)
          break; // the frame finished in native code
        continue;
      }
      case Opcode::If: {
        const VMJITAny &C = I[1] == kVoidRegister ? kNoneValue : R[I[1]].raw();
        if (C.type_index != kVMJITInt && C.type_index != kVMJITBool)
            [[unlikely]] {
          F->PC = PC;
          return fail(ifConditionError(C));
        }
        int Osr = jump(C.v_int64 != 0 ? 1 : I[2]);
        if (Osr < 0)
          return fail(takeRaisedError());
        if (Osr > 0)
          break;
        continue;
      }
      default:
        // The verifier admits only the four opcodes.
        __builtin_unreachable();
      }

      // Return from the current frame with RetVal.
      const Frame Done = *F;
      VM.Regs->pop(Done.Regs, static_cast<size_t>(Done.NumRegs));
      VM.Frames.pop_back();
      if (Done.Boundary) {
        *Out = Any::fromRawOwned(RetVal);
        return 0;
      }
      F = &VM.Frames[--FrameIdx];
      Off = Offsets + Exe.function(F->Func).StartInstr;
      R = F->Regs;
      PC = F->PC;
      if (Done.ResultDst == kVoidRegister) {
        detail::releaseValue(RetVal);
      } else {
        noteResult(F->Func, PC, RetVal);
        moveIntoRegister(R[Done.ResultDst], RetVal);
      }
      ++PC;
    }
  } catch (const Error &E) {
    F = &VM.Frames[FrameIdx];
    F->PC = PC;
    return fail(E);
  } catch (...) {
    F = &VM.Frames[FrameIdx];
    F->PC = PC;
    detail::raiseCurrentException();
    return fail(takeRaisedError());
  }
}

std::string_view execModeName(ExecMode M) noexcept {
  switch (M) {
  case ExecMode::Bytecode:
    return "bytecode";
  case ExecMode::Baseline:
    return "baseline";
  case ExecMode::Compiled:
    return "compiled";
  case ExecMode::Tiered:
    return "tiered";
  }
  return "unknown";
}

std::optional<ExecMode> parseExecMode(std::string_view Name) noexcept {
  for (ExecMode M : kAllExecModes)
    if (Name == execModeName(M))
      return M;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Steps: the budget, the deadline and interrupt requests
//===----------------------------------------------------------------------===//

void VirtualMachine::beginOutermostCall() noexcept {
  Active = Opts.Limits;
  Reserve = Active.MaxSteps == 0 ||
                    Active.MaxSteps > static_cast<uint64_t>(INT64_MAX)
                ? INT64_MAX
                : static_cast<int64_t>(Active.MaxSteps);
  if (Active.Timeout.count() > 0)
    Deadline = std::chrono::steady_clock::now() + Active.Timeout;
  Granted = 0;
  Control.Fuel = grantFuel();
}

namespace {
std::atomic<SignalCheck> TheSignalCheck{nullptr};
} // namespace

void setSignalCheck(SignalCheck Check) noexcept { TheSignalCheck = Check; }
SignalCheck signalCheck() noexcept { return TheSignalCheck.load(); }

int64_t VirtualMachine::grantFuel() noexcept {
  const bool Chunked = Active.Timeout.count() > 0 || signalCheck();
  const int64_t N = Chunked ? std::min(Reserve, kDeadlineCheckSteps) : Reserve;
  Reserve -= N;
  Granted += N;
  return N;
}

uint64_t VirtualMachine::stepsTaken() const noexcept {
  return static_cast<uint64_t>(Granted - std::max<int64_t>(Control.Fuel, 0));
}

int VirtualMachine::stepSlow() noexcept {
  if (Control.Interrupt.exchange(0, std::memory_order_acquire) != 0) {
    VMJITErrorSetRaisedFromCStr("InterruptedError",
                                "the call was interrupted");
    return -1;
  }
  if (Control.Fuel >= 0)
    return 0; // the request was withdrawn meanwhile
  // The current allotment is used up: this step starts the next one.
  if (SignalCheck Check = signalCheck(); Check && Check() != 0) {
    Control.Fuel = -1;
    return -1;
  }
  if (Active.Timeout.count() > 0 &&
      std::chrono::steady_clock::now() >= Deadline) {
    Control.Fuel = -1;
    VMJITErrorSetRaisedFromCStr(
        "TimeoutError",
        fmt::format("the call exceeded its time limit of {} ms",
                    std::chrono::duration<double, std::milli>(Active.Timeout)
                        .count())
            .c_str());
    return -1;
  }
  if (Reserve == 0) {
    Control.Fuel = -1;
    VMJITErrorSetRaisedFromCStr(
        "StepLimitError",
        fmt::format("the call exceeded its budget of {} steps (bytecode "
                    "function entries and backward jumps)",
                    Active.MaxSteps)
            .c_str());
    return -1;
  }
  Control.Fuel = grantFuel() - 1;
  return 0;
}

Any *VirtualMachine::enterFrame(int64_t Func, const AnyView *Args,
                                int64_t NumArgs, bool Native) {
  const int64_t Depth =
      static_cast<int64_t>(Frames.size()) + CallState.NativeDepth;
  if (Depth == 0)
    beginOutermostCall();
  if (Depth >= Opts.MaxCallDepth)
    throwError("RecursionError", fmt::format("maximum call depth of {} exceeded",
                                             Opts.MaxCallDepth));
  if (Native && !nativeStackAvailable()) [[unlikely]]
    throwError("RecursionError",
               fmt::format("maximum call depth exceeded: the native stack is "
                           "exhausted at depth {}",
                           Depth));
  if (step() != 0) [[unlikely]]
    throwRaisedError();
  const size_t NumRegs =
      static_cast<size_t>(Exe->function(Func).RegisterFileSize);
  Any *R = Regs->push(NumRegs, static_cast<size_t>(Opts.MaxStackRegisters));
  try {
    for (int64_t I = 0; I < NumArgs; ++I)
      copyIntoRegister(R[I], Args[I]);
  } catch (...) {
    // Never leave a half-built frame behind.
    Regs->pop(R, NumRegs);
    throw;
  }
  ++CallCounts[static_cast<size_t>(Func)];
  return R;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

int VirtualMachine::runFunction(int64_t Func, const AnyView *Args,
                                int32_t NumArgs, Any *Result) noexcept {
  const FunctionInfo &F = Exe->function(Func);
  FunctionObj *Interp = Stateful->InterpEntries[static_cast<size_t>(Func)];
  if (!observingCalls()) {
    if (poolEntry(Func) == Interp && Tier)
      Interpreter(*this).tierUp(Func,
                                CallCounts[static_cast<size_t>(Func)] + 1);
    FunctionObj *Entry = poolEntry(Func);
    if (Entry != Interp)
      return Entry->safeCall(Args, NumArgs, Result); // swapped by the JIT
  }
  // Made only for a call the interpreter runs: native code needs none.
  Interpreter In(*this);
  if (NumArgs != F.NumParams)
    return raiseArityError(F, NumArgs);
  try {
    In.pushFrame(Func, Args, NumArgs, kVoidRegister, /*Boundary=*/true);
  } catch (...) {
    return detail::raiseCurrentException();
  }
  return In.run(Result);
}

Any VirtualMachine::invoke(int64_t Func, std::span<const AnyView> Args) {
  if (Func < 0 || Func >= static_cast<int64_t>(Exe->functions().size()))
    throwError("LookupError", fmt::format("no function with index {}", Func));
  Any Result;
  int Rc = Exe->function(Func).Kind == FunctionKind::Bytecode
               ? runFunction(Func, Args.data(),
                             static_cast<int32_t>(Args.size()), &Result)
               : poolEntry(Func)->safeCall(
                     Args.data(), static_cast<int32_t>(Args.size()), &Result);
  if (Rc != 0)
    throwRaisedError();
  return Result;
}

namespace {
/// 'a', 'b', 'c'.
std::string quotedList(const std::vector<std::string> &Names) {
  std::string Out;
  for (const std::string &N : Names)
    Out += fmt::format("{}'{}'", Out.empty() ? "" : ", ", N);
  return Out;
}
} // namespace

int64_t VirtualMachine::functionIndex(std::string_view Func) const {
  if (auto I = Exe->findFunction(Func))
    return *I;
  std::vector<std::string> Names;
  for (const FunctionInfo &F : Exe->functions())
    if (F.Kind != FunctionKind::Packed)
      Names.push_back(F.Name);
  std::string Hint;
  if (auto C = internal::closestName(std::string(Func), Names))
    Hint = fmt::format("; did you mean '{}'?", *C);
  else if (Names.empty())
    Hint = " (it has no function to call)";
  else if (Names.size() <= 20)
    Hint = fmt::format("; it has {}", quotedList(Names));
  else
    Hint = fmt::format("; it has {} and {} more",
                       quotedList({Names.begin(), Names.begin() + 20}),
                       Names.size() - 20);
  throwError(
      "LookupError",
      fmt::format("the executable has no function named '{}'{}", Func, Hint));
}

Any VirtualMachine::invoke(std::string_view Func,
                           std::span<const AnyView> Args) {
  auto It = Stateful->Saved.find(Func);
  if (It != Stateful->Saved.end())
    return It->second.callPacked(Args.data(),
                                 static_cast<int32_t>(Args.size()));
  return invoke(functionIndex(Func), Args);
}

Function VirtualMachine::getFunction(std::string_view Func) {
  auto It = Stateful->Saved.find(Func);
  if (It != Stateful->Saved.end())
    return It->second;
  int64_t I = functionIndex(Func);
  return Function(ObjectPtr<Object>::share(
      Stateful->InterpEntries[static_cast<size_t>(I)]
          ? static_cast<Object *>(Stateful->InterpEntries[static_cast<size_t>(I)])
          : static_cast<Object *>(poolEntry(I))));
}

//===----------------------------------------------------------------------===//
// Stateful API, saved functions
//===----------------------------------------------------------------------===//

void VirtualMachine::setInput(std::string_view Func, std::vector<Any> Args) {
  functionIndex(Func); // it must exist
  Stateful->Inputs[std::string(Func)] = std::move(Args);
}

Any VirtualMachine::invokeStateful(std::string_view Func) {
  auto It = Stateful->Inputs.find(std::string(Func));
  if (It == Stateful->Inputs.end())
    throwError("LookupError",
               fmt::format("invoke_stateful('{}'): no inputs were set with "
                           "set_input",
                           Func));
  std::vector<AnyView> Views(It->second.begin(), It->second.end());
  Any R = invoke(Func, Views);
  Stateful->Outputs[std::string(Func)] = R;
  return R;
}

Any VirtualMachine::getOutput(std::string_view Func) const {
  auto It = Stateful->Outputs.find(std::string(Func));
  if (It == Stateful->Outputs.end())
    throwError("LookupError",
               fmt::format("get_output('{}'): the function has not been run "
                           "with invoke_stateful",
                           Func));
  return It->second;
}

int64_t VirtualMachine::getOutputArity(std::string_view Func) const {
  Any Out = getOutput(Func);
  if (auto A = Out.as<Array>())
    return static_cast<int64_t>(A->size());
  return -1;
}

void VirtualMachine::saveFunction(std::string_view Func,
                                  const std::string &SavedName,
                                  std::vector<Any> Args) {
  int64_t I = functionIndex(Func);
  Stateful->Saved[SavedName] = Function::fromPacked(
      SavedName, [this, I, Args = std::move(Args)](PackedArgs Extra,
                                                   Any *Result) {
        std::vector<AnyView> Views(Args.begin(), Args.end());
        for (int32_t K = 0; K < Extra.size(); ++K)
          Views.push_back(Extra[K]);
        *Result = invoke(I, Views);
      });
}

bool VirtualMachine::isSavedFunction(std::string_view Name) const {
  return Stateful->Saved.find(Name) != Stateful->Saved.end();
}

//===----------------------------------------------------------------------===//
// Instrumentation and profiling
//===----------------------------------------------------------------------===//

void VirtualMachine::setInstrument(InstrumentFn Fn) {
  Instrument = std::move(Fn);
  CallState.Observing = observingCalls();
}

void VirtualMachine::setProfiling(bool On) {
  Profiling = On;
  CallState.Observing = observingCalls();
}

void VirtualMachine::resetProfile() {
  for (ProfileEntry &P : Profile)
    P = ProfileEntry();
}

std::vector<ProfileEntry> VirtualMachine::profile() const {
  std::vector<ProfileEntry> Out;
  for (size_t I = 0; I < Profile.size(); ++I) {
    if (!Profile[I].Calls)
      continue;
    ProfileEntry E = Profile[I];
    E.Name = Exe->functions()[I].Name;
    Out.push_back(std::move(E));
  }
  return Out;
}

std::string VirtualMachine::profileTable() const {
  std::vector<ProfileEntry> P = profile();
  std::sort(P.begin(), P.end(), [](const ProfileEntry &A, const ProfileEntry &B) {
    return A.TotalNs > B.TotalNs;
  });
  size_t Width = 6;
  for (const ProfileEntry &E : P)
    Width = std::max(Width, E.Name.size());
  std::string S = fmt::format("{:<{}}  {:>10}  {:>14}  {:>12}\n", "callee",
                              Width, "calls", "total (us)", "mean (ns)");
  for (const ProfileEntry &E : P)
    S += fmt::format("{:<{}}  {:>10}  {:>14.3f}  {:>12.1f}\n", E.Name, Width,
                     E.Calls, E.TotalNs / 1000.0, E.meanNs());
  return S;
}

} // namespace vmjit::vm
