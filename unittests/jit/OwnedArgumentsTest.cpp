// Tests owned arguments (docs/jit.md#owned-arguments): tier-2 code passes
// an object at its last use as an object rvalue reference and the callee
// takes it (no reference added or dropped), in every entry of a bytecode
// function; results, steps and errors agree in every mode, and nothing
// leaks or is released twice on an error (Inputs/owned_args.vmasm).
#include "CallErrors.h"
#include "TestInputs.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <string>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using vmjit::jittest::errorOf;

namespace {

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe = [] {
    registerVMBuiltins();
    // owntest.refs(x): the strong references of the object x (a view).
    Registry::global().addPacked(
        "owntest.refs",
        [](PackedArgs A, Any *Rv) {
          const VMJITAny &X = A[0].raw();
          *Rv = static_cast<int64_t>(X.type_index >= kVMJITStaticObjectBegin
                                         ? Object::fromRaw(X.v_obj)->useCount()
                                         : 0);
        },
        /*AllowOverride=*/true);
    return jittest::assembleInput("owned_args.vmasm");
  }();
  return Exe;
}

class OwnedArgumentsTest : public ::testing::TestWithParam<ExecMode> {
protected:
  void SetUp() override {
    if (GetParam() == ExecMode::Baseline && !baselineAvailable())
      GTEST_SKIP() << "no baseline tier on this target";
    // The reference counts below are tier 2's as the feedback makes it.
    ::unsetenv("VMJIT_DEOPT_STRESS");
  }
  std::unique_ptr<VirtualMachine> makeVM() {
    auto VM = VirtualMachine::create(program());
    if (GetParam() != ExecMode::Bytecode) {
      JITOptions O;
      O.Mode = GetParam();
      O.Threshold = 1;
      O.Background = false;
      enableJIT(*VM, O);
    }
    return VM;
  }
  /// Whether calls run tier-2 code in this mode.
  bool tier2() const {
    return GetParam() == ExecMode::Compiled || GetParam() == ExecMode::Tiered;
  }
};

/// The strong references of the object X holds.
uint32_t refsOf(const Any &X) {
  return Object::fromRaw(X.raw().v_obj)->useCount();
}

/// A tuple of two ints, owned by the caller.
Any tuple() {
  AnyView Elems[2] = {AnyView(1), AnyView(2)};
  return Any(Array(std::span<const AnyView>(Elems, 2)));
}

TEST_P(OwnedArgumentsTest, ALastUseMovesTheObjectIntoTheCallee) {
  auto VM = makeVM();
  for (int Call = 0; Call < 3; ++Call) {
    // Threshold 1: tier-2 code from the first call on.
    EXPECT_EQ(VM->call("last").cast<int64_t>(), tier2() ? 1 : 2)
        << execModeName(GetParam()) << " call " << Call;
    // Read after the call, or named twice: lent in every mode.
    EXPECT_EQ(VM->call("kept").cast<int64_t>(), 3);
    EXPECT_EQ(VM->call("twice").cast<int64_t>(), 3);
  }
}

TEST_P(OwnedArgumentsTest, ResultsAndStepsAreTheInterpreters) {
  auto Ref = VirtualMachine::create(program());
  EXPECT_EQ(Ref->call("thread", 100).cast<int64_t>(), 4950);
  const uint64_t RefSteps = Ref->stepsTaken();
  auto VM = makeVM();
  for (int Call = 1; Call <= 3; ++Call) {
    EXPECT_EQ(VM->call("thread", 100).cast<int64_t>(), 4950);
    EXPECT_EQ(VM->stepsTaken(), RefSteps);
  }
  Any X = tuple();
  EXPECT_EQ(VM->call("down", X, 50).cast<int64_t>(), 50);
  EXPECT_EQ(refsOf(X), 1u);
}

TEST_P(OwnedArgumentsTest, AFailedCallReleasesWhatTheCalleeDidNotTake) {
  auto Ref = VirtualMachine::create(program());
  Ref->setMaxCallDepth(20);
  auto VM = makeVM();
  VM->setMaxCallDepth(20);
  Any X = tuple();
  // down(x, 30) passes x on at each level until the depth limit refuses a
  // call: the caller still holds what it offered and releases it.
  for (int Call = 0; Call < 3; ++Call) {
    EXPECT_EQ(errorOf(*VM, "down", X, 30), errorOf(*Ref, "down", X, 30));
    EXPECT_EQ(refsOf(X), 1u) << execModeName(GetParam());
  }
}

TEST_P(OwnedArgumentsTest, EveryEntryTakesAnRValueReference) {
  auto VM = makeVM();
  Function Refs = VM->getFunction("refs");
  for (int Call = 0; Call < 3; ++Call) {
    Any X = tuple();
    VMJITObject *Slot = const_cast<VMJITAny &>(X.raw()).v_obj;
    // The slot now owns X's reference; X gives it up.
    const_cast<VMJITAny &>(X.raw()).type_index = kVMJITNone;
    VMJITAny Arg{};
    Arg.type_index = kVMJITObjectRValueRef;
    Arg.v_ptr = &Slot;
    Any Result;
    ASSERT_EQ(Refs.get()->safeCall(reinterpret_cast<const AnyView *>(&Arg), 1,
                                   &Result),
              0);
    // The callee's register held the only reference, released at its exit.
    EXPECT_EQ(Result.cast<int64_t>(), 1) << execModeName(GetParam());
    EXPECT_EQ(Slot, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, OwnedArgumentsTest,
                         ::testing::ValuesIn(kAllExecModes),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param));
                         });

} // namespace
