//===- tier_manager.cpp - Tier-up, compiled mode, deoptimization ----------===//
//
// The TierManager of one executable: tier-1 and tier-2 compiles, what
// tier 2 speculates and its deoptimizations, and enableJIT. Shared engines
// and managers live in tier_registry.cpp, the JIT's environment variables
// in jit_environment.cpp, the C entry points native code calls in
// tier_hooks.cpp.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/tier_manager.h"
#include "baseline/baseline_compiler.h"
#include "baseline/executable_memory.h"
#include "call_size.h"
#include "compile_pool.h"
#include "direct_call.h"
#include "kind_inference.h"
#include "runtime_helpers.h"
#include "stack_tensors.h"
#include "tensor_facts.h"
#include "tier_registry.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/engine.h"
#include "vmjit/jit/host_info.h"
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/lowering.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/logging.h"
#include "vmjit/vm/feedback.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <xxhash.h>

namespace vmjit::jit {

using llvm::createStringError;
using llvm::ErrorInfoBase;
using llvm::Expected;
using llvm::handleAllErrors;

//===----------------------------------------------------------------------===//
// Options and limits of the tiers
//===----------------------------------------------------------------------===//

namespace {

/// Units with more instructions than this get O0 codegen (and in tiered
/// mode functions this large stay at the baseline tier).
constexpr int64_t kLargeUnitInstrs = 200;

/// What a tier-2 compile (or `vmjit ir`) lowers with, from the options.
LoweringOptions loweringOptions(const JITOptions &O) {
  LoweringOptions LO;
  LO.InlineBuiltins = O.InlineBuiltins;
  LO.DirectCalls = true;
  LO.OwnedArguments = O.OwnedArguments;
  LO.StackTensors = O.StackTensors;
  if (O.DirectBodyLimit >= 0)
    LO.DirectBodyLimit = O.DirectBodyLimit;
  if (O.PromoteLimit >= 0)
    LO.PromoteLimit = O.PromoteLimit;
  return LO;
}

/// Past these a tier-2 compile costs more than tier 2 wins back: its IR
/// grows with call arguments as with instructions (each argument a tag and
/// a payload store, with its register's checks), and codegen is
/// superlinear in a block's size. One call of N arguments compiled at O1
/// in 37 ms (N=100), 110 ms (300), 1.8 s (1000), 5.2 s (2000).
constexpr int64_t kTierTwoMaxCallArgs = 256;
constexpr int64_t kTierTwoMaxSize = 1000; // instructions + call arguments

/// Whether tier 2's code for `F` beats tier 1's, its compile included.
/// Functions past kLargeUnitInstrs get O0 codegen, and those lowered flat
/// keep every register in memory: both measured slower than tier 1
/// (dispatch_int, N=100 flat at O1: 10.2 ns per call against 5.3; N=1000
/// flat at O0: 11.3 against 4.96; docs/jit.md), so such a function keeps
/// tier-1 code, as does one whose calls make its compile too slow. A flat
/// function that keeps tensors on its stack (stack_tensors.h) wins: tier 2
/// drops its allocations, which tier 1 makes.
bool tierTwoWins(const vm::Executable &Exe, int64_t Func, const JITOptions &O,
                 const BoundCallees &Bind) {
  const vm::FunctionInfo &F = Exe.function(Func);
  const CallSize S = callSize(Exe, F);
  return S.Instrs <= kLargeUnitInstrs && S.MaxArgs <= kTierTwoMaxCallArgs &&
         S.Instrs + S.Args <= kTierTwoMaxSize &&
         (!lowersFlat(F, loweringOptions(O)) ||
          (O.InlineBuiltins && O.StackTensors &&
           keepsTensorsOnStack(Exe, Func, Bind.Callees, Bind.HostDevices)));
}

std::string hex128(const void *Data, size_t Size) {
  XXH128_hash_t H = XXH3_128bits(Data, Size);
  return fmt::format("{:016x}{:016x}", H.high64, H.low64);
}

} // namespace

//===----------------------------------------------------------------------===//
// TierManager
//===----------------------------------------------------------------------===//

struct TierManager::Impl {
  std::shared_ptr<const vm::Executable> Exe;
  /// The best code of each function (tier 2 once it exists, else tier 1).
  std::unique_ptr<std::atomic<vm::NativeFn>[]> Code;
  /// Per function: its tier-2 code and direct entry, for direct calls from
  /// other units (direct_call.h: DirectTarget); null until it has some.
  std::unique_ptr<std::atomic<const DirectTarget *>[]> DirectCells;
  /// Tier 2 was requested (queued, compiling, compiled or failed).
  std::unique_ptr<std::atomic<uint8_t>[]> Requested;
  /// Tier 1 was attempted.
  std::unique_ptr<std::atomic<uint8_t>[]> Tier1Tried;
  /// What counted tier-1 code reads and writes.
  std::unique_ptr<baseline::TierUpSite[]> Sites;

  /// Type feedback (TierController::feedback): per function, a slot per
  /// parameter, then one per instruction. Never resized (VMs hold
  /// pointers into it).
  std::vector<std::vector<vm::FeedbackSlot>> Feedback;

