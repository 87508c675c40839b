//===- vmjit/jit/tier_manager.h - Tier-up, compiled mode, JIT API -*- C++ -*-===//
//
// The JIT tier as the VM sees it. enableJIT attaches a TierManager to a VM:
//   - tiered: the interpreter counts calls and backward jumps per function;
//     at the baseline threshold the function is compiled at tier 1
//     (copy-and-patch, microseconds, on the calling thread) and swapped
//     in; its tier-1 code counts on toward the tier-2 threshold, then the
//     function is queued for the process's compile pool (LLVM), and
//     tier 2 takes over at the next call or, for a looping frame, at its
//     next backward jump (on-stack replacement).
//   - baseline: every bytecode function at tier 1 before enableJIT returns.
//   - compiled: every bytecode function is compiled at tier 2, in one
//     module, before enableJIT returns, and swapped in.
// VMs whose executable and resolved callees are the same share one
// TierManager, hence one set of compiled code. A compile that fails leaves
// the function on the interpreter (with a logged warning), never a wrong
// answer.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_TIER_MANAGER_H
#define VMJIT_JIT_TIER_MANAGER_H

#include "vmjit/jit/callee_binding.h"
#include "vmjit/jit/code_key.h"
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/speculation.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vmjit::jit {

class CompiledUnit;
class Engine;
struct LoweredModule;
struct LoweringOptions;

/// The default tier-2 threshold: calls of a function plus backward jumps
/// taken inside it, in any tier, before it is queued for the optimizing
/// tier. See docs/jit.md for how it was chosen.
inline constexpr int64_t kDefaultTierThreshold = 1000;
/// The default baseline threshold: calls (or backward jumps) on the
/// interpreter before a function is compiled at tier 1, synchronously.
inline constexpr int64_t kDefaultBaselineThreshold = 2;
/// The default optimization level of tier-2 compiles.
inline constexpr int kDefaultOptLevel = 1;

struct JITOptions {
  vm::ExecMode Mode = vm::ExecMode::Tiered;
  /// Tier-2 threshold; 0: VMJIT_TIER_THRESHOLD if set, else
  /// kDefaultTierThreshold.
  int64_t Threshold = 0;
  /// Baseline threshold (never above Threshold); 0:
  /// VMJIT_BASELINE_THRESHOLD if set, else kDefaultBaselineThreshold.
  int64_t BaselineThreshold = 0;
  /// Use the baseline tier in tiered mode when the build has it (false:
  /// the interpreter hands hot functions straight to tier 2).
  bool UseBaseline = true;
  int OptLevel = kDefaultOptLevel;
  /// The on-disk object cache of tier-2 code; empty: VMJIT_CACHE_DIR if
  /// set, else none.
  std::string CacheDir;
  /// No object cache at all (whatever CacheDir and VMJIT_CACHE_DIR say).
  bool NoCache = false;
  bool PerfSupport = false;
  bool DebuggerSupport = false;
  bool InlineBuiltins = true;
  /// Tier 2 keeps registers in SSA values ("promoted") in functions whose
  /// instructions x registers is at most this; larger ones are lowered
  /// flat (see docs/jit.md). -1: the default (256); 0: always flat.
  int64_t PromoteLimit = -1;
  /// Compile tier 2 on the compile pool (false: at the request, on
  /// the requesting thread; for tests that need determinism).
  bool Background = true;
  /// Testing: make every tier-2 compile fail, to exercise the fallback.
  bool FailCompilesForTesting = false;
  /// Tier 2 speculates on the kinds of value the interpreter saw
  /// (parameters, call results) and on its own kind inference at loop
  /// entries, guarding each assumption; a failed guard deoptimizes to
  /// tier 1 (docs/jit.md#speculation-and-deoptimization).
  bool Speculate = true;
  /// Testing: tier 2 speculates from deliberately wrong feedback (every
  /// parameter and call result assumed to be an int, a float or None,
  /// whatever was seen), so that its guards fail and frames deoptimize
  /// all over; results, errors and steps must not change. Also set by
  /// VMJIT_DEOPT_STRESS=1.
  bool DeoptStress = false;
  /// Tier 2 passes an object at its last use to a bytecode function as an
  /// object rvalue reference, which the callee takes (no reference counted;
  /// docs/jit.md#owned-arguments). false: every argument is lent, for
  /// comparison (the benchmark harness's owned/compiled-lent).
  bool OwnedArguments = true;
  /// Tier 2 keeps the storages and tensors that only kernels see on its
  /// native stack (docs/jit.md#tensors-on-the-stack). false: every one is
  /// allocated, for comparison.
  bool StackTensors = true;
  /// The direct entry of a bytecode function of at most this many
  /// instructions holds a copy of its tier-2 code (one call and one frame
  /// less per direct call, that code compiled twice); larger ones call it
  /// (docs/jit.md#direct-calls). -1: the default (32); 0: never.
  int64_t DirectBodyLimit = -1;
};

/// After this many failed guards at one site, tier 2 compiles the
/// function again with that site generic.
inline constexpr uint32_t kDeoptLimit = 3;

/// What the JIT did for one function (the VM layer's TierStats).
using FunctionJITStats = vm::TierStats;

/// Whether this build has the baseline tier for the host (x86-64).
bool baselineAvailable() noexcept;

class TierManager;

/// Stops the process's background tier-2 compiles for good: queued ones are
/// dropped, running ones abandoned at their next check (between compile
/// phases and IR passes; one function's code generation, once begun, ends
/// first), and the compile threads are joined. VMs keep the code they
/// have; hot functions stay at their tier. Call it before the process
/// exits while VMs are alive (Python's vmjit does, at interpreter exit; an
/// atexit handler does it for other programs): a compile still running
/// then would meet LLVM's static objects being destroyed.
void stopBackgroundCompiles();

/// Attaches the JIT tier to `VM` (see the file comment). Throws
/// Error("JITError") only if the JIT cannot start at all (no LLVM target).
void enableJIT(vm::VirtualMachine &VM, const JITOptions &Opts = {});

/// The manager attached to `VM`, or null.
TierManager *tierManagerOf(const vm::VirtualMachine &VM);

/// Every tier manager of the process takes up the kernel slots
/// (runtime/kernel_slot.h) published since it bound them: code compiled
/// before calls their kernels through the slot and allocates what they
/// get, so each function whose calls the published kernels change is
/// compiled at tier 2 again (in the background unless
/// JITOptions::Background is off), and one kept at tier 1 for want of
/// them is reconsidered. The kernel tier calls it once it has published a
/// model's kernels (docs/jit.md#kernels-published-after-the-code).
void rebindPublishedKernels();

/// The number of keys in the process's registry of shared managers: the
/// managers alive, plus those that expired since the last enableJIT (for
/// tests; the registry drops expired keys at each enableJIT).
size_t tierManagerRegistrySize();

class TierManager final : public vm::TierController {
public:
  ~TierManager() override;

  const std::atomic<vm::NativeFn> *codeSlot(int64_t Func) const noexcept override;
  /// The interpreter's threshold: the baseline threshold when tiered mode
  /// uses the baseline tier, else the tier-2 threshold.
  int64_t threshold() const noexcept override { return InterpThreshold; }
  /// Tiered mode: compiles `Func` at tier 1 now (microseconds), or queues
  /// it for tier 2 when there is no baseline tier.
  void requestCompile(vm::VirtualMachine &VM, int64_t Func) override;

  /// Queues `Func` for tier 2 (once; in the background unless
  /// JITOptions::Background is false).
  void requestOptimized(int64_t Func);
  /// Compiles `Func` at tier 1 now; `Counted`: the code counts toward
  /// tier 2. Returns whether the function has baseline code.
  bool compileBaselineNow(int64_t Func, bool Counted);
  /// Compiles `Funcs` at tier 2 now, in one module, on this thread.
  /// Returns whether it succeeded; false without a warning when `Cancel`
  /// was set and the compile abandoned (Engine::compile).
  bool compileNow(const std::vector<int64_t> &Funcs,
                  const std::atomic<bool> *Cancel = nullptr);
  /// Binds the function table's kernel slots again (rebindPublishedKernels)
  /// and compiles again the functions the change makes faster.
  void rebindKernels();
  /// Compiled mode: compiles `Funcs` at tier 2, in one module, except those
  /// too large for tier 2 to win, which get tier-1 code (when the build has
  /// the baseline tier and UseBaseline is on).
  void compileAllNow(const std::vector<int64_t> &Funcs);
  /// Waits until this manager has no background compile queued or running
  /// (for tests and tools). After stopBackgroundCompiles it returns once
  /// none is running, what was queued being dropped.
  void drain();

  FunctionJITStats stats(int64_t Func) const;
  vm::FeedbackSlot *feedback(int64_t Func) noexcept override;
  /// A guard failed at `Site` of the frame `Ctx` runs (vmjit_tier2_deopt):
  /// counts it, recompiles the function once the site failed kDeoptLimit
  /// times, and goes on in tier-1 code at `ResumePC`.
  int deoptimize(vm::NativeContext *Ctx, Any *Regs, const Any *Consts,
                 std::atomic<FunctionObj *> *Funcs, int64_t Site,
                 int64_t ResumePC);
  vm::TierStats tierStats(int64_t Func) const override { return stats(Func); }
  bool countsEveryCall(int64_t Func) const noexcept override;
  const JITOptions &options() const noexcept { return Opts; }

  /// The LLVM IR for `Func` as the tier would compile it (`Optimized`:
  /// after the engine's pipeline).
  std::string irText(int64_t Func, bool Optimized);

private:
  friend void enableJIT(vm::VirtualMachine &VM, const JITOptions &Opts);
  friend class TierManagerRegistry;
  TierManager() = default;
  /// A manager for `VM`'s executable (the registry's: one per executable,
  /// bindings and options), compiling with `Eng` (`LargeEng` for large
  /// units).
  static std::shared_ptr<TierManager> create(const vm::VirtualMachine &VM,
                                             const JITOptions &Opts,
                                             std::shared_ptr<Engine> Eng,
                                             std::shared_ptr<Engine> LargeEng,
                                             BoundCallees Bind);
  /// Compiles `Func` at tier 2, on the compile pool unless
  /// JITOptions::Background is off; the caller counted it in flight.
  void launchCompile(int64_t Func);
  /// A job of the compile pool: compiles `Func` at tier 2 unless `Cancel`
  /// stops it.
  void compileInBackground(int64_t Func, const std::atomic<bool> &Cancel);
  /// compileNow's compile, without counting it in flight.
  bool compileUnit(const std::vector<int64_t> &Funcs,
                   const std::atomic<bool> *Cancel);
  /// The compiles of `Funcs` in flight have ended: those whose bindings
  /// changed meanwhile are compiled again.
  void endCompiles(const std::vector<int64_t> &Funcs);
  /// `Func` keeps its tier-1 code, as decided with bindings `B`.
  void staysAtBaseline(int64_t Func, std::shared_ptr<const BoundCallees> B);
  /// What tier 2 speculates for `Func` (null: nothing: no tier-1 code to
  /// deoptimize to when `NeedTarget`, speculation off, a flat function).
  std::optional<FunctionSpeculation> speculationFor(int64_t Func,
                                                    bool NeedTarget);
  /// The uncounted tier-1 code `Func` deoptimizes to, made on first use.
  vm::NativeFn deoptTarget(int64_t Func);
  /// Compiles `Func` at tier 2 again (its generic sites grew).
  void recompile(int64_t Func);
  // compileNow's parts: lower the unit (with what it speculates), bind the
  // symbols its code needs, derive its object-cache key (code_key.h),
  // and publish the compiled code (or the failure) to the functions.
  LoweringOptions unitLoweringOptions(const std::vector<int64_t> &Funcs,
                                      const BoundCallees &B,
                                      const std::atomic<bool> *Cancel);
  void bindUnitSymbols(LoweredModule &L);
  CodeKey unitKey(const Engine &E, const std::vector<int64_t> &Funcs,
                  const LoweredModule &L) const;
  static std::vector<std::string> unitExports(const LoweredModule &L);
  /// `Unit` null: the compile failed with `Err`, or was `Abandoned`. `B`:
  /// the bindings the unit was lowered with.
  bool publishUnit(const std::vector<int64_t> &Funcs, const LoweredModule &L,
                   std::unique_ptr<CompiledUnit> Unit, const std::string &Err,
                   bool Abandoned, double Ms,
                   std::shared_ptr<const BoundCallees> B);
  /// What the manager keeps per function of its executable.
  struct Impl;
  std::unique_ptr<Impl> State;
  JITOptions Opts;
  int64_t Threshold = kDefaultTierThreshold;
  int64_t InterpThreshold = kDefaultTierThreshold;
  std::shared_ptr<Engine> Eng;
  /// For units too large for Eng's codegen level.
  std::shared_ptr<Engine> LargeEng;
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_TIER_MANAGER_H
