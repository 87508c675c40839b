// Tests direct calls between tier-2 functions (docs/jit.md#direct-calls):
// results, call counts and errors as on the interpreter, and calls in
// flight when the pool changes under them (the JIT detached, an
// instrument set) (Inputs/direct_calls.vmasm).
#include "CallErrors.h"
#include "TestInputs.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/registry.h"
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

/// What directtest.hook does when the program calls it.
std::function<void()> Hook;

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe = [] {
    jittest::registerHook("directtest.hook", Hook);
    return jittest::assembleInput("direct_calls.vmasm");
  }();
  return Exe;
}

/// Every test runs with direct entries that hold a copy of the callee's
/// code (the default) and with entries that call it (DirectBodyLimit 0).
int64_t BodyLimit = -1;

class DirectCallTest : public ::testing::TestWithParam<int64_t> {
protected:
  void SetUp() override { BodyLimit = GetParam(); }
};

std::unique_ptr<VirtualMachine> makeVM(ExecMode Mode, bool Stress = false) {
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = Mode;
  O.Threshold = 1; // tiered: tier 2 from the first call on
  O.Background = false;
  O.DeoptStress = Stress;
  O.DirectBodyLimit = BodyLimit;
  enableJIT(*VM, O);
  return VM;
}

std::unique_ptr<VirtualMachine> compiledVM() {
  return makeVM(ExecMode::Compiled);
}

struct ResetHook {
  ~ResetHook() { Hook = nullptr; }
};

TEST_P(DirectCallTest, CountsAndErrorsAreTheInterpreters) {
  ResetHook Reset;
  auto Ref = VirtualMachine::create(program());
  EXPECT_EQ(Ref->call("down", 100, -1).cast<int64_t>(), 5050);
  const uint64_t RefSteps = Ref->stepsTaken();
  // Direct calls in compiled and tiered mode; every mode agrees.
  for (ExecMode M : kAllExecModes) {
    if (M == ExecMode::Baseline && !baselineAvailable())
      continue;
    auto VM = makeVM(M);
    const int64_t Down = VM->functionIndex("down");
    for (int Call = 1; Call <= 2; ++Call) { // tiered: tier 2 from the second
      EXPECT_EQ(VM->call("down", 100, -1).cast<int64_t>(), 5050);
      EXPECT_EQ(VM->callCount(Down), Call * Ref->callCount(Down))
          << execModeName(M);
      EXPECT_EQ(VM->stepsTaken(), RefSteps) << execModeName(M);
    }
    // The error of the innermost frame, with every direct frame's line.
    EXPECT_EQ(errorOf(*VM, "fail", 30), errorOf(*Ref, "fail", 30))
        << execModeName(M);
    EXPECT_EQ(VM->call("down", 10, -1).cast<int64_t>(), 55);
  }
}

TEST_P(DirectCallTest, DetachingTheJitMidCallSendsLaterCallsToThePool) {
  ResetHook Reset;
  auto VM = compiledVM();
  const int64_t Down = VM->functionIndex("down");
  // At depth 50 of 100 the JIT goes: the pool holds interpreter entries,
  // and the 50 inner calls are interpreted while the outer frames, in
  // tier-2 code, finish there.
  Hook = [&] { VM->setTierController(nullptr); };
  EXPECT_EQ(VM->call("down", 100, 50).cast<int64_t>(), 5050);
  EXPECT_FALSE(VM->isNative(Down));
  EXPECT_EQ(VM->callCount(Down), 101u);
  EXPECT_EQ(VM->interpretedCalls(Down), 101u);
  Hook = nullptr;
  EXPECT_EQ(VM->call("down", 10, -1).cast<int64_t>(), 55);
}