  mutable std::mutex Mutex; // what follows
  /// How the code compiled now calls the function table (bindings()):
  /// replaced when kernels are published (TierManager::rebindKernels).
  std::shared_ptr<const BoundCallees> Bind;
  /// Per function: the bindings its tier-2 code, its failed compile or
  /// its staying at tier 1 was decided with (null: not decided yet).
  std::vector<std::shared_ptr<const BoundCallees>> DecidedWith;
  /// Per function: tier-2 compiles queued or running.
  std::vector<int> InFlight;
  /// The manager is being destroyed: no compile is queued any more (a job
  /// still running when its compiles are cancelled queues none after it).
  bool Closing = false;
  std::vector<FunctionJITStats> Stats;
  /// Uncounted tier-1 code that speculative tier-2 code deoptimizes to.
  std::vector<vm::NativeFn> DeoptTargets;
  /// Per function: failed guards per site, and the sites compiled
  /// generically since they failed kDeoptLimit times.
  std::vector<std::map<int64_t, uint32_t>> DeoptCounts;
  std::vector<std::set<int64_t>> GenericSites;
  std::vector<std::unique_ptr<CompiledUnit>> Units;
  /// What DirectCells point to, kept with the units.
  std::vector<std::unique_ptr<DirectTarget>> DirectTargets;
  std::vector<std::unique_ptr<baseline::BaselineCode>> BaselineUnits;

  /// Whether JIT code can run `Func` (argumentsFitNativeStack); if not, it
  /// stays on the interpreter, which its stats say.
  bool fitsNativeStack(int64_t Func);
  /// The current bindings.
  std::shared_ptr<const BoundCallees> bindings() const {
    std::lock_guard Lock(Mutex);
    return Bind;
  }
  /// With Mutex held: whether `Func`, with no compile in flight, was
  /// decided with bindings that differ from the current ones for a table
  /// entry it names, and tier 2 now wins on it (then it should be compiled
  /// again; a function it makes no difference to is marked decided with
  /// the current bindings).
  bool staleLocked(int64_t Func, const JITOptions &Opts);
};

//===----------------------------------------------------------------------===//
// Background compiles and the end of the process
//===----------------------------------------------------------------------===//

// Tier-2 compiles run on the process's compile pool (compile_pool.h). A
// compile still running when the process exits would run into LLVM's
// static objects as they are destroyed (a Python program may end with its
// VMs alive and a compile queued). stopBackgroundCompiles shuts the pool
// down: queued compiles are dropped and the running ones abandoned at
// their next check (compile_pool.h, Engine::compile). Python's vmjit calls
// it at interpreter exit, before any static is destroyed; the atexit
// handler registered when the first manager is made is the fallback for
// other programs (it runs before the destructors of the statics made until
// then, not of those a compile makes later).
void stopBackgroundCompiles() { shutdownCompilePool(); }

TierManager::~TierManager() {
  if (!State)
    return;
  {
    std::lock_guard Lock(State->Mutex);
    State->Closing = true;
  }
  cancelCompiles(this);
}

const std::atomic<vm::NativeFn> *
TierManager::codeSlot(int64_t Func) const noexcept {
  return &State->Code[static_cast<size_t>(Func)];
}

bool baselineAvailable() noexcept { return baseline::available(); }

FunctionJITStats TierManager::stats(int64_t Func) const {
  std::lock_guard Lock(State->Mutex);
  FunctionJITStats S = State->Stats[static_cast<size_t>(Func)];
  const baseline::TierUpSite &Site = State->Sites[static_cast<size_t>(Func)];
  S.Tier2OsrEntries = __atomic_load_n(&Site.Tier2Entries, __ATOMIC_RELAXED);
  S.BaselineCalls = __atomic_load_n(&Site.Tier1Calls, __ATOMIC_RELAXED);
  S.BaselineMode = Opts.Mode == vm::ExecMode::Baseline;
  return S;
}

bool TierManager::countsEveryCall(int64_t Func) const noexcept {
  // Inline is fixed when the manager is made (rebinding changes kernels).
  return vm::countedAtCall(
      true, State->bindings()->Callees[static_cast<size_t>(Func)].Inline);
}

void TierManager::requestCompile(vm::VirtualMachine &, int64_t Func) {
  if (State->Exe->function(Func).Kind != vm::FunctionKind::Bytecode)
    return;
  if (InterpThreshold != Threshold && compileBaselineNow(Func, /*Counted=*/true))
    return;
  requestOptimized(Func);
}

bool TierManager::compileBaselineNow(int64_t Func, bool Counted) {
  const size_t K = static_cast<size_t>(Func);
  if (State->Tier1Tried[K].exchange(1))
    return State->Code[K].load(std::memory_order_acquire) != nullptr;
  baseline::TierUpSite *Site = nullptr;
  if (Counted) {
    Site = &State->Sites[K];
    // The interpreter counted up to its threshold; tier 1 counts the rest
    // (the call or jump that crossed the threshold enters tier 1 and is
    // counted again there: hence + 1).
    __atomic_store_n(&Site->Countdown,
                     std::max<int64_t>(1, Threshold - InterpThreshold + 1),
                     __ATOMIC_RELAXED);
  }
  baseline::BaselineOptions BO;
  BO.Site = Site;
  BO.Feedback = Counted ? feedback(Func) : nullptr;
  BO.InlineBuiltins = Opts.InlineBuiltins;
  BO.PerfMap = Opts.PerfSupport;
  auto Start = std::chrono::steady_clock::now();
  std::unique_ptr<baseline::BaselineCode> Code;
  try {
    Code = baseline::compileBaseline(*State->Exe, Func,
                                     State->bindings()->Callees, BO);
  } catch (const std::exception &E) {
    logger().debug("function '{}' stays off the baseline tier: {}",
                   State->Exe->function(Func).Name, E.what());
    return false;
  }
  double Us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - Start)
                  .count();
  std::lock_guard Lock(State->Mutex);
  FunctionJITStats &S = State->Stats[K];
  S.Baseline = true;
  S.BaselineUs = Us;
  S.BaselineBytes = Code->codeBytes();
  S.BaselineHotBytes = Code->hotBytes();
  vm::NativeFn Null = nullptr;
  // Tier 2 may have been compiled already (compiled mode, another VM).
  State->Code[K].compare_exchange_strong(Null, Code->entry(),
                                         std::memory_order_acq_rel);
  logger().debug("compiled function '{}' at the baseline tier in {:.1f} us "
                 "({} bytes, {} of them hot)",
                 State->Exe->function(Func).Name, Us, Code->codeBytes(),
                 Code->hotBytes());
  State->BaselineUnits.push_back(std::move(Code));
  return true;
}

