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
#include "vmjit/vm/virtual_machine.h"

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

/// A VM of `Exe` in mode `M` (tiered: threshold 1, no background thread);
/// `OptLevel` >= 0 sets tier 2's LLVM level.
inline std::unique_ptr<vm::VirtualMachine>
vmInMode(std::shared_ptr<vm::Executable> Exe, const TestMode &M,
         int OptLevel = -1) {
  auto VM = vm::VirtualMachine::create(std::move(Exe));
  if (M.Mode == vm::ExecMode::Bytecode)
    return VM;
  jit::JITOptions O;
  O.Mode = M.Mode;
  O.Threshold = 1;
  O.Background = false;
  O.DeoptStress = M.DeoptStress;
  if (OptLevel >= 0)
    O.OptLevel = OptLevel;
  jit::enableJIT(*VM, O);
  return VM;
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_EVERYMODE_H
