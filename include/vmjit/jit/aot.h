//===- vmjit/jit/aot.h - Ahead-of-time compilation --------------*- C++ -*-===//
//
// `vmjit compile PROG -o OUT.so`: tier-2 code for every bytecode function
// of an executable, with the executable itself, in one shared library that
// `vmjit run OUT.so` (or any program loading it with vm::openProgram) runs
// without compiling anything and without LLVM (vm/aot_library.h is the
// library's layout and its loader).
//
// The code is what the JIT's tier 2 makes, with two differences: every
// callee is called through the VM's function pool (its address is not known
// ahead of time; the JIT calls packed functions directly), and the helpers
// the code calls are reached through an import table the loader fills. It
// is position-independent code for a generic CPU of the host's
// architecture (driver code gains nothing from newer vector units), linked
// by the system linker (ld.lld or ld on PATH, or $VMJIT_LINKER). With the
// kernels' bitcode (`--kernels model.bc`), the library also holds TVM's
// kernels compiled for this CPU as the kernel tier compiles them, and
// records the CPU features they need.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_AOT_H
#define VMJIT_JIT_AOT_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/tier_manager.h"

#include <cstddef>
#include <string>
#include <vector>

namespace vmjit::jit {

struct AotOptions {
  /// LLVM optimization level, 0..3.
  int OptLevel = kDefaultOptLevel;
  /// Inline the standard builtins (as the JIT does).
  bool InlineBuiltins = true;
  /// The linker to run; empty: $VMJIT_LINKER, else the first of ld.lld-19,
  /// ld.lld and ld on PATH.
  std::string Linker;
  /// The kernel libraries the program runs with, recorded in the output
  /// (relative to it where they can be) so that openProgram loads them with
  /// it (vm::AotManifest::KernelLibraries).
  std::vector<std::string> KernelLibraries;
  /// The kernels' LLVM bitcode (TVM's model.bc), compiled into the output
  /// as the kernel tier compiles it (this CPU and its features, O3 with
  /// Polly, strict floating point; position-independent), ahead of the
  /// kernel libraries; empty: none. The output records the CPU features
  /// (AotManifest::KernelFeatures), and its loader refuses a CPU without
  /// them.
  std::string KernelBitcode;
  /// The packed functions of the kernel library the bitcode replaces
  /// (KernelLibrary::functionNames): the bitcode must define exactly
  /// these `__tvm_ffi_*` entries, each with the safe-call signature, else
  /// the output is written without kernels (AotResult::KernelWarning).
  std::vector<std::string> KernelFunctions;
  /// The object cache's directory for the kernels' object (the kernel
  /// tier's cache: a second compile of the same bitcode for this CPU
  /// compiles nothing); empty: no cache.
  std::string CacheDir;
};

/// What compileAheadOfTime did.
struct AotResult {
  size_t Functions = 0;   ///< bytecode functions compiled
  size_t ObjectBytes = 0; ///< the object file the linker was given
  double CompileMs = 0;   ///< lowering, optimization and codegen
  double LinkMs = 0;
  std::string Linker; ///< the linker that ran
  /// With AotOptions::KernelBitcode: the kernels compiled into the output
  /// (sorted), the time it took (reading, checking, compiling) and the
  /// CPU they are for; or, when the bitcode did not fit (another model's,
  /// unreadable, a failed compile), one line saying why the output holds
  /// none.
  std::vector<std::string> Kernels;
  double KernelCompileMs = 0;
  std::string KernelCPU;
  std::string KernelFeatures; ///< LLVM's, "+avx2,+fma,..."
  bool KernelCacheHit = false; ///< the kernels' object was in the cache
  /// Transpose loop nests rewritten into blocks (docs/jit.md).
  unsigned KernelTransposes = 0;
  std::string KernelWarning;
};

/// Compiles `Exe` ahead of time and writes the library to `OutPath`
/// (replaced only when everything succeeded). Throws Error: JITError when
/// LLVM or the linker fails, IOError when the output cannot be written.
AotResult compileAheadOfTime(const vm::Executable &Exe,
                             const std::string &OutPath,
                             const AotOptions &Opts = {});

} // namespace vmjit::jit

#endif // VMJIT_JIT_AOT_H