void TierManager::requestOptimized(int64_t Func) {
  if (State->Requested[static_cast<size_t>(Func)].exchange(1))
    return; // already queued, compiling, compiled or failed
  if (!State->fitsNativeStack(Func))
    return;
  // A function without baseline code yet (the interpreter's threshold is
  // tier 2's) gets it now, in microseconds: it runs tier-1 code while its
  // tier-2 compile is queued or running rather than stay on the
  // interpreter, and keeps it where tier 2 would not win, as in compiled
  // mode (that compile could take seconds, for slower code).
  const std::shared_ptr<const BoundCallees> B = State->bindings();
  const bool Wins = tierTwoWins(*State->Exe, Func, Opts, *B);
  if (Opts.UseBaseline && baseline::available() && (!Wins || Opts.Background))
    compileBaselineNow(Func, /*Counted=*/false);
  if (State->Code[static_cast<size_t>(Func)].load(std::memory_order_acquire) &&
      !Wins) {
    logger().debug("function '{}' stays at the baseline tier: {} "
                   "instructions, tier 2 would not be faster",
                   State->Exe->function(Func).Name,
                   State->Exe->function(Func).numInstrs());
    staysAtBaseline(Func, B);
    return;
  }
  {
    std::lock_guard Lock(State->Mutex);
    State->Stats[static_cast<size_t>(Func)].Requested = true;
  }
  logger().debug("queued function '{}' for compilation",
                 State->Exe->function(Func).Name);
  {
    std::lock_guard Lock(State->Mutex);
    ++State->InFlight[static_cast<size_t>(Func)];
  }
  launchCompile(Func);
}

void TierManager::launchCompile(int64_t Func) {
  {
    std::lock_guard Lock(State->Mutex);
    if (State->Closing) {
      --State->InFlight[static_cast<size_t>(Func)];
      return;
    }
  }
  if (!Opts.Background) {
    compileUnit({Func}, nullptr);
    endCompiles({Func});
    return;
  }
  // Refused once the pool is shut down (the end of the process): the
  // function stays at its tier.
  if (!submitCompile(this, [this, Func](const CancelFlag &Cancel) {
        compileInBackground(Func, Cancel);
      })) {
    std::lock_guard Lock(State->Mutex);
    --State->InFlight[static_cast<size_t>(Func)];
  }
}

void TierManager::compileInBackground(int64_t Func,
                                      const std::atomic<bool> &Cancel) {
  const size_t K = static_cast<size_t>(Func);
  {
    std::lock_guard Lock(State->Mutex);
    State->Stats[K].Compiling = true;
  }
  compileUnit({Func}, &Cancel);
  {
    std::lock_guard Lock(State->Mutex);
    State->Stats[K].Compiling = false;
  }
  endCompiles({Func});
}

void TierManager::endCompiles(const std::vector<int64_t> &Funcs) {
  std::vector<int64_t> Again;
  {
    std::lock_guard Lock(State->Mutex);
    for (int64_t K : Funcs) {
      --State->InFlight[static_cast<size_t>(K)];
      if (State->staleLocked(K, Opts)) {
        ++State->InFlight[static_cast<size_t>(K)];
        Again.push_back(K);
      }
    }
  }
  for (int64_t K : Again)
    launchCompile(K);
}

//===----------------------------------------------------------------------===//
// Kernels published after code was compiled
//===----------------------------------------------------------------------===//

// Code compiled before a kernel slot was published calls the slot (tier 1)
// or reads its cell at each call (tier 2), allocates every tensor the
// kernel gets and inlines no kernel; a flat function may have stayed at
// tier 1 for want of tensors on the stack (tierTwoWins). When the kernel
// tier publishes, the managers bind their slots again and compile again
// each function whose code or decision the new bindings change. A compile
// in flight then is checked when it ends (endCompiles), against the
// bindings it was lowered with.

bool TierManager::Impl::staleLocked(int64_t Func, const JITOptions &Opts) {
  const size_t K = static_cast<size_t>(Func);
  std::shared_ptr<const BoundCallees> &D = DecidedWith[K];
  if (Closing || InFlight[K] > 0 || !D || D == Bind)
    return false;
  if (!bindingsDifferFor(*Exe, Func, *D, *Bind) ||
      (Stats[K].StaysAtBaseline && !tierTwoWins(*Exe, Func, Opts, *Bind))) {
    D = Bind;
    return false;
  }
  ++Stats[K].KernelRecompiles;
  Stats[K].Requested = true;
  logger().debug("compiling function '{}' again: kernels it calls were "
                 "published since it was {}",
                 Exe->function(Func).Name,
                 Stats[K].StaysAtBaseline ? "kept at the baseline tier"
                                          : "compiled");
  return true;
}

