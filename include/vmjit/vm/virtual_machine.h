//===- vmjit/vm/virtual_machine.h - The bytecode interpreter -----*- C++ -*-===//
//
// A VirtualMachine runs one verified Executable. It owns a function pool
// (one entry per function-table entry: packed functions resolved when the
// VM is created, bytecode functions as interpreter entries), a frame stack
// whose register files are contiguous arrays of Any, and an allocator.
//
//   auto Exe = vm::loadProgram("model.bin");
//   auto VM = vm::VirtualMachine::create(Exe);
//   Any R = VM->call("main", 10);
//
// A VirtualMachine is used by one thread at a time; many VMs (one per
// thread) may share one Executable. After any error the VM is usable
// again. See docs/interpreter.md.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_VIRTUAL_MACHINE_H
#define VMJIT_VM_VIRTUAL_MACHINE_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/library.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/alloc_sites.h"
#include "vmjit/vm/allocator.h"
#include "vmjit/vm/native_code.h"

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::vm {

class VirtualMachine;

/// What an instrument callback is told about one Call instruction.
struct CallEvent {
  VirtualMachine &VM;
  /// The calling bytecode function and the instruction (within it).
  int64_t Caller;
  int64_t Instr;
  /// The callee's function-table index and name.
  int64_t Callee;
  std::string_view CalleeName;
  std::span<const AnyView> Args;
  /// True before the call; false after it (then Result is set).
  bool Before;
  const Any *Result = nullptr;
};

enum class InstrumentAction {
  Continue,
  /// Only meaningful before a call: do not make it; its destination
  /// register gets None.
  SkipCall,
};

using InstrumentFn = std::function<InstrumentAction(const CallEvent &)>;

/// Per-callee profile of the calls made by the interpreter.
struct ProfileEntry {
  std::string Name;
  uint64_t Calls = 0;
  double TotalNs = 0;
  double meanNs() const { return Calls ? TotalNs / Calls : 0; }
};

/// How the VM's bytecode functions run (see the JIT tier).
enum class ExecMode {
  Bytecode, ///< the interpreter only
  Baseline, ///< every bytecode function at the baseline tier (tier 1) only
  Compiled, ///< every bytecode function at the optimizing tier (tier 2)
            ///< before the first call
  Tiered,   ///< interpreter first; hot functions move up the tiers
};

/// Every mode, in tier order (tests run each of them).
inline constexpr ExecMode kAllExecModes[] = {
    ExecMode::Bytecode, ExecMode::Baseline, ExecMode::Compiled,
    ExecMode::Tiered};

/// "bytecode", "baseline", "compiled" or "tiered": the names `vmjit run
/// --mode` takes.
std::string_view execModeName(ExecMode M) noexcept;
/// The mode called `Name`, if there is one.
std::optional<ExecMode> parseExecMode(std::string_view Name) noexcept;

/// Limits on one outermost call (a call made from C++ while no call of
/// this VM is running). A step is a bytecode function entered or a
/// backward jump taken: the places where every tier checks the budget,
/// the deadline and interrupt requests.
struct CallLimits {
  /// Steps one outermost call may take; 0: unlimited. Past it the call
  /// fails with a StepLimitError.
  uint64_t MaxSteps = 0;
  /// Wall-clock time one outermost call may take; zero: unlimited. Past
  /// it the call fails with a TimeoutError (checked every
  /// kDeadlineCheckSteps steps, so a single long kernel call is not cut).
  std::chrono::nanoseconds Timeout{0};
};

/// Steps between two looks at the clock when a call has a deadline.
inline constexpr int64_t kDeadlineCheckSteps = 1024;

struct VMOptions {
  /// Devices the program may allocate on; index 0 is the default.
  std::vector<DLDevice> Devices = {cpuDevice()};
  AllocatorKind Allocator = AllocatorKind::Pooled;
  /// Deepest nesting of VM frames before a call fails with a
  /// RecursionError (instead of overflowing the native stack).
  int64_t MaxCallDepth = 4096;
  /// Registers of all live frames together (16 bytes each) before a call
  /// fails with a RecursionError.
  int64_t MaxStackRegisters = int64_t(1) << 24;
  /// Step budget and deadline of every outermost call.
  CallLimits Limits;
  /// Kernel libraries searched (in order, before the registry) for packed
  /// functions.
  std::vector<std::shared_ptr<KernelLibrary>> Libraries;
  /// The registry searched for packed functions (the global one when null).
  const Registry *FunctionRegistry = nullptr;
};

class VirtualMachine {
public:
  /// Creates a VM for `Exe` (which must have been verified: every way of
  /// making an Executable verifies it). Resolves every packed and native
  /// function from the libraries and then the registry; if any is missing
  /// throws Error("LinkError") naming all of them.
  static std::unique_ptr<VirtualMachine>
  create(std::shared_ptr<const Executable> Exe, VMOptions Opts = {});
  ~VirtualMachine();
  VirtualMachine(const VirtualMachine &) = delete;
  VirtualMachine &operator=(const VirtualMachine &) = delete;

  const Executable &executable() const noexcept { return *Exe; }
  const std::shared_ptr<const Executable> &executablePtr() const noexcept {
    return Exe;
  }

  /// Calls function `Func` (any kind) with `Args`. Throws the callee's
  /// Error, with one "in function F, instruction N" frame per VM frame it
  /// passed through; the VM stays usable.
  Any invoke(int64_t Func, std::span<const AnyView> Args);
  Any invoke(std::string_view Func, std::span<const AnyView> Args);
  template <typename... A> Any call(std::string_view Func, A &&...Args) {
    std::array<AnyView, sizeof...(A) == 0 ? 1 : sizeof...(A)> Views{
        AnyView(Args)...};
    return invoke(Func, std::span<const AnyView>(Views.data(), sizeof...(A)));
  }

  /// Index of `Func`; throws Error("LookupError") if there is none.
  int64_t functionIndex(std::string_view Func) const;
  /// A Function that calls `Func` on this VM (or a function saved with
  /// saveFunction). Calling it after the VM is destroyed raises an error.
  Function getFunction(std::string_view Func);

  // TVM's stateful API.
  /// Stores the arguments of a later invokeStateful(Func).
  void setInput(std::string_view Func, std::vector<Any> Args);
  /// Calls `Func` with the stored inputs and stores (and returns) the
  /// result.
  Any invokeStateful(std::string_view Func);
  /// The stored result of the last invokeStateful(Func).
  Any getOutput(std::string_view Func) const;
  /// Number of elements of the stored result if it is a tuple, else -1.
  int64_t getOutputArity(std::string_view Func) const;

  /// Saves `Func` with all its arguments bound as `SavedName`:
  /// getFunction(SavedName)() then calls Func(Args...). A saved name
  /// hides a function of the executable with the same name.
  void saveFunction(std::string_view Func, const std::string &SavedName,
                    std::vector<Any> Args);
  /// Whether `Name` is a function saved with saveFunction.
  bool isSavedFunction(std::string_view Name) const;

  /// Installs (or, with an empty function, removes) the callback run
  /// before and after every Call instruction the interpreter executes.
  void setInstrument(InstrumentFn F);
  /// Turns the per-callee profiler on or off (off by default).
  void setProfiling(bool On);
  /// The profile so far, one entry per callee that was called, in
  /// function-table order.
  std::vector<ProfileEntry> profile() const;
  /// The profile as a text table (callee, calls, total, mean).
  std::string profileTable() const;
  void resetProfile();

  /// Times function `Func` was called by this VM, in any tier: a bytecode
  /// or TVM-compiled function's entries (also from outside), every call
  /// the VM's code made of a packed function (one that failed too).
  uint64_t callCount(int64_t Func) const noexcept {
    return CallCounts[static_cast<size_t>(Func)];
  }

  Allocator &allocator() noexcept { return *Alloc; }
  /// The caches of this VM's allocation call sites (every tier goes
  /// through them for the standard alloc_storage and alloc_tensor).
  AllocSites &allocSites() noexcept { return Sites; }
  const std::vector<DLDevice> &devices() const noexcept {
    return Opts.Devices;
  }
  int64_t maxCallDepth() const noexcept { return Opts.MaxCallDepth; }
  void setMaxCallDepth(int64_t Depth) noexcept {
    Opts.MaxCallDepth = Depth;
    CallState.MaxDepth = Depth;
  }
  const CallLimits &callLimits() const noexcept { return Opts.Limits; }
  /// Sets the limits of later outermost calls (not of one in progress).
  void setCallLimits(const CallLimits &L) noexcept { Opts.Limits = L; }

  /// Asks the running call to stop: at its next step (bytecode function
  /// entry or backward jump, in any tier) it fails with an
  /// InterruptedError, unwinding every frame; the VM stays usable. May be
  /// called from any thread. A request made while no call runs is taken
  /// by the first step of the next call; clearInterrupt() withdraws it.
  void interrupt() noexcept {
    Control.Interrupt.store(1, std::memory_order_release);
  }
  void clearInterrupt() noexcept {
    Control.Interrupt.store(0, std::memory_order_relaxed);
  }
  /// Steps taken by the current (or last) outermost call.
  uint64_t stepsTaken() const noexcept;

  /// Internal, for every tier: counts one step; returns 0, or -1 with a
  /// StepLimitError, TimeoutError or InterruptedError raised.
  int step() noexcept {
    // Both tests, one branch.
    const bool OutOfFuel = --Control.Fuel < 0;
    const bool Interrupted =
        Control.Interrupt.load(std::memory_order_relaxed) != 0;
    if (OutOfFuel | Interrupted) [[unlikely]]
      return stepSlow();
    return 0;
  }
  /// Internal: the slow path of step() (JIT code calls it directly).
  int stepSlow() noexcept;
  StepControl *stepControl() noexcept { return &Control; }

  /// The function-pool entry of function `Func`: the resolved packed
  /// function, or the object that runs bytecode function `Func` on this VM.
  FunctionObj *poolEntry(int64_t Func) const noexcept {
    return Pool[static_cast<size_t>(Func)].load(std::memory_order_acquire);
  }
  /// Replaces a pool entry (the JIT swaps in native code this way). The
  /// VM keeps the old entry alive while a call may be inside it: until it
  /// is destroyed, or, for native-code entries nothing else refers to,
  /// until the tier controller changes between calls. The entry of a
  /// bytecode function must take object rvalue references as enterFrame
  /// does (JIT code passes last uses so; docs/jit.md#owned-arguments).
  void replacePoolEntry(int64_t Func, Function Entry);
  /// How many function objects the pool keeps alive (its entries and the
  /// replaced ones it still keeps): for tests and diagnostics.
  size_t keptPoolEntries() const noexcept { return PoolOwners.size(); }

  /// Internal: runs bytecode function `Func` with `Args` in a new frame
  /// (the entry of VM function objects). Returns 0 or -1 with a raised
  /// error, like a safe call.
  int runFunction(int64_t Func, const AnyView *Args, int32_t NumArgs,
                  Any *Result) noexcept;

  // The JIT tier (see native_code.h).
  /// Attaches the tier controller that supplies native code and hears
  /// about hot functions (null: interpreter only).
  void setTierController(std::shared_ptr<TierController> T);
  TierController *tierController() const noexcept { return Tier.get(); }
  /// Swaps the pool entry of bytecode function `Func` for its native code
  /// (if the controller has it). Returns whether the function now runs
  /// natively.
  bool adoptNativeCode(int64_t Func);
  /// Whether function `Func` runs TVM compiled-mode code (a VMTIR function
  /// whose `__vmtir__NAME` a loaded library provides).
  bool isTvmCompiled(int64_t Func) const noexcept;
  /// Whether calls of `Func` are counted where they are made (every tier
  /// adds one to callCount(Func) before the call): packed functions and
  /// library code. Bytecode functions and TVM-compiled code count their
  /// own entries.
  bool countsAtCall(int64_t Func) const noexcept;
  bool isNative(int64_t Func) const noexcept {
    return IsNative[static_cast<size_t>(Func)] != 0;
  }
  /// Calls of `Func` made before its pool entry became native code (all
  /// of them while it is not native): the calls the interpreter ran.
  uint64_t interpretedCalls(int64_t Func) const noexcept {
    return isNative(Func) ? CallsBeforeNative[static_cast<size_t>(Func)]
                          : callCount(Func);
  }
  /// Backward jumps taken in `Func` by the interpreter, and how often a
  /// running frame of it moved into native code (on-stack replacement).
  uint64_t backEdgeCount(int64_t Func) const noexcept {
    return BackEdges[static_cast<size_t>(Func)];
  }
  uint64_t osrCount(int64_t Func) const noexcept {
    return OSREntries[static_cast<size_t>(Func)];
  }
  /// "in function 'F', instruction N (call 'G')", followed by " at
  /// FILE:LINE:COL" where the program has source positions
  /// (Executable::sourceMap): how errors name a frame, in every tier.
  std::string frameLine(int64_t Func, int64_t PC) const;
  /// True while an instrument or the profiler is on: every bytecode
  /// function then runs on the interpreter, which reports every call.
  bool observingCalls() const noexcept { return Instrument || Profiling; }

private:
  /// Drops the native-code pool entries nothing refers to any more, when
  /// no call is running (replacePoolEntry).
  void dropRetiredPoolEntries();
  VirtualMachine(std::shared_ptr<const Executable> Exe, VMOptions Opts);
  struct Frame;
  class RegisterStack;
  class Interpreter;
  friend class Interpreter;

  void resolvePool();
  /// The pool entry of Native function `Func` when a library holds TVM
  /// compiled-mode code for it (`__vmtir__NAME`, tvm_compiled.cpp).
  std::optional<Function> tvmCompiledEntry(int64_t Func);
  /// TVM's function pool as an array of values, for TVM-compiled code.
  void buildFunctionList();
  int64_t savedOrIndex(std::string_view Func) const;

  std::shared_ptr<const Executable> Exe;
  VMOptions Opts;
  std::unique_ptr<Allocator> Alloc;
  /// The caches of alloc_storage and alloc_tensor call sites (destroyed
  /// before the allocator).
  AllocSites Sites;
  /// One entry per function-table entry.
  std::unique_ptr<std::atomic<FunctionObj *>[]> Pool;
  /// Owns every object ever placed in the pool.
  std::vector<Function> PoolOwners;
  std::vector<uint64_t> CallCounts;
  std::vector<uint64_t> BackEdges;
  std::vector<uint64_t> OSREntries;
  std::vector<char> IsNative;
  std::vector<uint64_t> CallsBeforeNative;
  /// Per function: where the interpreter records type feedback
  /// (TierController::feedback), or null.
  std::vector<FeedbackSlot *> Feedback;
  /// Native frames, live registers, the limits (NativeDepth is
  /// CallState.NativeDepth).
  NativeCallState CallState;
  /// The one frame entry of the interpreter and native code: checks the
  /// call depth (and for `Native` code the machine stack), takes a step,
  /// pushes the function's registers with its arguments copied in, and
  /// counts the call. Throws RecursionError, StepLimitError, ...
  Any *enterFrame(int64_t Func, const AnyView *Args, int64_t NumArgs,
                  bool Native);
  /// Starts the step budget and deadline of an outermost call.
  void beginOutermostCall() noexcept;
  /// Hands the next allotment of the budget to Control.Fuel: all of it,
  /// or kDeadlineCheckSteps when there is a deadline to look at.
  int64_t grantFuel() noexcept;
  StepControl Control;
  /// The limits of the outermost call in progress (setCallLimits changes
  /// only later calls).
  CallLimits Active;
  /// Budget steps not yet handed to Control.Fuel (unlimited: INT64_MAX,
  /// which no call reaches).
  int64_t Reserve = 0;
  /// Steps handed to Control.Fuel so far in this call.
  int64_t Granted = 0;
  std::chrono::steady_clock::time_point Deadline;
  std::shared_ptr<TierController> Tier;
  friend class NativeFunctionObj;
  friend class TvmCompiledFunctionObj;
  std::unique_ptr<RegisterStack> Regs;
  std::vector<Frame> Frames;
  InstrumentFn Instrument;
  bool Profiling = false;
  std::vector<ProfileEntry> Profile;
  struct State;
  std::unique_ptr<State> Stateful;
};

} // namespace vmjit::vm

#endif // VMJIT_VM_VIRTUAL_MACHINE_H
