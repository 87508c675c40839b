//===- SpeculativeVM.h - VMs for the speculation tests ----------*- C++ -*-===//
//
// What the tests of tier 2's speculation share (SpeculationTest,
// TensorFeedbackTest): a VM whose tier-2 compiles run when requested
// (deterministic), its per-function JIT stats, and a fixture that needs
// tier 1 (deoptimization goes there) and runs without deopt stress from
// the environment.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_SPECULATIVEVM_H
#define VMJIT_UNITTESTS_JIT_SPECULATIVEVM_H

#include "vmjit/jit/tier_manager.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <string_view>

namespace vmjit::jittest {

/// How a speculative VM runs (speculativeVM).
struct SpeculativeOptions {
  int64_t Threshold = 0;         ///< calls or jumps before tier 2
  int64_t BaselineThreshold = 2; ///< calls or jumps before tier 1
  bool Stress = false;           ///< JITOptions::DeoptStress
  std::string CacheDir;          ///< JITOptions::CacheDir, if set
};

/// A VM of `Exe` in `Mode` (Bytecode: no JIT) whose tier-2 compiles run
/// at the request: the interpreter runs BaselineThreshold calls or jumps,
/// tier 1 the rest up to Threshold.
inline std::unique_ptr<vm::VirtualMachine>
speculativeVM(std::shared_ptr<vm::Executable> Exe, vm::ExecMode Mode,
              const SpeculativeOptions &S) {
  auto VM = vm::VirtualMachine::create(std::move(Exe));
  if (Mode == vm::ExecMode::Bytecode)
    return VM;
  jit::JITOptions O;
  O.Mode = Mode;
  O.Threshold = S.Threshold;
  O.BaselineThreshold = S.BaselineThreshold;
  O.Background = false;
  O.DeoptStress = S.Stress;
  if (!S.CacheDir.empty())
    O.CacheDir = S.CacheDir;
  jit::enableJIT(*VM, O);
  return VM;
}

/// The JIT's stats of function `F` of VM.
inline jit::FunctionJITStats statsOf(vm::VirtualMachine &VM,
                                     std::string_view F) {
  return jit::tierManagerOf(VM)->stats(VM.functionIndex(F));
}

/// Skips without tier 1, absent on some targets (tier 2 deoptimizes to
/// it), and clears VMJIT_DEOPT_STRESS: these tests count deoptimizations
/// and speculate as the feedback says.
class SpeculativeTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!jit::baselineAvailable())
      GTEST_SKIP() << "tier 2 deoptimizes to tier 1, absent on this target";
    ::unsetenv("VMJIT_DEOPT_STRESS");
  }
};

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_SPECULATIVEVM_H
