//===- vmjit/jit/kernel_tier.h - TVM's kernels for this CPU -----*- C++ -*-===//
//
// The kernel tier, first step: the LLVM bitcode TVM writes beside a model
// library (`model.bc` beside `model.so`) compiled at load for the host CPU
// (its features replacing TVM's generic target; O3 with Polly; strict
// floating point, so the outputs are TVM's bit for bit), cached in the
// object cache, and handed back as a KernelLibrary of in-process entries.
// Passed in VMOptions::Libraries ahead of model.so, it makes the VM call
// the compiled kernels instead of TVM's machine code. No LLVM type here.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_TIER_H
#define VMJIT_JIT_KERNEL_TIER_H

#include "vmjit/runtime/library.h"

#include <memory>
#include <string>
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
};

/// What loading the kernel tier gave.
struct KernelTierResult {
  /// The compiled kernels, to put ahead of the model library in
  /// VMOptions::Libraries; null when TVM's machine code stays (Warning
  /// says why).
  std::shared_ptr<KernelLibrary> Library;
  /// One line for a warning when Library is null.
  std::string Warning;
  /// The packed functions compiled (sorted).
  std::vector<std::string> Kernels;
  /// Wall time of reading, checking, compiling (or loading from the
  /// cache) and linking, and whether the object came from the cache.
  double CompileMs = 0;
  bool CacheHit = false;
  /// One line for --stats: "kernels: 12 of 12 from vmjit's code (...)".
  std::string note() const;
};

/// Compiles the kernels of the bitcode file `BitcodePath` for the host,
/// checked against `Tvm`, the kernel library they replace (the same
/// `__tvm_ffi_*` entries, each with the safe-call signature). Content
/// that does not fit (another model's bitcode, unreadable bitcode, a
/// failed compile) gives a null Library and a Warning; TVM's code stays.
/// Throws Error("JITError") if the file cannot be read.
///
/// TVM's IR assumes 64-byte aligned buffers, and the host's vector code
/// relies on it: vmjit's own tensors are aligned; a tensor from outside
/// (DLPack, a NumPy array without a copy) must be too, as nothing copies
/// an unaligned one for the compiled kernels yet.
KernelTierResult loadKernelTier(const std::string &BitcodePath,
                                const KernelLibrary &Tvm,
                                const KernelTierOptions &Opts = {});

/// The bitcode TVM wrote beside program or library `Path`, if there is
/// one: the same stem with `.bc` (model.bc beside model.so or
/// model.tvmexec); else "".
std::string kernelBitcodeBeside(const std::string &Path);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_TIER_H