void TierManager::staysAtBaseline(int64_t Func,
                                  std::shared_ptr<const BoundCallees> B) {
  const size_t K = static_cast<size_t>(Func);
  {
    std::lock_guard Lock(State->Mutex);
    State->Stats[K].StaysAtBaseline = true;
    State->DecidedWith[K] = std::move(B);
    // Kernels published since B was taken: decided again now.
    if (!State->staleLocked(Func, Opts))
      return;
    ++State->InFlight[K];
  }
  launchCompile(Func);
}

void TierManager::rebindKernels() {
  std::vector<int64_t> Again;
  {
    std::lock_guard Lock(State->Mutex);
    std::optional<BoundCallees> New = reboundKernels(*State->Bind);
    if (!New)
      return;
    State->Bind = std::make_shared<const BoundCallees>(std::move(*New));
    for (size_t K = 0; K < State->DecidedWith.size(); ++K)
      if (State->staleLocked(static_cast<int64_t>(K), Opts)) {
        ++State->InFlight[K];
        Again.push_back(static_cast<int64_t>(K));
      }
  }
  for (int64_t K : Again)
    launchCompile(K);
}

//===----------------------------------------------------------------------===//
// Speculation and deoptimization
//===----------------------------------------------------------------------===//

vm::FeedbackSlot *TierManager::feedback(int64_t Func) noexcept {
  std::vector<vm::FeedbackSlot> &F = State->Feedback[static_cast<size_t>(Func)];
  return F.empty() || !Opts.Speculate ? nullptr : F.data();
}

namespace {
/// Deopt stress: the kind assumed at a site, whatever was seen there (an
/// int, a float or None, by a hash of the site).
uint8_t stressKind(int64_t Func, int64_t Index) {
  static constexpr uint8_t Kinds[] = {vm::kind::Int, vm::kind::Float,
                                      vm::kind::None};
  const uint64_t H =
      XXH3_64bits_withSeed(&Index, sizeof(Index), static_cast<uint64_t>(Func));
  return Kinds[H % 3];
}
/// The kinds of value a feedback slot has seen so far.
uint8_t seenKinds(vm::FeedbackSlot &S) {
  return std::atomic_ref<uint8_t>(S.Kinds).load(std::memory_order_relaxed);
}
} // namespace

std::optional<FunctionSpeculation>
TierManager::speculationFor(int64_t Func, bool NeedTarget) {
  const vm::FunctionInfo &F = State->Exe->function(Func);
  if (!Opts.Speculate || lowersFlat(F, loweringOptions(Opts)))
    return std::nullopt;
  if (NeedTarget && !deoptTarget(Func))
    return std::nullopt;
  std::vector<vm::FeedbackSlot> &Seen =
      State->Feedback[static_cast<size_t>(Func)];
  std::set<int64_t> Generic;
  {
    std::lock_guard Lock(State->Mutex);
    Generic = State->GenericSites[static_cast<size_t>(Func)];
  }
  // Feedback is read as it is now: a kind seen once is enough to assume
  // it, two kinds assume nothing.
  auto Assumed = [&](size_t Slot, int64_t Site) -> uint8_t {
    if (Generic.count(Site))
      return 0;
    if (Opts.DeoptStress)
      return stressKind(Func, static_cast<int64_t>(Slot));
    const uint8_t K = seenKinds(Seen[Slot]);
    return guardableKind(K) ? K : 0;
  };
  // Tensors of one rank and dtype, and no other value, seen in a register
  // that a check_tensor_info or match_shape reads: assumed to stay so.
  // Deopt stress assumes a rank they did not have.
  const std::shared_ptr<const BoundCallees> B = State->bindings();
  const std::vector<bool> Checked = tensorCheckedRegisters(
      *State->Exe, Func, B->Callees, Opts.InlineBuiltins);
  auto AssumedTensor = [&](size_t Slot, int64_t Site, int64_t R) {
    if (Generic.count(Site) || R < 0 || !Checked[static_cast<size_t>(R)] ||
        seenKinds(Seen[Slot]) != vm::kind::Object)
      return uint64_t(0);
    const uint64_t W = std::atomic_ref<uint64_t>(Seen[Slot].Tensor)
                           .load(std::memory_order_relaxed);
    if (!vm::feedback::oneTensorShape(W))
      return uint64_t(0);
    return Opts.DeoptStress ? W ^ (uint64_t(1) << 32) : W;
  };
  // Nothing at all seen (compiled mode): an int where register R's uses
  // suggest one (intByUse; DefPC -1 for a parameter).
  auto Guessed = [&](size_t Slot, int64_t Site, int64_t R, int64_t DefPC) {
    const uint8_t A = Assumed(Slot, Site);
    if (A != 0 || Opts.DeoptStress || Generic.count(Site) ||
        seenKinds(Seen[Slot]))
      return A;
    return intByUse(*State->Exe, Func, B->Callees, Opts.InlineBuiltins, R,
                    DefPC)
               ? vm::kind::Int
               : uint8_t(0);
  };
  // A slot assumed to hold a tensor assumes no scalar kind.
  FunctionSpeculation S;
  for (int64_t K = 0; K < F.NumParams; ++K) {
    const size_t Slot = static_cast<size_t>(K);
    S.ParamTensors.push_back(AssumedTensor(Slot, 0, K));
    S.Params.push_back(S.ParamTensors.back() ? 0 : Guessed(Slot, 0, K, -1));
  }
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    const size_t Slot = static_cast<size_t>(F.NumParams + PC);
    vm::InstrView In = State->Exe->instr(F.StartInstr + PC);
    const bool Result =
        In.opcode() == vm::Opcode::Call && !vm::isSpecialRegister(In.callDst());
    // Only a call tier 2 makes has a result to guard (tensor_facts.h);
    // an inlined builtin's result is what the facts derive.
    const bool Made =
        Result && (!Opts.InlineBuiltins ||
                   B->Callees[static_cast<size_t>(In.callFunc())].Inline ==
                       SpecialBuiltin::None);
    S.ResultTensors.push_back(Made ? AssumedTensor(Slot, PC, In.callDst()) : 0);
    S.Results.push_back(S.ResultTensors.back() ? 0
                        : Result ? Guessed(Slot, PC, In.callDst(), PC)
                                 : Assumed(Slot, PC));
  }
  S.GenericEntries.assign(Generic.begin(), Generic.end());
  return S;
}

