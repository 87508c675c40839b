// Tests calls that re-enter the VM, in every mode: invoke_closure of a
// bytecode function and a packed function that calls the VM back, nested
// past the frame vector's first reservation (64) and up to the call-depth
// limit, where they raise the interpreter's RecursionError (never a crash:
// the ASan build runs these too). Also: an instrument set in the middle of
// a call applies to the frames entered after it, in every tier
// (Inputs/reentry.vmasm, Inputs/instrument_mid_call.vmasm).
#include "CallErrors.h"
#include "TestInputs.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using vmjit::jittest::errorOf;

namespace {

/// The VM reentrytest.back calls back into (the one the test runs).
VirtualMachine *BackVM = nullptr;

std::shared_ptr<Executable> reentryProgram() {
  static std::shared_ptr<Executable> Exe = [] {
    Registry::global().addTyped(
        "reentrytest.back",
        [](int64_t N) { return BackVM->call("back", N).cast<int64_t>(); },
        /*AllowOverride=*/true);
    return jittest::assembleInput("reentry.vmasm");
  }();
  return Exe;
}

/// chain0(n) .. chain<Len>(n): each calls the next through invoke_closure;
/// the last returns n.
std::shared_ptr<Executable> chainProgram(int Len) {
  std::string Text;
  for (int I = 0; I < Len; ++I)
    Text += fmt::format(".func chain{}(n)\n  %r = call vm.builtin."
                        "invoke_closure(%vm, @chain{}, %n)\n  ret %r\n"
                        ".end\n",
                        I, I + 1);
  Text += fmt::format(".func chain{}(n)\n  ret %n\n.end\n", Len);
  registerVMBuiltins();
  return assemble(Text, "chain.vmasm");
}

/// The modes of every execution test: each tier alone, tiered with
/// threshold 1, and compiled under deopt stress.
struct Mode {
  ExecMode M;
  bool Stress;
};
std::vector<Mode> allModes() {
  std::vector<Mode> Out;
  for (ExecMode M : kAllExecModes) {
    if (M == ExecMode::Baseline && !baselineAvailable())
      continue;
    Out.push_back({M, false});
  }
  Out.push_back({ExecMode::Compiled, true});
  return Out;
}
std::string nameOf(const Mode &M) {
  return std::string(execModeName(M.M)) + (M.Stress ? " (deopt stress)" : "");
}

std::unique_ptr<VirtualMachine> makeVM(std::shared_ptr<Executable> Exe,
                                       const Mode &M, int OptLevel = -1) {
  auto VM = VirtualMachine::create(std::move(Exe));
  if (M.M != ExecMode::Bytecode) {
    JITOptions O;
    O.Mode = M.M;
    O.Threshold = 1;
    O.Background = false;
    O.DeoptStress = M.Stress;
    if (OptLevel >= 0)
      O.OptLevel = OptLevel;
    enableJIT(*VM, O);
  }
  return VM;
}

/// What `VM.call(F, N)` gives: its int result, or its error formatted.
std::string outcome(VirtualMachine &VM, const char *F, int64_t N) {
  try {
    return std::to_string(VM.call(F, N).cast<int64_t>());
  } catch (const Error &E) {
    return E.format();
  }
}

/// The depths of the tests: around the frame vector's first reservation,
/// well past it, and past the call-depth limit (its RecursionError).
const int64_t kDepths[] = {63, 64, 65, 200, 1000, 5000};

TEST(ReentryTest, InvokeClosureOfItselfInEveryMode) {
  auto Ref = VirtualMachine::create(reentryProgram());
  for (int64_t N : kDepths) {
    const std::string Want = outcome(*Ref, "f", N);
    if (N < Ref->maxCallDepth())
      EXPECT_EQ(Want, std::to_string(N));
    else
      EXPECT_NE(Want.find("RecursionError"), std::string::npos) << Want;
    for (const Mode &M : allModes()) {
      auto VM = makeVM(reentryProgram(), M);
      for (int Call = 0; Call < 2; ++Call) // tiered: tier 2 the second time
        EXPECT_EQ(outcome(*VM, "f", N), Want) << nameOf(M) << " depth " << N;
    }
  }
}

TEST(ReentryTest, APackedFunctionCallingTheVMBackInEveryMode) {
  auto Ref = VirtualMachine::create(reentryProgram());
  BackVM = Ref.get();
  for (int64_t N : kDepths) {
    BackVM = Ref.get();
    const std::string Want = outcome(*Ref, "back", N);
    if (N < Ref->maxCallDepth())
      EXPECT_EQ(Want, std::to_string(N));
    else
      EXPECT_NE(Want.find("RecursionError"), std::string::npos) << Want;
    for (const Mode &M : allModes()) {
      auto VM = makeVM(reentryProgram(), M);
      BackVM = VM.get();
      for (int Call = 0; Call < 2; ++Call)
        EXPECT_EQ(outcome(*VM, "back", N), Want) << nameOf(M) << " depth " << N;
    }
  }
  BackVM = nullptr;
}

TEST(ReentryTest, AChainOfFunctionsThroughInvokeClosureInEveryMode) {
  // Past the first reservation, then past a depth limit the chain of 200
  // exceeds (its RecursionError; a chain as long as the default limit
  // would take compiled mode a minute to compile).
  for (int Len : {65, 200}) {
    auto Exe = chainProgram(Len);
    std::vector<std::unique_ptr<VirtualMachine>> VMs;
    for (const Mode &M : allModes()) // (O0: 200 functions compile quickly)
      VMs.push_back(makeVM(Exe, M, /*OptLevel=*/0));
    auto Ref = VirtualMachine::create(Exe);
    for (int64_t Limit : {int64_t(4096), int64_t(150)}) {
      Ref->setMaxCallDepth(Limit);
      const std::string Want = outcome(*Ref, "chain0", 7);
      if (Len < Limit)
        EXPECT_EQ(Want, "7");
      else
        EXPECT_NE(Want.find("RecursionError"), std::string::npos) << Want;
      for (size_t K = 0; K < VMs.size(); ++K) {
        VMs[K]->setMaxCallDepth(Limit);
        for (int Call = 0; Call < 2; ++Call)
          EXPECT_EQ(outcome(*VMs[K], "chain0", 7), Want)
              << nameOf(allModes()[K]) << " length " << Len << " limit "
              << Limit;
      }
    }
  }
}

/// What instrtest.hook does when the program calls it.
std::function<void()> Hook;

std::shared_ptr<Executable> instrumentProgram() {
  static std::shared_ptr<Executable> Exe = [] {
    jittest::registerHook("instrtest.hook", Hook);
    return jittest::assembleInput("instrument_mid_call.vmasm");
  }();
  return Exe;
}

TEST(ReentryTest, AnInstrumentSetMidCallAppliesToLaterFramesInEveryMode) {
  for (const Mode &M : allModes()) {
    auto VM = makeVM(instrumentProgram(), M);
    for (int Call = 0; Call < 2; ++Call) {
      std::vector<std::string> Seen;
      Hook = [&] {
        VM->setInstrument([&](const CallEvent &E) {
          if (!E.Before)
            return InstrumentAction::Continue;
          Seen.emplace_back(E.CalleeName);
          return E.CalleeName == "scalar.add" ? InstrumentAction::SkipCall
                                              : InstrumentAction::Continue;
        });
      };
      // The frames of f(5) .. f(1) were running when the hook set the
      // instrument: their additions happen; g, entered after, has its
      // addition seen and skipped.
      EXPECT_EQ(outcome(*VM, "f", 5), "5") << nameOf(M);
      EXPECT_EQ(Seen, std::vector<std::string>{"scalar.add"}) << nameOf(M);
      Hook = nullptr;
      VM->setInstrument(nullptr);
    }
  }
}

} // namespace
