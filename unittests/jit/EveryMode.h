//===- EveryMode.h - The modes an execution test runs in --------*- C++ -*-===//
//
// Every execution test runs in every mode and they must agree: the
// interpreter, each JIT tier alone, tiered with threshold 1 (tier 2 from
// the second call, compiled on the calling thread) and compiled mode under
// deopt stress. These are those modes, and a VM in one of them.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_EVERYMODE_H
#define VMJIT_UNITTESTS_JIT_EVERYMODE_H

#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/virtual_machine.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::jittest {

/// A mode of execution tests.
struct TestMode {
  vm::ExecMode Mode;
  /// Tier 2 speculating wrongly on purpose (deopts everywhere).
  bool DeoptStress = false;
};

/// Bytecode, baseline (where the build has it), compiled, tiered, and
/// compiled under deopt stress.
inline std::vector<TestMode> everyMode() {
  std::vector<TestMode> Out;
  for (vm::ExecMode M : vm::kAllExecModes)
    if (M != vm::ExecMode::Baseline || jit::baselineAvailable())
      Out.push_back({M, false});
  Out.push_back({vm::ExecMode::Compiled, true});
  return Out;
}

/// "compiled (deopt stress)", for messages.
inline std::string modeName(const TestMode &M) {
  return std::string(vm::execModeName(M.Mode)) +
         (M.DeoptStress ? " (deopt stress)" : "");
}

/// A VM of `Exe` in mode `M` (tiered: threshold 1, no background thread)
/// whose kernels come from `Libs` first (vm::VMOptions::Libraries);
/// `OptLevel` >= 0 sets tier 2's LLVM level; `Tune`, if given, changes the
/// JIT's other options last.
inline std::unique_ptr<vm::VirtualMachine>
vmWith(std::shared_ptr<vm::Executable> Exe,
       std::vector<std::shared_ptr<KernelLibrary>> Libs, const TestMode &M,
       int OptLevel = -1,
       const std::function<void(jit::JITOptions &)> &Tune = {}) {
  vm::VMOptions Opts;
  Opts.Libraries = std::move(Libs);
  auto VM = vm::VirtualMachine::create(std::move(Exe), std::move(Opts));
  if (M.Mode == vm::ExecMode::Bytecode)
    return VM;
  jit::JITOptions O;
  O.Mode = M.Mode;
  O.Threshold = 1;
  O.Background = false;
  O.DeoptStress = M.DeoptStress;
  if (OptLevel >= 0)
    O.OptLevel = OptLevel;
  if (Tune)
    Tune(O);
  jit::enableJIT(*VM, O);
  return VM;
}

/// A VM of `Exe` in mode `M`, as vmWith, with no kernel library.
inline std::unique_ptr<vm::VirtualMachine>
vmInMode(std::shared_ptr<vm::Executable> Exe, const TestMode &M,
         int OptLevel = -1) {
  return vmWith(std::move(Exe), {}, M, OptLevel);
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_EVERYMODE_H