vm::NativeFn TierManager::deoptTarget(int64_t Func) {
  const size_t K = static_cast<size_t>(Func);
  {
    std::lock_guard Lock(State->Mutex);
    if (State->DeoptTargets[K])
      return State->DeoptTargets[K];
  }
  if (!baseline::available())
    return nullptr;
  baseline::BaselineOptions BO; // uncounted: a deoptimized frame stays
  BO.InlineBuiltins = Opts.InlineBuiltins;
  BO.PerfMap = Opts.PerfSupport;
  std::unique_ptr<baseline::BaselineCode> Code;
  try {
    Code = baseline::compileBaseline(*State->Exe, Func,
                                     State->bindings()->Callees, BO);
  } catch (const std::exception &E) {
    logger().debug("function '{}' is not speculated on: no tier-1 code to "
                   "deoptimize to: {}",
                   State->Exe->function(Func).Name, E.what());
    return nullptr;
  }
  std::lock_guard Lock(State->Mutex);
  if (!State->DeoptTargets[K]) {
    State->DeoptTargets[K] = Code->entry();
    State->BaselineUnits.push_back(std::move(Code));
  }
  return State->DeoptTargets[K];
}

int TierManager::deoptimize(vm::NativeContext *Ctx, Any *Regs,
                            const Any *Consts,
                            std::atomic<FunctionObj *> *Funcs, int64_t Site,
                            int64_t ResumePC) {
  const int64_t Func = Ctx->Func;
  const size_t K = static_cast<size_t>(Func);
  vm::NativeFn Target;
  bool Again = false;
  {
    std::lock_guard Lock(State->Mutex);
    ++State->Stats[K].Deopts;
    Target = State->DeoptTargets[K]; // set before any code speculated on it
    try {
      if (++State->DeoptCounts[K][Site] == kDeoptLimit) {
        State->GenericSites[K].insert(Site);
        Again = true;
      }
    } catch (const std::exception &) {
      // Out of memory: the site stays speculated; the frame goes on.
    }
  }
  if (Again) {
    try {
      logger().debug("function '{}' deoptimized {} times at instruction "
                     "{}: compiling it again with that site generic",
                     State->Exe->function(Func).Name, kDeoptLimit, Site);
      recompile(Func);
    } catch (const std::exception &E) {
      logger().warn("cannot compile function '{}' again: {}",
                    State->Exe->function(Func).Name, E.what());
    }
  }
  return Target(Ctx, Regs, Consts, Funcs, ResumePC);
}

void TierManager::recompile(int64_t Func) {
  {
    std::lock_guard Lock(State->Mutex);
    ++State->Stats[static_cast<size_t>(Func)].Recompiles;
    ++State->InFlight[static_cast<size_t>(Func)];
  }
  launchCompile(Func);
}

void TierManager::compileAllNow(const std::vector<int64_t> &Funcs) {
  // Compiled mode: the functions tier 2 wins on go in one unit; the others
  // run tier-1 code, which is faster there and compiles in microseconds.
  // Without tier 1 (another host, UseBaseline off) they go to tier 2 too.
  std::vector<int64_t> Small, Large;
  const std::shared_ptr<const BoundCallees> B = State->bindings();
  for (int64_t K : Funcs)
    if (State->fitsNativeStack(K))
      (tierTwoWins(*State->Exe, K, Opts, *B) ? Small : Large).push_back(K);
  if (!Small.empty())
    compileNow(Small);
  if (Large.empty())
    return;
  if (!Opts.UseBaseline || !baseline::available()) {
    compileNow(Large);
    return;
  }
  for (int64_t K : Large) {
    if (compileBaselineNow(K, /*Counted=*/false)) {
      staysAtBaseline(K, B);
      continue;
    }
    compileNow({K});
  }
}

