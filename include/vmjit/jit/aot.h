//===- vmjit/jit/aot.h - Ahead-of-time compilation ---------------*- C++ -*-===//
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
// by the system linker (ld.lld or ld on PATH, or $VMJIT_LINKER).
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
};

/// What compileAheadOfTime did.
struct AotResult {
  size_t Functions = 0;   ///< bytecode functions compiled
  size_t ObjectBytes = 0; ///< the object file the linker was given
  double CompileMs = 0;   ///< lowering, optimization and codegen
  double LinkMs = 0;
  std::string Linker; ///< the linker that ran
};

/// Compiles `Exe` ahead of time and writes the library to `OutPath`
/// (replaced only when everything succeeded). Throws Error: JITError when
/// LLVM or the linker fails, IOError when the output cannot be written.
AotResult compileAheadOfTime(const vm::Executable &Exe,
                             const std::string &OutPath,
                             const AotOptions &Opts = {});

} // namespace vmjit::jit

#endif // VMJIT_JIT_AOT_H
