// Tests direct calls between tier-2 functions (docs/jit.md#direct-calls):
// results, call counts and errors as on the interpreter, and calls in
// flight when the pool changes under them (the JIT detached, an
// instrument set) (Inputs/direct_calls.vmasm).
#include "CallErrors.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/builtins.h"
#include "vmjit/vm/virtual_machine.h"

#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <sstream>
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
    registerVMBuiltins();
    Registry::global().addTyped(
        "directtest.hook",
        [](int64_t) {
          if (Hook)
            Hook();
        },
        /*AllowOverride=*/true);
    std::ifstream In(VMJIT_JIT_TEST_INPUTS "/direct_calls.vmasm");
    std::stringstream S;
    S << In.rdbuf();
    return assemble(S.str(), "direct_calls.vmasm");
  }();
  return Exe;
}

std::unique_ptr<VirtualMachine> makeVM(ExecMode Mode) {
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = Mode;
  O.Threshold = 1; // tiered: tier 2 from the first call on
  O.Background = false;
  enableJIT(*VM, O);
  return VM;
}

std::unique_ptr<VirtualMachine> compiledVM() {
  return makeVM(ExecMode::Compiled);
}

struct ResetHook {
  ~ResetHook() { Hook = nullptr; }
};

TEST(DirectCallTest, CountsAndErrorsAreTheInterpreters) {
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

TEST(DirectCallTest, DetachingTheJitMidCallSendsLaterCallsToThePool) {
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

TEST(DirectCallTest, AnInstrumentSetMidCallSeesTheLaterCalls) {
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

} // namespace
