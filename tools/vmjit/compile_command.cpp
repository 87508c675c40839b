//===- compile_command.cpp - vmjit compile --------------------------------===//
//
// vmjit compile PROG -o OUT.so [--opt-level N] [--linker PATH] [--lib L]
// [--kernels BC] [--no-kernels] [--cache-dir DIR] [--no-cache] [--verbose]:
// tier-2 native code of every bytecode function plus the executable in one
// shared library, which `vmjit run OUT.so` runs with no compile and no LLVM
// (jit/aot.h); with the kernels' bitcode (given, or the STEM.bc beside PROG
// as `vmjit run` finds it), TVM's kernels compiled for this CPU too (kept
// in the object cache, as the kernel tier's). Exits 0, or 2 for
// bad usage, an input that cannot be read, parsed or verified, or an
// output that cannot be written; 1 when compiling or linking fails.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/program.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/aot.h"
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/kernel_tier.h"
#endif

#include <filesystem>
#include <fmt/format.h>

namespace vmjit::tool {
namespace {

struct CompileOptions {
  std::string Program;
  std::string Output;
  int OptLevel = -1;
  std::string Linker;
  std::vector<std::string> Libs;
  std::string Kernels; // --kernels: the kernels' bitcode
  bool NoKernels = false;
  std::string CacheDir; // --cache-dir: the kernels' object cache
  bool NoCache = false;
  bool Verbose = false;
};

#ifdef VMJIT_HAVE_JIT
/// The kernels' bitcode to compile into the output, as `vmjit run` takes
/// it: --kernels, else the STEM.bc beside the program, checked against
/// the first kernel library (the model library, else the first --lib);
/// "" for none (with a warning when there is no library to check it
/// against).
std::string kernelBitcode(const CompileOptions &O,
                          const std::vector<std::string> &Libs,
                          jit::AotOptions &AO) {
  if (O.NoKernels)
    return "";
  if (!O.Kernels.empty()) {
    std::error_code EC;
    if (!std::filesystem::is_regular_file(O.Kernels, EC))
      throwError("UsageError",
                 fmt::format("--kernels {}: no such file", O.Kernels));
  }
  std::string Bitcode = O.Kernels;
  if (Bitcode.empty() && !Libs.empty() && !vm::isStreamPath(O.Program))
    Bitcode = jit::kernelBitcodeBeside(O.Program);
  if (Bitcode.empty())
    return "";
  if (Libs.empty()) {
    fmt::print(stderr,
               "vmjit: warning: --kernels {}: no kernel library to check it "
               "against (give the model's with --lib); not used\n",
               Bitcode);
    return "";
  }
  AO.KernelFunctions = KernelLibrary::load(Libs.front())->functionNames();
  return Bitcode;
}

/// What -v says of the kernels compiled into the output.
void reportKernels(const CompileOptions &O, const jit::AotResult &R,
                   const std::string &Bitcode) {
  if (!R.KernelWarning.empty())
    fmt::print(stderr, "vmjit: warning: {}\n", R.KernelWarning);
  if (!O.Verbose || R.Kernels.empty())
    return;
  fmt::print(stderr,
             "vmjit: {} holds {} kernels of {} compiled for this CPU ({}) "
             "in {:.1f} ms{}{}\n",
             O.Output, R.Kernels.size(), Bitcode, R.KernelCPU,
             R.KernelCompileMs,
             R.KernelCacheHit ? " (from the object cache)" : "",
             R.KernelTransposes
                 ? fmt::format("; {} transposes blocked", R.KernelTransposes)
                 : "");
  fmt::print(stderr, "vmjit: {} needs the CPU features {}\n", O.Output,
             R.KernelFeatures);
}
#endif

int runCompile(const CompileOptions &O) {
#ifndef VMJIT_HAVE_JIT
  (void)O;
  return reportError(Error("UsageError",
                           "vmjit compile needs the JIT (LLVM), which is not "
                           "available in this build; a library it wrote runs "
                           "here with vmjit run"));
#else
  try {
    vm::OpenedProgram Prog = vm::openProgram(O.Program);
    jit::AotOptions AO;
    if (O.OptLevel >= 0)
      AO.OptLevel = O.OptLevel;
    AO.Linker = O.Linker;
    // The kernels the output runs with, recorded in it: those named here,
    // else the program's own (a model library, the STEM.so beside it, or
    // what a vmjit compile library recorded).
    if (!O.Libs.empty()) {
      AO.KernelLibraries = O.Libs;
    } else {
      for (const auto &Lib : Prog.Libraries)
        if (!Prog.Aot || Lib != Prog.Aot->library()) // not its own kernels
          AO.KernelLibraries.push_back(Lib->path());
    }
    for (const std::string &L : AO.KernelLibraries)
      KernelLibrary::load(L); // a library that does not load is refused now
    AO.KernelBitcode = kernelBitcode(O, AO.KernelLibraries, AO);
    if (!O.NoCache)
      AO.CacheDir = jit::cacheDirFor(O.CacheDir);
    jit::AotResult R = jit::compileAheadOfTime(*Prog.Exe, O.Output, AO);
    reportKernels(O, R, AO.KernelBitcode);
    if (O.Verbose) {
      fmt::print(stderr,
                 "vmjit: wrote {}: {} functions, {} bytes of object code; "
                 "compiled in {:.1f} ms, linked by {} in {:.1f} ms\n",
                 O.Output, R.Functions, R.ObjectBytes, R.CompileMs, R.Linker,
                 R.LinkMs);
      for (const std::string &L : AO.KernelLibraries)
        fmt::print(stderr, "vmjit: {} runs with the kernels of {}\n", O.Output,
                   L);
    }
    return kExitOk;
  } catch (const Error &E) {
    return reportError(E);
  }
#endif
}

} // namespace

void addCompileCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand(
      "compile", "ahead of time: native code of every function plus the "
                 "executable in one shared library that `vmjit run OUT.so` "
                 "runs with no compile and no LLVM");
  auto O = std::make_shared<CompileOptions>();
  Cmd->add_option("PROG", O->Program,
                  "the program, any format vmjit reads (by content; - reads "
                  "standard input)")
      ->required();
  Cmd->add_option("-o,--output", O->Output, "the library to write (OUT.so)")
      ->required();
  Cmd->add_option("--opt-level", O->OptLevel,
                  "LLVM optimization level, 0-3 (default: 1, as the JIT)")
      ->check(CLI::Range(0, 3));
  Cmd->add_option("--linker", O->Linker,
                  "the linker to run (default: $VMJIT_LINKER, else ld.lld-19, "
                  "ld.lld or ld on PATH)");
  Cmd->add_option("--lib", O->Libs,
                  "a kernel library the output runs with, recorded in it "
                  "(relative to it where possible; repeatable; default: the "
                  "program's own, e.g. model.so, or the STEM.so beside it)");
  Cmd->add_option("--kernels", O->Kernels,
                  "LLVM bitcode of the kernels (TVM's model.bc), compiled "
                  "for this CPU into the output, whose kernels then run "
                  "instead of the kernel library's machine code (default: "
                  "STEM.bc beside the program, if there is one); the output "
                  "refuses a CPU without this one's features");
  Cmd->add_flag("--no-kernels", O->NoKernels,
                "compile no kernels into the output: it runs the kernel "
                "library's own machine code");
  Cmd->add_option("--cache-dir", O->CacheDir,
                  "object cache of the compiled kernels, shared with `vmjit "
                  "run` (also VMJIT_CACHE_DIR; default: $XDG_CACHE_HOME/vmjit "
                  "or ~/.cache/vmjit)");
  Cmd->add_flag("--no-cache", O->NoCache,
                "compile the kernels even if the object cache holds them, "
                "and store nothing");
  Cmd->add_flag("-v,--verbose", O->Verbose,
                "say what was written and how long it took");
  Cmd->callback([&Run, O] { Run = [O] { return runCompile(*O); }; });
}

} // namespace vmjit::tool
