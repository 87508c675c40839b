// Tests tier 2's direct calls of closures (docs/jit.md#closure-calls):
// invoke_closure of a closure the function makes itself calls the target
// directly when the closure is the one made, and invoke_closure as written
// otherwise (the pool swapped, the depth limit, too few captured values);
// results, steps, call counts and errors agree with the interpreter in
// every mode and under deopt stress (Inputs/closure_calls.vmasm).
#include "CallErrors.h"
#include "TestInputs.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/string.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <functional>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using vmjit::jittest::errorOf;

namespace {

/// What closuretest.hook does when the program calls it.
std::function<void()> Hook;

struct ResetHook {
  ~ResetHook() { Hook = nullptr; }
};

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe = [] {
    jittest::registerHook("closuretest.hook", Hook);
    return jittest::assembleInput("closure_calls.vmasm");
  }();
  return Exe;
}

/// A mode, and whether tier 2 speculates from wrong feedback.
struct Setting {
  ExecMode Mode;
  bool Stress;
};

std::string name(const ::testing::TestParamInfo<Setting> &I) {
  return std::string(execModeName(I.param.Mode)) +
         (I.param.Stress ? "Stress" : "");
}

class ClosureCallTest : public ::testing::TestWithParam<Setting> {
protected:
  void SetUp() override {
    if (GetParam().Mode == ExecMode::Baseline && !baselineAvailable())
      GTEST_SKIP() << "no baseline tier on this target";
  }
  std::unique_ptr<VirtualMachine> makeVM() {
    auto VM = VirtualMachine::create(program());
    if (GetParam().Mode != ExecMode::Bytecode) {
      JITOptions O;
      O.Mode = GetParam().Mode;
      O.Threshold = 1; // tiered: tier 2 from the first call on
      O.Background = false;
      O.DeoptStress = GetParam().Stress;
      enableJIT(*VM, O);
    }
    return VM;
  }
};

TEST_P(ClosureCallTest, ResultsStepsAndCountsAreTheInterpreters) {
  auto Ref = VirtualMachine::create(program());
  auto VM = makeVM();
  const int64_t Affine = VM->functionIndex("affine");
  const int64_t Pick = VM->functionIndex("pick");
  for (int Call = 0; Call < 3; ++Call) {
    // 3 i + 1 summed over i < 100; then floats captured.
    EXPECT_EQ(VM->call("loop", 100, 3, 1, -1).cast<int64_t>(), 14950);
    EXPECT_EQ(VM->call("loop", 4, 0.5, 0.25, -1).cast<double>(), 4.0);
    // A tuple captured and lent to every call.
    EXPECT_EQ(VM->call("picks", 10).cast<int64_t>(), 60);
  }
  for (int Call = 0; Call < 3; ++Call) {
    Ref->call("loop", 100, 3, 1, -1);
    Ref->call("loop", 4, 0.5, 0.25, -1);
    Ref->call("picks", 10);
  }
  EXPECT_EQ(VM->stepsTaken(), Ref->stepsTaken());
  EXPECT_EQ(VM->callCount(Affine), Ref->callCount(Affine));
  EXPECT_EQ(VM->callCount(Pick), Ref->callCount(Pick));
}

TEST_P(ClosureCallTest, ErrorsAreTheInterpreters) {
  auto Ref = VirtualMachine::create(program());
  auto VM = makeVM();
  for (int Call = 0; Call < 2; ++Call) {
    // Raised in the target, called directly: its frame, then the loop's.
    EXPECT_EQ(errorOf(*VM, "loop", 5, String("x"), 1, -1),
              errorOf(*Ref, "loop", 5, String("x"), 1, -1));
    // One captured value short: invoke_closure's arity error.
    EXPECT_EQ(errorOf(*VM, "short", 3), errorOf(*Ref, "short", 3));
    EXPECT_NE(errorOf(*Ref, "short", 3), "no error");
    EXPECT_EQ(VM->call("loop", 10, 2, 0, -1).cast<int64_t>(), 90);
  }
}

TEST_P(ClosureCallTest, APoolSwappedMidLoopTakesInvokeClosure) {
  ResetHook Reset;
  auto VM = makeVM();
  const int64_t Affine = VM->functionIndex("affine");
  // At i == 50 the JIT goes: the pool holds interpreter entries, the
  // closure still the target it was made with; the loop, in tier-2 code,
  // finishes with the closure called through invoke_closure.
  Hook = [&] { VM->setTierController(nullptr); };
  EXPECT_EQ(VM->call("loop", 100, 3, 1, 50).cast<int64_t>(), 14950);
  EXPECT_EQ(VM->callCount(Affine), 100u);
  Hook = nullptr;
  EXPECT_EQ(VM->call("loop", 10, 3, 1, -1).cast<int64_t>(), 145);
}

TEST_P(ClosureCallTest, ARefusedDirectCallTakesInvokeClosure) {
  // At the depth limit the target's direct entry refuses, and
  // invoke_closure raises the interpreter's RecursionError with its frames.
  auto Ref = VirtualMachine::create(program());
  auto VM = makeVM();
  Ref->setMaxCallDepth(40);
  VM->setMaxCallDepth(40);
  EXPECT_EQ(VM->call("down", 30).cast<int64_t>(), 30);
  const std::string E = errorOf(*VM, "down", 50);
  EXPECT_NE(E.find("RecursionError: maximum call depth of 40 exceeded"),
            std::string::npos)
      << E.substr(0, 200);
  EXPECT_EQ(E, errorOf(*Ref, "down", 50));
  EXPECT_EQ(VM->call("down", 30).cast<int64_t>(), 30);
}

INSTANTIATE_TEST_SUITE_P(AllModes, ClosureCallTest,
                         ::testing::Values(Setting{ExecMode::Bytecode, false},
                                           Setting{ExecMode::Baseline, false},
                                           Setting{ExecMode::Compiled, false},
                                           Setting{ExecMode::Tiered, false},
                                           Setting{ExecMode::Compiled, true}),
                         name);

} // namespace