TEST_P(DirectCallTest, AnInstrumentSetMidCallSeesTheLaterCalls) {
  ResetHook Reset;
  auto VM = compiledVM();
  std::vector<int64_t> Seen;
  Hook = [&] {
    VM->setInstrument([&](const CallEvent &E) {
      if (E.Before && E.CalleeName == "down")
        Seen.push_back(E.Args[0].cast<int64_t>());
      return InstrumentAction::Continue;
    });
  };
  EXPECT_EQ(VM->call("down", 8, 5).cast<int64_t>(), 36);
  // The hook ran in down(5), in tier-2 code. Its call of down(4) takes the
  // pool entry (not the direct entry), which hands it to the interpreter,
  // as for any call native code makes while an instrument is on; the
  // instrument sees the calls the interpreter makes: down(3) .. down(0).
  EXPECT_EQ(Seen, (std::vector<int64_t>{3, 2, 1, 0}));
  VM->setInstrument(nullptr);
}

TEST_P(DirectCallTest, CallsBetweenUnitsAreTheInterpreters) {
  // Tiered mode: even and odd in units of their own, each calling the
  // other's direct entry through its cell; compiled mode: one unit.
  auto Ref = VirtualMachine::create(program());
  EXPECT_EQ(Ref->call("even", 100, -1).cast<int64_t>(), 1);
  const uint64_t RefSteps = Ref->stepsTaken();
  const uint64_t RefOdd = Ref->callCount(Ref->functionIndex("odd"));
  const int64_t Depth = Ref->maxCallDepth();
  Ref->setMaxCallDepth(40);
  const std::string RefDepth = errorOf(*Ref, "even", 60, -1);
  EXPECT_NE(RefDepth.find("RecursionError"), std::string::npos);
  Ref->setMaxCallDepth(Depth);
  const std::string RefError = errorOf(*Ref, "even", 31, -1);
  EXPECT_NE(RefError.find("division by zero"), std::string::npos) << RefError;
  for (ExecMode M : kAllExecModes) {
    if (M == ExecMode::Baseline && !baselineAvailable())
      continue;
    for (bool Stress : {false, true}) {
      auto VM = makeVM(M, Stress);
      const int64_t Odd = VM->functionIndex("odd");
      for (int Call = 1; Call <= 3; ++Call) {
        EXPECT_EQ(VM->call("even", 100, -1).cast<int64_t>(), 1);
        EXPECT_EQ(VM->callCount(Odd), Call * RefOdd) << execModeName(M);
        EXPECT_EQ(VM->stepsTaken(), RefSteps) << execModeName(M);
      }
      // The error of the innermost frame with every frame's line; the
      // depth limit, where a direct entry refuses and the pool raises.
      EXPECT_EQ(errorOf(*VM, "even", 31, -1), RefError) << execModeName(M);
      VM->setMaxCallDepth(40);
      EXPECT_EQ(errorOf(*VM, "even", 60, -1), RefDepth) << execModeName(M);
    }
  }
}

TEST_P(DirectCallTest, DetachingTheJitMidCallBetweenUnits) {
  ResetHook Reset;
  auto VM = makeVM(ExecMode::Tiered);
  const int64_t Even = VM->functionIndex("even");
  for (int Call = 0; Call < 3; ++Call) // both in tier 2
    EXPECT_EQ(VM->call("even", 10, -1).cast<int64_t>(), 1);
  ASSERT_TRUE(VM->isNative(Even));
  // At depth 50 of 100 the JIT goes; the inner calls are interpreted.
  Hook = [&] { VM->setTierController(nullptr); };
  EXPECT_EQ(VM->call("even", 100, 50).cast<int64_t>(), 1);
  EXPECT_FALSE(VM->isNative(Even));
  Hook = nullptr;
  EXPECT_EQ(VM->call("even", 10, -1).cast<int64_t>(), 1);
}

INSTANTIATE_TEST_SUITE_P(Entries, DirectCallTest, ::testing::Values(-1, 0),
                         [](const ::testing::TestParamInfo<int64_t> &I) {
                           return I.param < 0 ? "WithCode" : "CallingCode";
                         });

} // namespace
