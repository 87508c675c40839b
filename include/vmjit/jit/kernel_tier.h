//===- vmjit/jit/kernel_tier.h - TVM's kernels for this CPU -----*- C++ -*-===//
//
// The kernel tier: the LLVM bitcode TVM writes beside a model library
// (`model.bc` beside `model.so`) compiled for the host CPU (its features
// replacing TVM's generic target; O3 with Polly; strict floating point, so
// the outputs are TVM's bit for bit) on the compile pool, cached in the
// object cache, and swapped in for TVM's machine code while the program
// runs. Its library, passed in VMOptions::Libraries ahead of model.so,
// gives the VM one Function per kernel whose code changes at the swap.
// No LLVM type here.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_TIER_H
#define VMJIT_JIT_KERNEL_TIER_H

#include "vmjit/runtime/kernel_effects.h"
#include "vmjit/runtime/library.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::jit {

struct KernelTierOptions {
  /// The object cache's directory; empty: no cache.
  std::string CacheDir;
  /// Opt-in fast math: FMA fusion and reassociation (outputs then differ
  /// from TVM's in the last bits).
  bool FastMath = false;
  /// The IR pipeline's level, 1..3 (Polly runs from O1 on).
  int OptLevel = 3;
  /// Polly in the pipeline (needs libvmjit_polly.so beside the JIT
  /// library).
  bool Polly = true;
  /// Compile on the process's compile pool while TVM's machine code runs
  /// (the default), or before KernelTier::start returns.
  bool Background = true;
  /// Register the compiled kernels with perf (perf map, jitdump) and GDB,
  /// as the JIT tiers' code under EngineOptions::PerfSupport.
  bool PerfSupport = false;
};

enum class KernelTierState {
  /// Queued or compiling: TVM's machine code runs.
  Compiling,
  /// The compiled kernels run.
  Ready,
  /// The bitcode did not fit or did not compile (Warning says why), or
  /// the compile was abandoned: TVM's machine code stays.
  Failed,
};

/// Where a kernel tier stands.
struct KernelTierStatus {
  KernelTierState State = KernelTierState::Compiling;
  /// The bitcode file.
  std::string Bitcode;
  /// Failed: one line saying why TVM's machine code stays.
  std::string Warning;
  /// The packed functions of the kernel library (sorted): all of them run
  /// the compiled code once Ready.
  std::vector<std::string> Kernels;
  /// Ready: wall time of reading, checking, compiling (or loading from the
  /// object cache) and linking, and whether the object was in the cache.
  double CompileMs = 0;
  bool CacheHit = false;
  /// Ready: the transpose loop nests the compile rewrote into blocks of
  /// 8x8 elements moved through vector registers (docs/jit.md).
  unsigned Transposes = 0;
  /// Calls of the kernels that ran TVM's machine code (before the swap, or
  /// with an unaligned strided tensor), and calls of the compiled kernels
  /// that copied an unaligned tensor into aligned storage.
  uint64_t TvmCalls = 0;
  uint64_t AlignedCopies = 0;
  /// One line for --stats: "kernels: 12 of 12 from vmjit's code (...)".
  std::string note() const;
  /// The JSON object (text) that `vmjit run --json --stats` and Python's
  /// `vm.stats()` give as "kernel_tier": state, bitcode, kernels (a
  /// count), compile_ms, cache_hit and transposes (Ready), warning (Failed),
  /// tvm_calls, aligned_copies.
  std::string json() const;
};

/// The kernel tier of one model: the bitcode TVM writes beside a model
/// library compiled for this CPU and swapped in for the library's kernels
/// while the program runs.
class KernelTier {
public:
  /// Starts the kernel tier of bitcode file `BitcodePath` for the kernels
  /// of `Tvm`, the library they replace. Its library() serves every
  /// packed function of `Tvm`: TVM's machine code until the compiled
  /// kernels are published (on the compile pool, or before start returns
  /// when Opts.Background is off), those from the next call on. The
  /// bitcode must define the same `__tvm_ffi_*` entries as `Tvm`, each
  /// with the safe-call signature; content that does not fit (another
  /// model's bitcode, unreadable bitcode, a failed compile) leaves the
  /// tier Failed with a Warning, and TVM's code stays. A tier of the same
  /// file (size and modification time), library and options that is still
  /// alive in the process is shared. Throws Error("JITError") if the file
  /// does not exist.
  ///
  /// TVM's IR assumes 64-byte aligned buffers, and the host's vector code
  /// relies on it: a call with an unaligned tensor copies it into aligned
  /// storage for the call (runtime/aligned_call.h).
  static std::shared_ptr<KernelTier>
  start(const std::string &BitcodePath, std::shared_ptr<KernelLibrary> Tvm,
        const KernelTierOptions &Opts = {});
  /// Abandons a compile still queued or running (a running one stops at
  /// its next IR pass, without the destructor waiting for it): the
  /// library's slots, where VMs still hold them, keep running TVM's code.
  ~KernelTier();
  KernelTier(const KernelTier &) = delete;
  KernelTier &operator=(const KernelTier &) = delete;

  /// The library to put ahead of the model library in
  /// VMOptions::Libraries.
  const std::shared_ptr<KernelLibrary> &library() const noexcept {
    return Library;
  }
  KernelTierStatus status() const;
  /// Waits until the compile has ended (Ready or Failed).
  KernelTierStatus wait() const;
  /// What each kernel (by packed function name) is proven, from the
  /// bitcode's IR, to do with its arguments' data and whether it touches
  /// only its arguments' memory (runtime/kernel_effects.h): the facts that
  /// let a call on constant inputs run once. Computed on the first call
  /// (the bitcode read again and analyzed, without waiting for the
  /// compile) and kept; thread-safe. Empty where the bitcode does not match
  /// the library (the compile's check). A kernel whose code is not
  /// understood gets the conservative answer (not OnlyArgumentMemory,
  /// every argument ReadWrite).
  const std::map<std::string, KernelEffects> &effects() const;
  /// The address of a context slot the compiled code defines
  /// (`__TVMBackendAllocWorkspace`, ...) once Ready, else null: for tests
  /// and diagnostics.
  const void *compiledSymbol(std::string_view Name) const;

  struct Shared;

private:
  KernelTier() = default;
  std::shared_ptr<Shared> Core;
  std::shared_ptr<KernelLibrary> Library;
};

/// What KernelTier::effects gives for the bitcode file `BitcodePath` and
/// the kernels of `Tvm`, without a kernel tier (nothing compiled): for
/// binding a function's parameters (vm/bind_params.h) where TVM's machine
/// code runs the kernels. Empty when the bitcode does not match the
/// library or cannot be read.
std::map<std::string, KernelEffects>
kernelEffects(const std::string &BitcodePath, const KernelLibrary &Tvm);

/// The bitcode TVM wrote beside program or library `Path`, if there is
/// one: the same stem with `.bc` (model.bc beside model.so or
/// model.tvmexec); else "".
std::string kernelBitcodeBeside(const std::string &Path);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_TIER_H
