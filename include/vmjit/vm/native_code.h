//===- vmjit/vm/native_code.h - Native code for bytecode functions -*- C++ -*-===//
//
// The contract between the interpreter and the JIT tier. JIT code for a
// bytecode function works on the interpreter's own register file:
//
//   int fn(NativeContext *Ctx, Any *Regs, const Any *Consts,
//          std::atomic<FunctionObj *> *Funcs, int64_t EntryPC);
//
// Regs is the frame's register file (parameters in %0..%k-1), Consts the
// executable's constant pool, Funcs the VM's function pool (loaded at every
// call of a bytecode function, so later swaps are seen), EntryPC the
// instruction to start at: 0 for a call, a loop header for on-stack
// replacement. It returns 0 with the result moved into *Ctx->Result, or -1
// with an error raised and Ctx->ErrorPC set to the failing instruction.
// Either way it leaves the register file all None (it releases every
// value itself), so the frame is popped without another pass over it.
//
// At every backward jump it takes, the code counts a step on
// *Ctx->Control exactly as the interpreter does (decrement Fuel, test the
// interrupt flag) and calls vmjit_jit_step when either says so; entries
// of bytecode functions are counted by the VM's call path in every tier.
//
// A TierController (implemented by the JIT, jit/tier_manager.h) tells the
// interpreter which functions have native code and hears which are hot.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_NATIVE_CODE_H
#define VMJIT_VM_NATIVE_CODE_H