bool TierManager::Impl::fitsNativeStack(int64_t Func) {
  const vm::FunctionInfo &F = Exe->function(Func);
  if (argumentsFitNativeStack(*Exe, F))
    return true;
  std::lock_guard Lock(Mutex);
  Stats[static_cast<size_t>(Func)].StaysAtBaseline = true;
  logger().debug("function '{}' stays on the interpreter: a call of {} "
                 "arguments needs more than {} KiB of native stack",
                 F.Name, callSize(*Exe, F).MaxArgs, kMaxNativeArgBytes / 1024);
  return false;
}

void TierManager::drain() {
  // Once the pool is shut down (stopBackgroundCompiles, at exit) queued
  // functions stay where they run; drain waits only for a compile in
  // flight.
  waitForCompiles(this);
}

bool TierManager::compileNow(const std::vector<int64_t> &Funcs,
                             const std::atomic<bool> *Cancel) {
  // In flight meanwhile (compileUnit refuses an index out of range).
  std::vector<int64_t> Valid;
  for (int64_t K : Funcs)
    if (K >= 0 && K < static_cast<int64_t>(State->InFlight.size()))
      Valid.push_back(K);
  {
    std::lock_guard Lock(State->Mutex);
    for (int64_t K : Valid)
      ++State->InFlight[static_cast<size_t>(K)];
  }
  const bool Compiled = compileUnit(Funcs, Cancel);
  endCompiles(Valid);
  return Compiled;
}

bool TierManager::compileUnit(const std::vector<int64_t> &Funcs,
                              const std::atomic<bool> *Cancel) {
  if (Cancel && Cancel->load(std::memory_order_relaxed))
    return false;
  auto Start = std::chrono::steady_clock::now();
  const vm::Executable &Exe = *State->Exe;
  for (int64_t K : Funcs)
    if (K < 0 || K >= static_cast<int64_t>(Exe.functions().size()) ||
        Exe.function(K).Kind != vm::FunctionKind::Bytecode) {
      logger().warn("not compiling function index {}: not a bytecode "
                    "function",
                    K);
      return false;
    }
  // Codegen time grows with the size of a function, not of the unit.
  int64_t Size = 0;
  for (int64_t K : Funcs)
    Size = std::max(Size, Exe.function(K).numInstrs());
  Engine &E = Size > kLargeUnitInstrs ? *LargeEng : *Eng;
  LoweredModule L;
  const std::shared_ptr<const BoundCallees> B = State->bindings();
  // Lower, bind, key, compile: llvm::Error inside, converted here.
  auto Compile = [&]() -> Expected<std::unique_ptr<CompiledUnit>> {
    Expected<LoweredModule> Lowered = lowerFunctions(
        *State->Exe, Funcs, B->Callees, unitLoweringOptions(Funcs, *B, Cancel));
    if (!Lowered)
      return Lowered.takeError();
    L = std::move(*Lowered);
    bindUnitSymbols(L);
    const CodeKey Key = unitKey(E, Funcs, L);
    if (Opts.FailCompilesForTesting)
      return createStringError(
          std::errc::operation_not_permitted,
          "compilation disabled for testing (FailCompilesForTesting)");
    return E.tryCompile(
        std::move(L.Context), std::move(L.Module), L.Absolute, unitExports(L),
        E.options().CacheDir.empty() ? std::string() : Key.text(), Cancel);
  };
  std::unique_ptr<CompiledUnit> Unit;
  std::string Err;
  bool Abandoned = false;
  try {
    if (Expected<std::unique_ptr<CompiledUnit>> U = Compile())
      Unit = std::move(*U);
    else
      handleAllErrors(
          U.takeError(), [&](const CompileAbandoned &) { Abandoned = true; },
          [&](const ErrorInfoBase &EI) { Err = EI.message(); });
  } catch (const std::exception &Ex) { // a vmjit::Error from the VM layer
    Err = Ex.what();
  }
  const double Ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - Start)
                        .count();
  return publishUnit(Funcs, L, std::move(Unit), Err, Abandoned, Ms, B);
}

LoweringOptions
TierManager::unitLoweringOptions(const std::vector<int64_t> &Funcs,
                                 const BoundCallees &B,
                                 const std::atomic<bool> *Cancel) {
  LoweringOptions LO = loweringOptions(Opts);
  LO.Cancel = Cancel;
  LO.HostDevices = B.HostDevices;
  for (int64_t K : Funcs)
    if (std::optional<FunctionSpeculation> S =
            speculationFor(K, /*NeedTarget=*/true))
      LO.Speculate[K] = std::move(*S);
  return LO;
}

void TierManager::bindUnitSymbols(LoweredModule &L) {
  for (const auto &[Name, Addr] : runtimeHelperSymbols())
    L.Absolute[Name] = Addr;
  L.Absolute[kDeoptHelper] = reinterpret_cast<uint64_t>(&vmjit_tier2_deopt);
  L.Absolute[kDeoptManager] = reinterpret_cast<uint64_t>(this);
  for (int64_t K : L.DirectCallees)
    L.Absolute[codeSlotSymbol(K)] =
        reinterpret_cast<uint64_t>(&State->Code[static_cast<size_t>(K)]);
  for (int64_t K : L.CellCallees) {
    L.Absolute[codeSlotSymbol(K)] =
        reinterpret_cast<uint64_t>(&State->Code[static_cast<size_t>(K)]);
    L.Absolute[directCellSymbol(K)] =
        reinterpret_cast<uint64_t>(&State->DirectCells[static_cast<size_t>(K)]);
  }
}

