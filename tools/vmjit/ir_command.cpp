//===- ir_command.cpp - vmjit ir ------------------------------------------===//
//
// vmjit ir PROG [ARG...] [--func NAME] [--opt] [--lib L]... [--kernels BC]:
// print the LLVM IR the JIT makes for a bytecode function (after the
// optimization pipeline with --opt). Packed functions are resolved as
// `run` would, because how a call is lowered depends on what it calls; with
// --kernels, the kernel tier's compiled kernels (compiled first) are what
// the calls go to, as under `vmjit run --wait-kernels`. With arguments,
// the function is called once with them on the interpreter first, and the
// IR speculates on the kinds of value that call saw (docs/jit.md).
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "run_args.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/kernel_tier.h"
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
  std::string Kernels;
  std::vector<std::string> Args;
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
    std::shared_ptr<jit::KernelTier> Tier;
    if (!O.Kernels.empty()) {
      if (VO.Libraries.empty())
        throwError("UsageError", fmt::format("--kernels {}: no kernel library "
                                             "to check it against (give the "
                                             "model's with --lib)",
                                             O.Kernels));
      jit::KernelTierOptions KO;
      KO.Background = false;
      Tier = jit::KernelTier::start(O.Kernels, VO.Libraries.front(), KO);
      if (jit::KernelTierStatus St = Tier->status();
          St.State == jit::KernelTierState::Failed)
        fmt::print(stderr, "vmjit: warning: {}\n", St.Warning);
      VO.Libraries.insert(VO.Libraries.begin(), Tier->library());
    }
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
    JO.BaselineThreshold = INT64_MAX;
    jit::enableJIT(*VM, JO);
    if (!O.Args.empty()) {
      // One call on the interpreter, for its type feedback.
      std::vector<Any> Args;
      for (size_t I = 0; I < O.Args.size(); ++I)
        Args.push_back(parseRunArgument(O.Args[I], I + 1));
      std::vector<AnyView> Views(Args.begin(), Args.end());
      VM->invoke(F, Views);
    }
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
  Cmd->add_option("ARG", O->Args,
                  "arguments (as for vmjit run): the function is called once "
                  "with them on the interpreter first, and tier 2 "
                  "speculates on the kinds of value that call saw");
  Cmd->add_option("--func", O->Func, "the function (default: main)");
  Cmd->add_flag("--opt", O->Optimized, "after the optimization pipeline");
  Cmd->add_option("--opt-level", O->OptLevel, "optimization level, 0-3")
      ->check(CLI::Range(0, 3));
  Cmd->add_option("--lib", O->Libs, "load a kernel library (repeatable)");
  Cmd->add_option("--kernels", O->Kernels,
                  "LLVM bitcode of the kernels (TVM's model.bc): compile them "
                  "first and lower the calls to them as `vmjit run "
                  "--wait-kernels` does");
  Cmd->callback([&Run, O] { Run = [O] { return runIr(*O); }; });
}

} // namespace vmjit::tool
