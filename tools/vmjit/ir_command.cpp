//===- ir_command.cpp - vmjit ir -------------------------------------------===//
//
// vmjit ir PROG [--func NAME] [--opt] [--lib L]...: print the LLVM IR the
// JIT makes for a bytecode function (after the optimization pipeline with
// --opt). Packed functions are resolved as `run` would, because how a call
// is lowered depends on what it calls.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/tier_manager.h"
#endif

#include <fmt/format.h>

namespace vmjit::tool {
namespace {

struct IrOptions {
  std::string Program;
  std::string Func = "main";
  bool Optimized = false;
  int OptLevel = -1;
  std::vector<std::string> Libs;
};

int runIr(const IrOptions &O) {
#ifndef VMJIT_HAVE_JIT
  return reportError(Error("UsageError", "vmjit ir needs the JIT, which is "
                                         "not available in this build"));
#else
  try {
    vm::OpenedProgram Prog = vm::openProgram(O.Program);
    auto Exe = Prog.Exe;
    vm::VMOptions VO;
    VO.Libraries = std::move(Prog.Libraries);
    for (const std::string &L : O.Libs)
      VO.Libraries.push_back(KernelLibrary::load(L));
    auto VM = vm::VirtualMachine::create(Exe, std::move(VO));
    int64_t F = VM->functionIndex(O.Func);
    if (Exe->function(F).Kind != vm::FunctionKind::Bytecode)
      throwError("UsageError",
                 fmt::format("'{}' is a {} function: only bytecode functions "
                             "are compiled",
                             O.Func, vm::functionKindName(Exe->function(F).Kind)));
    jit::JITOptions JO;
    if (O.OptLevel >= 0)
      JO.OptLevel = O.OptLevel;
    JO.Threshold = INT64_MAX; // print only, never tier up
    jit::enableJIT(*VM, JO);
    std::string Text = jit::tierManagerOf(*VM)->irText(F, O.Optimized);
    fmt::print("{}", Text);
    return kExitOk;
  } catch (const Error &E) {
    if (E.kind() == "LookupError")
      return reportError(Error("UsageError", O.Program + ": " + E.message()));
    return reportError(E);
  }
#endif
}

} // namespace

void addIrCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand(
      "ir", "print the LLVM IR the JIT makes for a function");
  auto O = std::make_shared<IrOptions>();
  Cmd->add_option("PROG", O->Program, "the program, any format vmjit reads (by content; - reads standard input)")
      ->required();
  Cmd->add_option("--func", O->Func, "the function (default: main)");
  Cmd->add_flag("--opt", O->Optimized, "after the optimization pipeline");
  Cmd->add_option("--opt-level", O->OptLevel, "optimization level, 0-3")
      ->check(CLI::Range(0, 3));
  Cmd->add_option("--lib", O->Libs, "load a kernel library (repeatable)");
  Cmd->callback([&Run, O] { Run = [O] { return runIr(*O); }; });
}

} // namespace vmjit::tool