CodeKey TierManager::unitKey(const Engine &E, const std::vector<int64_t> &Funcs,
                             const LoweredModule &L) const {
  // The build (which changes with the lowering's code), the host, the
  // pipeline, the functions' words, then every decision the lowering
  // recorded.
  const HostInfo &H = hostInfo();
  const EngineOptions &EO = E.options();
  CodeKey Key;
  Key.record("vmjit tier 2", jitBuildIdentity());
  Key.record("host", H.LLVMVersion, H.Triple, H.CPU, H.Features);
  Key.record("pipeline", EO.OptLevel, EO.CodegenOptLevel, EO.Pipeline);
  const vm::Executable &Exe = *State->Exe;
  for (int64_t K : Funcs) {
    const vm::FunctionInfo &F = Exe.function(K);
    const vm::Word *W = Exe.code().data() + Exe.instrOffsets()[F.StartInstr];
    const vm::Word *End =
        F.EndInstr < Exe.numInstrs()
            ? Exe.code().data() + Exe.instrOffsets()[F.EndInstr]
            : Exe.code().data() + Exe.code().size();
    Key.record("words", K, F.Name, F.NumParams, F.RegisterFileSize,
               hex128(W, static_cast<size_t>(End - W) * sizeof(*W)));
  }
  Key.append(L.Key);
  return Key;
}

std::vector<std::string> TierManager::unitExports(const LoweredModule &L) {
  std::vector<std::string> Exports;
  for (const auto &[K, Sym] : L.Symbols)
    Exports.push_back(Sym);
  for (const auto &[K, Sym] : L.DirectEntries)
    Exports.push_back(Sym);
  return Exports;
}

bool TierManager::publishUnit(const std::vector<int64_t> &Funcs,
                              const LoweredModule &L,
                              std::unique_ptr<CompiledUnit> Unit,
                              const std::string &Err, bool Abandoned, double Ms,
                              std::shared_ptr<const BoundCallees> B) {
  const vm::Executable &Exe = *State->Exe;
  std::lock_guard Lock(State->Mutex);
  if (!Unit && Abandoned) {
    for (int64_t K : Funcs)
      logger().debug("abandoned the compile of function '{}'",
                     Exe.function(K).Name);
    return false;
  }
  for (int64_t K : Funcs)
    State->DecidedWith[static_cast<size_t>(K)] = B;
  if (!Unit) {
    for (int64_t K : Funcs) {
      State->Stats[static_cast<size_t>(K)].Failed = true;
      logger().warn("JIT compilation of function '{}' failed; it stays on "
                    "the interpreter: {}",
                    Exe.function(K).Name, Err);
    }
    return false;
  }
  const double Share = Ms / static_cast<double>(Funcs.size());
  for (const auto &[K, Sym] : L.Symbols) {
    FunctionJITStats &S = State->Stats[static_cast<size_t>(K)];
    S.Compiled = true;
    // Compiled after kernels were published: it may have stayed at tier 1,
    // or failed to compile, before.
    S.StaysAtBaseline = false;
    S.Failed = false;
    S.CacheHit = Unit->stats().CacheHit;
    // A cache hit compiled nothing: its time is the object's load.
    S.CompileMs = S.CacheHit ? 0 : Share;
    S.CacheLoadMs = S.CacheHit ? Share : 0;
    S.UnitCompileMs = S.CacheHit ? 0 : Ms;
    S.UnitFunctions = static_cast<int64_t>(Funcs.size());
    auto Code = reinterpret_cast<vm::NativeFn>(Unit->address(Sym));
    State->Code[static_cast<size_t>(K)].store(Code, std::memory_order_release);
    // Then its direct entry for callers in other units, with that code.
    if (auto E = L.DirectEntries.find(K); E != L.DirectEntries.end()) {
      State->DirectTargets.push_back(std::make_unique<DirectTarget>(
          DirectTarget{Code, reinterpret_cast<DirectEntryFn>(
                                 Unit->address(E->second))}));
      State->DirectCells[static_cast<size_t>(K)].store(
          State->DirectTargets.back().get(), std::memory_order_release);
    }
    // Counted tier-1 code moves a looping frame here.
    __atomic_store_n(&State->Sites[static_cast<size_t>(K)].Tier2,
                     reinterpret_cast<void *>(Code), __ATOMIC_RELEASE);
    logger().debug("{} function '{}' in {:.3f} ms",
                   S.CacheHit ? "loaded (object cache hit)" : "compiled",
                   Exe.function(K).Name, Share);
  }
  State->Units.push_back(std::move(Unit));
  return true;
}

std::string TierManager::irText(int64_t Func, bool Optimized) {
  std::vector<int64_t> Funcs = {Func};
  const std::shared_ptr<const BoundCallees> B = State->bindings();
  LoweringOptions LO = loweringOptions(Opts);
  LO.HostDevices = B->HostDevices;
  if (std::optional<FunctionSpeculation> S =
          speculationFor(Func, /*NeedTarget=*/false))
    LO.Speculate[Func] = std::move(*S);
  Expected<LoweredModule> L =
      lowerFunctions(*State->Exe, Funcs, B->Callees, LO);
  if (!L)
    throwError("JITError", toString(L.takeError()));
  if (Optimized)
    Eng->optimize(*L->Module);
  return moduleText(*L->Module);
}

//===----------------------------------------------------------------------===//
// Attaching to VMs
//===----------------------------------------------------------------------===//