#include "vmjit/runtime/function.h"

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vmjit::vm {

class VirtualMachine;
struct AllocSite;
struct FeedbackSlot;

/// The step counter and interrupt flag that every tier checks at each
/// step (JIT code reads them at these fixed offsets).
struct StepControl {
  /// Steps left before the slow path runs (it refills from the budget,
  /// looks at the clock, or fails the call). Only the VM's thread writes.
  int64_t Fuel = INT64_MAX;
  /// Set by VirtualMachine::interrupt from any thread.
  std::atomic<uint32_t> Interrupt{0};
};
static_assert(offsetof(StepControl, Fuel) == 0);
static_assert(offsetof(StepControl, Interrupt) == 8);
static_assert(sizeof(std::atomic<uint32_t>) == 4);

/// What a VM keeps of its calls that a direct call between tier-2 frames
/// (docs/jit.md#direct-calls) reads and updates inline: the accounting of
/// VirtualMachine::enterFrame. The field offsets are part of the JIT's
/// contract.
struct NativeCallState {
  /// Frames of native code on the stack (they have no interpreter Frame).
  int64_t NativeDepth = 0;
  /// VMOptions::MaxCallDepth.
  int64_t MaxDepth = 0;
  /// Registers of the live frames (the register stack's, and direct
  /// frames' on the machine stack), and VMOptions::MaxStackRegisters.
  uint64_t LiveRegisters = 0;
  uint64_t MaxRegisters = 0;
  /// An instrument or the profiler is on: every call takes the pool
  /// (VirtualMachine::observingCalls).
  uint8_t Observing = 0;
};
static_assert(offsetof(NativeCallState, NativeDepth) == 0);
static_assert(offsetof(NativeCallState, MaxDepth) == 8);
static_assert(offsetof(NativeCallState, LiveRegisters) == 16);
static_assert(offsetof(NativeCallState, MaxRegisters) == 24);
static_assert(offsetof(NativeCallState, Observing) == 32);

/// What native code of every tier gets from its caller. The field offsets
/// are part of the JIT's contract (jit/lowering.cpp, jit/baseline/).
struct NativeContext {
  VirtualMachine *VM;
  Any *Result;
  int64_t ErrorPC;
  StepControl *Control;
  /// The bytecode function the code runs (its allocation sites are the
  /// VM's for this function: vmjit_jit_alloc_tensor).
  int64_t Func;
  /// The VM's allocation sites of Func (AllocSites::sitesOf): set on entry
  /// when an earlier call made them, else by the frame's first
  /// vmjit_jit_alloc_tensor or _make_shape; null until then. The JIT
  /// tiers' inline checks of a site read it.
  AllocSite *Sites;
  /// The VM's call counts, one per function (VirtualMachine::callCount):
  /// JIT code adds one at every call of a function counted at its call
  /// site (CalleeBinding::CountAtCall), before the call, as the
  /// interpreter does.
  uint64_t *CallCounts;
  /// The frame's call depth (frames below it), the lowest machine-stack
  /// address native code may reach (nativeStackAvailable's bound on this
  /// thread's stack) and the VM's call state: what a direct call checks.
  int64_t Depth;
  uintptr_t StackLimit;
  NativeCallState *State;
};
static_assert(offsetof(NativeContext, VM) == 0);
static_assert(offsetof(NativeContext, Result) == 8);
static_assert(offsetof(NativeContext, ErrorPC) == 16);
static_assert(offsetof(NativeContext, Control) == 24);
static_assert(offsetof(NativeContext, Func) == 32);
static_assert(offsetof(NativeContext, Sites) == 40);
static_assert(offsetof(NativeContext, CallCounts) == 48);
static_assert(offsetof(NativeContext, Depth) == 56);
static_assert(offsetof(NativeContext, StackLimit) == 64);
static_assert(offsetof(NativeContext, State) == 72);
static_assert(sizeof(NativeContext) == 80);

/// The safe-call entry of the pool entries of native code, and where such
/// an entry keeps the code slot it calls through: a direct call checks
/// both to know that the pool still holds the code it calls
/// (docs/jit.md#direct-calls).
VMJITSafeCallType nativeFunctionEntry() noexcept;
inline constexpr int64_t kNativeFunctionSlotOffset = 88;

/// The safe-call entry of closures (vm.builtin.make_closure, makeClosure)
/// and where a closure keeps its target (a FunctionObj pointer) and its
/// captured values (an ArrayObj pointer): tier 2 calls the target of a
/// closure it made itself directly (docs/jit.md#closure-calls).
VMJITSafeCallType closureEntry() noexcept;
inline constexpr int64_t kClosureTargetOffset = 72;
inline constexpr int64_t kClosureCapturedOffset = 80;

using NativeFn = int (*)(NativeContext *Ctx, Any *Regs, const Any *Consts,
                         std::atomic<FunctionObj *> *Funcs, int64_t EntryPC);

/// Kinds of value, one bit each: the lattice of type feedback and of tier
/// 2's type inference (docs/jit.md#speculation-and-deoptimization).
namespace kind {
inline constexpr uint8_t None = 1, Int = 2, Bool = 4, Float = 8, Object = 16,
                         Other = 32, Any = 63;
/// The kind of a value of type index `TypeIndex`.
constexpr uint8_t of(int32_t TypeIndex) noexcept {
  switch (TypeIndex) {
  case kVMJITNone:
    return None;
  case kVMJITInt:
    return Int;
  case kVMJITBool:
    return Bool;
  case kVMJITFloat:
    return Float;
  default:
    return TypeIndex >= kVMJITStaticObjectBegin ? Object : Other;
  }
}
/// The type index of a scalar kind (None, Int, Bool, Float), else -1.
constexpr int32_t typeIndexOf(uint8_t K) noexcept {
  return K == None    ? kVMJITNone
         : K == Int   ? kVMJITInt
         : K == Bool  ? kVMJITBool
         : K == Float ? kVMJITFloat
                      : -1;
}
/// Adds the kind of `TypeIndex` to a feedback slot. Threads sharing the
/// slot race: a relaxed load and store, no read-modify-write (a lost bit
/// only costs a deoptimization later).
inline void note(uint8_t &Slot, int32_t TypeIndex) noexcept {
  std::atomic_ref<uint8_t> A(Slot);
  const uint8_t Seen = A.load(std::memory_order_relaxed);
  const uint8_t K = of(TypeIndex);
  if ((Seen & K) == 0) [[unlikely]]
    A.store(static_cast<uint8_t>(Seen | K), std::memory_order_relaxed);
}
} // namespace kind

/// The TypeError of an `if` whose condition is not an int or a bool: one
/// message for every tier.
Error ifConditionError(const VMJITAny &Cond);

/// What the JIT tier did for one bytecode function
/// (TierController::tierStats; read by vm::collectFunctionStats).
struct TierStats {
  /// Tier 1 (baseline).
  bool Baseline = false;
  double BaselineUs = 0; ///< copy-and-patch time
  /// Bytes of its code: all of it, and what runs when every instruction
  /// takes its fast path (the entry and the instructions, without the
  /// error exit and the out-of-line slow paths laid out after them).
  size_t BaselineBytes = 0;
  size_t BaselineHotBytes = 0;
  /// Kept at tier 1: too large for tier 2 to win (tiered mode: when hot;
  /// compiled mode: from the start).
  bool StaysAtBaseline = false;
  /// Tier 2 (optimizing).
  bool Requested = false;
  /// A compile-pool thread is compiling it now (Requested, not Compiled).
  bool Compiling = false;
  bool Compiled = false;
  /// The tier-2 code came with the program (`vmjit compile`), compiled
  /// ahead of time: nothing was compiled in this process.
  bool AheadOfTime = false;
  bool Failed = false;
  bool CacheHit = false;
  /// This function's share of its unit's compile time (the unit's time
  /// divided by its functions); 0 for a cache hit, which compiled nothing.
  double CompileMs = 0;
  /// A cache hit: this function's share of the time to lower, find and
  /// link the cached object.
  double CacheLoadMs = 0;
  /// The unit's lowering + optimization + codegen + link time (0 for a
  /// cache hit).
  double UnitCompileMs = 0;
  /// Functions compiled in the same unit (compiled mode: all of them).
  int64_t UnitFunctions = 0;
  /// Frames that moved from tier 1 into tier 2 at a backward jump.
  uint64_t Tier2OsrEntries = 0;
  /// Tier-2 guards that failed: the frame went on in tier 1
  /// (deoptimization).
  uint64_t Deopts = 0;
  /// Tier-2 compiles made again with sites that deoptimized too often
  /// compiled generically.
  uint64_t Recompiles = 0;
  /// Tier-2 compiles made again because kernels the function calls were
  /// published after its code was compiled, or after it was kept at
  /// tier 1 (jit::rebindPublishedKernels).
  uint64_t KernelRecompiles = 0;
  /// Calls that ran tier-1 code that counts toward tier 2 (tiered mode;
  /// in baseline mode every native call runs tier 1).
  uint64_t BaselineCalls = 0;
  /// Baseline mode: every native call runs tier 1 (BaselineCalls is not
  /// counted).
  bool BaselineMode = false;
  /// The highest tier with code: 0 none, 1 baseline, 2 optimizing.
  int tier() const noexcept { return Compiled ? 2 : Baseline ? 1 : 0; }
};

class TierController {
public:
  virtual ~TierController() = default;
  /// The slot holding the best native code of bytecode function `Func`
  /// (null while there is none). Pool entries of native code read it at
  /// every call, so a higher tier's code takes over at once. Lock-free;
  /// the slot lives as long as the controller.
  virtual const std::atomic<NativeFn> *codeSlot(int64_t Func) const noexcept = 0;
  /// Native code for bytecode function `Func`, or null. Lock-free.
  NativeFn nativeCode(int64_t Func) const noexcept {
    return codeSlot(Func)->load(std::memory_order_acquire);
  }
  /// Calls of a function, or backward jumps taken inside it, before the
  /// interpreter reports it hot. 0 disables tier-up.
  virtual int64_t threshold() const noexcept = 0;
  /// `Func` became hot in `VM`. Must not block: compiling happens
  /// elsewhere; the interpreter keeps running.
  virtual void requestCompile(VirtualMachine &VM, int64_t Func) = 0;
  /// What the tier did for bytecode function `Func` so far.
  virtual TierStats tierStats(int64_t Func) const = 0;
  /// Where the interpreter records the values (feedback::note) that
  /// `Func` sees: one slot per parameter, then one per instruction (the
  /// result of the call there); null: no feedback wanted. Lives as long as
  /// the controller; read when the controller is attached.
  virtual FeedbackSlot *feedback(int64_t Func) noexcept {
    (void)Func;
    return nullptr;
  }
  /// Whether the VM's count of `Func` includes every call its native code
  /// makes: false for a builtin the code runs inline without counting
  /// (vm/special_builtins.h: countedAtCall).
  virtual bool countsEveryCall(int64_t Func) const noexcept {
    (void)Func;
    return true;
  }
};

} // namespace vmjit::vm

#endif // VMJIT_VM_NATIVE_CODE_H
