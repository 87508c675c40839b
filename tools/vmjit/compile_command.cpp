//===- compile_command.cpp - vmjit compile ---------------------------------===//
//
// vmjit compile PROG -o OUT.so [--opt-level N] [--linker PATH] [--verbose]:
// tier-2 native code of every bytecode function plus the executable in one
// shared library, which `vmjit run OUT.so` runs with no compile and no
// LLVM (jit/aot.h). Exits 0, or 2 for bad usage, an input that cannot be
// read, parsed or verified, or an output that cannot be written; 1 when
// compiling or linking fails.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/program.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/aot.h"
#endif

#include <fmt/format.h>

namespace vmjit::tool {
namespace {

struct CompileOptions {
  std::string Program;
  std::string Output;
  int OptLevel = -1;
  std::string Linker;
  std::vector<std::string> Libs;
  bool Verbose = false;
};

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
        AO.KernelLibraries.push_back(Lib->path());
    }
    for (const std::string &L : AO.KernelLibraries)
      KernelLibrary::load(L); // a library that does not load is refused now
    jit::AotResult R = jit::compileAheadOfTime(*Prog.Exe, O.Output, AO);
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
  Cmd->add_flag("-v,--verbose", O->Verbose,
                "say what was written and how long it took");
  Cmd->callback([&Run, O] { Run = [O] { return runCompile(*O); }; });
}

} // namespace vmjit::tool