std::shared_ptr<TierManager>
TierManager::create(const vm::VirtualMachine &VM, const JITOptions &Opts,
                    std::shared_ptr<Engine> Eng,
                    std::shared_ptr<Engine> LargeEng, BoundCallees Bind) {
  std::shared_ptr<TierManager> M(new TierManager());
  M->Opts = Opts;
  M->Threshold = Opts.Threshold;
  M->InterpThreshold = Opts.Mode == vm::ExecMode::Tiered && Opts.UseBaseline &&
                               baseline::available()
                           ? std::min(Opts.BaselineThreshold, Opts.Threshold)
                           : Opts.Threshold;
  M->Eng = std::move(Eng);
  M->LargeEng = std::move(LargeEng);
  M->State = std::make_unique<Impl>();
  Impl &S = *M->State;
  S.Exe = VM.executablePtr();
  const size_t N = VM.executable().functions().size();
  S.Code = std::make_unique<std::atomic<vm::NativeFn>[]>(N);
  S.DirectCells = std::make_unique<std::atomic<const DirectTarget *>[]>(N);
  S.Requested = std::make_unique<std::atomic<uint8_t>[]>(N);
  S.Tier1Tried = std::make_unique<std::atomic<uint8_t>[]>(N);
  S.Sites = std::make_unique<baseline::TierUpSite[]>(N);
  for (size_t K = 0; K < N; ++K) {
    S.Code[K].store(nullptr, std::memory_order_relaxed);
    S.DirectCells[K].store(nullptr, std::memory_order_relaxed);
    S.Requested[K].store(0, std::memory_order_relaxed);
    S.Tier1Tried[K].store(0, std::memory_order_relaxed);
    S.Sites[K] = {INT64_MAX, nullptr, 0, 0, M.get(), static_cast<int64_t>(K)};
  }
  S.Stats.resize(N);
  S.DeoptTargets.assign(N, nullptr);
  S.DeoptCounts.resize(N);
  S.GenericSites.resize(N);
  S.Feedback.resize(N);
  S.DecidedWith.resize(N);
  S.InFlight.assign(N, 0);
  for (size_t K = 0; K < N; ++K) {
    const vm::FunctionInfo &F = VM.executable().functions()[K];
    if (F.Kind == vm::FunctionKind::Bytecode)
      S.Feedback[K].assign(static_cast<size_t>(F.NumParams + F.numInstrs()),
                           vm::FeedbackSlot{});
  }
  S.Bind = std::make_shared<const BoundCallees>(std::move(Bind));
  shutdownCompilePoolAtExit();
  return M;
}

void enableJIT(vm::VirtualMachine &VM, const JITOptions &Given) {
  const JITOptions Opts = withEnvironment(Given);
  if (Opts.Mode == vm::ExecMode::Bytecode) {
    VM.setTierController(nullptr);
    return;
  }
  // The baseline tier's code memory is mapped now, not by the first
  // compile (which would report the set-up as its own time).
  if (baseline::available())
    baseline::prepareCodeMemory();
  std::shared_ptr<TierManager> M = sharedTierManager(VM, Opts);
  VM.setTierController(M);
  if (Opts.Mode == vm::ExecMode::Tiered) {
    // Started now rather than at the first hot function: creating a
    // thread costs tens of microseconds, which that call would pay.
    if (Opts.Background)
      warmCompilePool();
    return;
  }
  const vm::Executable &Exe = VM.executable();
  std::vector<int64_t> All, Missing;
  for (size_t K = 0; K < Exe.functions().size(); ++K)
    if (Exe.functions()[K].Kind == vm::FunctionKind::Bytecode)
      All.push_back(static_cast<int64_t>(K));
  if (Opts.Mode == vm::ExecMode::Baseline) {
    if (!baseline::available())
      throwError("JITError", "the baseline tier is not available in this "
                             "build (it has stencils for x86-64 only)");
    for (int64_t K : All)
      if (M->compileBaselineNow(K, /*Counted=*/false))
        VM.adoptNativeCode(K);
    return;
  }
  // Tier-2 code for every function tier 2 wins on, even one another VM of
  // the manager (tiered mode) runs at tier 1 now; the others keep the tier-1
  // code they have.
  for (int64_t K : All) {
    if (M->stats(K).Compiled ||
        (M->nativeCode(K) &&
         !tierTwoWins(Exe, K, M->Opts, *M->State->bindings())))
      continue;
    if (!M->State->Requested[static_cast<size_t>(K)].exchange(1))
      Missing.push_back(K);
  }
  // On a thread of its own: glibc gives it another malloc arena, so the
  // megabytes LLVM allocates and frees do not stay behind as fragments in
  // the calling thread's heap, where they made every later allocation of
  // the program's kernels slower (mlp/compiled/H64: see docs/jit.md).
  std::exception_ptr Failure;
  std::thread([&] {
    try {
      M->compileAllNow(Missing);
    } catch (...) {
      Failure = std::current_exception();
    }
  }).join();
  if (Failure)
    std::rethrow_exception(Failure);
  if (Opts.Background)
    M->drain(); // functions another VM had queued
  for (int64_t K : All)
    VM.adoptNativeCode(K);
}

TierManager *tierManagerOf(const vm::VirtualMachine &VM) {
  return dynamic_cast<TierManager *>(VM.tierController());
}

} // namespace vmjit::jit
