// Tests calls that re-enter the VM, in every mode: invoke_closure of a
// bytecode function and a packed function that calls the VM back, nested
// past the frame vector's first reservation (64) and up to the call-depth
// limit, where they raise the interpreter's RecursionError (never a crash:
// the ASan build runs these too). Also: an instrument set in the middle of
// a call applies to the frames entered after it, in every tier
// (Inputs/reentry.vmasm, Inputs/instrument_mid_call.vmasm).
#include "EveryMode.h"
#include "TestInputs.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;

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

/// The error kind of what `outcome` gave, or "" for a result.
std::string kindIn(const std::string &Outcome) {
  const size_t Colon = Outcome.find(':');
  return Colon == std::string::npos ? "" : Outcome.substr(0, Colon);
}

/// `Func`(N) for every N of kDepths, in every mode as on the interpreter:
/// N below the depth limit; past it a RecursionError (which limit comes
/// first, MaxCallDepth or the C stack each nested run takes, depends on
/// the frames' sizes: the message may differ between modes and builds)
/// (BackVM is the VM running, for reentrytest.back).
void expectEveryModeAtEveryDepth(const char *Func) {
  auto Ref = VirtualMachine::create(reentryProgram());
  for (int64_t N : kDepths) {
    BackVM = Ref.get();
    const std::string Want = outcome(*Ref, Func, N);
    const bool Past = N >= Ref->maxCallDepth();
    if (Past) {
      EXPECT_EQ(kindIn(Want), "RecursionError") << Want;
    } else {
      EXPECT_EQ(Want, std::to_string(N));
    }
    for (const jittest::TestMode &M : jittest::everyMode()) {
      auto VM = jittest::vmInMode(reentryProgram(), M);
      BackVM = VM.get();
      for (int Call = 0; Call < 2; ++Call) { // tiered: tier 2 the second
        const std::string Got = outcome(*VM, Func, N);
        if (Past) {
          EXPECT_EQ(kindIn(Got), "RecursionError")
              << Func << " in " << jittest::modeName(M) << ": " << Got;
        } else {
          EXPECT_EQ(Got, Want)
              << Func << " in " << jittest::modeName(M) << " at depth " << N;
        }
      }
    }
  }
  BackVM = nullptr;
}

TEST(ReentryTest, InvokeClosureOfItselfInEveryMode) {
  expectEveryModeAtEveryDepth("f");
}

TEST(ReentryTest, APackedFunctionCallingTheVMBackInEveryMode) {
  expectEveryModeAtEveryDepth("back");
}

TEST(ReentryTest, AChainOfFunctionsThroughInvokeClosureInEveryMode) {
  // Past the first reservation, then past a depth limit the chain of 200
  // exceeds (its RecursionError; a chain as long as the default limit
  // would take compiled mode a minute to compile).
  for (int Len : {65, 200}) {
    auto Exe = chainProgram(Len);
    std::vector<std::unique_ptr<VirtualMachine>> VMs;
    // (Tier 2 at O0: 200 functions compile quickly.)
    const std::vector<jittest::TestMode> Modes = jittest::everyMode();
    for (const jittest::TestMode &M : Modes)
      VMs.push_back(jittest::vmInMode(Exe, M, /*OptLevel=*/0));
    auto Ref = VirtualMachine::create(Exe);
    for (int64_t Limit : {int64_t(4096), int64_t(150)}) {
      Ref->setMaxCallDepth(Limit);
      const std::string Want = outcome(*Ref, "chain0", 7);
      if (Len < Limit) {
        EXPECT_EQ(Want, "7");
      } else {
        EXPECT_NE(Want.find("RecursionError"), std::string::npos) << Want;
      }
      for (size_t K = 0; K < VMs.size(); ++K) {
        VMs[K]->setMaxCallDepth(Limit);
        for (int Call = 0; Call < 2; ++Call)
          EXPECT_EQ(outcome(*VMs[K], "chain0", 7), Want)
              << jittest::modeName(Modes[K]) << " length " << Len << " limit "
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
  for (const jittest::TestMode &M : jittest::everyMode()) {
    auto VM = jittest::vmInMode(instrumentProgram(), M);
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
      EXPECT_EQ(outcome(*VM, "f", 5), "5") << jittest::modeName(M);
      EXPECT_EQ(Seen, std::vector<std::string>{"scalar.add"})
          << jittest::modeName(M);
      Hook = nullptr;
      VM->setInstrument(nullptr);
    }
  }
}

} // namespace
