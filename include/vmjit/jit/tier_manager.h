//===- vmjit/jit/tier_manager.h - Tier-up, compiled mode, JIT API -*- C++ -*-===//
//
// The JIT tier as the VM sees it. enableJIT attaches a TierManager to a VM:
//   - tiered: the interpreter counts calls and backward jumps per function;
//     at the threshold the function is queued for a background compile
//     thread; when its code is ready the VM swaps its function-pool entry
//     (at the next call) or moves a running frame into it at a loop header
//     (on-stack replacement). The interpreter never waits.
//   - compiled: every bytecode function is compiled, in one module, before
//     enableJIT returns, and swapped in.
// VMs whose executable and resolved callees are the same share one
// TierManager, hence one set of compiled code. A compile that fails leaves
// the function on the interpreter (with a logged warning), never a wrong
// answer.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_TIER_MANAGER_H
#define VMJIT_JIT_TIER_MANAGER_H

#include "vmjit/jit/engine.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::jit {

/// The default tier-up threshold (calls, or backward jumps, of one
/// function). See docs/jit.md for how it was chosen.
inline constexpr int64_t kDefaultTierThreshold = 100;
/// The default optimization level of tier-up compiles.
inline constexpr int kDefaultOptLevel = 1;

struct JITOptions {
  vm::ExecMode Mode = vm::ExecMode::Tiered;
  /// 0: VMJIT_TIER_THRESHOLD if set, else kDefaultTierThreshold.
  int64_t Threshold = 0;
  int OptLevel = kDefaultOptLevel;
  /// The on-disk object cache; empty: VMJIT_CACHE_DIR if set, else none.
  std::string CacheDir;
  bool PerfSupport = false;
  bool DebuggerSupport = false;
  bool InlineBuiltins = true;
  /// Compile on the background thread (false: at the request, on the
  /// requesting thread; for tests that need determinism).
  bool Background = true;
  /// Testing: make every compile fail, to exercise the fallback.
  bool FailCompilesForTesting = false;
};

/// What the JIT did for one function.
struct FunctionJITStats {
  bool Requested = false;
  bool Compiled = false;
  bool Failed = false;
  bool CacheHit = false;
  double CompileMs = 0; ///< lowering + optimization + codegen + link
};

class TierManager;

/// Attaches the JIT tier to `VM` (see the file comment). Throws
/// Error("JITError") only if the JIT cannot start at all (no LLVM target).
void enableJIT(vm::VirtualMachine &VM, const JITOptions &Opts = {});

/// The manager attached to `VM`, or null.
TierManager *tierManagerOf(const vm::VirtualMachine &VM);

class TierManager final : public vm::TierController {
public:
  ~TierManager() override;

  vm::NativeFn nativeCode(int64_t Func) const noexcept override;
  int64_t threshold() const noexcept override { return Threshold; }
  void requestCompile(vm::VirtualMachine &VM, int64_t Func) override;

  /// Compiles `Funcs` now, in one module, on this thread. Returns whether
  /// it succeeded.
  bool compileNow(const std::vector<int64_t> &Funcs);
  /// Waits until the background queue is empty (for tests and tools).
  void drain();

  FunctionJITStats stats(int64_t Func) const;
  const JITOptions &options() const noexcept { return Opts; }
  Engine &engine() noexcept { return *Eng; }

  /// The LLVM IR for `Func` as the tier would compile it (`Optimized`:
  /// after the engine's pipeline).
  std::string irText(int64_t Func, bool Optimized);

private:
  friend void enableJIT(vm::VirtualMachine &VM, const JITOptions &Opts);
  friend class TierManagerRegistry;
  TierManager() = default;
  /// Starts the background compile thread if it is not running.
  void startWorker();
  void startWorkerLocked();
  struct Impl;
  std::unique_ptr<Impl> I;
  JITOptions Opts;
  int64_t Threshold = kDefaultTierThreshold;
  std::shared_ptr<Engine> Eng;
  /// For units too large for Eng's codegen level.
  std::shared_ptr<Engine> LargeEng;
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_TIER_MANAGER_H
