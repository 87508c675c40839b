// Tests tier 2's speculation: the interpreter's type feedback, guards at
// entry, after calls and at on-stack-replacement entries, deoptimization
// to tier 1 (results, errors and steps as on the interpreter), recompiles
// of sites that deoptimize too often, and deopt stress
// (Inputs/speculation.vmasm).
#include "CallErrors.h"
#include "SpeculativeVM.h"
#include "TestInputs.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/feedback.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using vmjit::jittest::errorOf;
using vmjit::jittest::outcome;
using vmjit::jittest::statsOf;

namespace {

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe = [] {
    return jittest::assembleInput("speculation.vmasm");
  }();
  return Exe;
}

/// A tiered VM of speculation.vmasm (jittest::speculativeVM).
std::unique_ptr<VirtualMachine> tieredVM(int64_t Threshold,
                                         int64_t BaselineThreshold = 2,
                                         bool Stress = false) {
  return jittest::speculativeVM(program(), ExecMode::Tiered,
                                {Threshold, BaselineThreshold, Stress, {}});
}

std::unique_ptr<VirtualMachine> interpreter() {
  return VirtualMachine::create(program());
}

/// Calls F(Args...) `Calls` times on VM and on the interpreter Ref, which
/// must agree; then F must have tier-2 code that never deoptimized.
template <typename... A>
void warmUp(VirtualMachine &VM, VirtualMachine &Ref, int Calls,
            std::string_view F, A... Args) {
  for (int K = 0; K < Calls; ++K)
    EXPECT_EQ(outcome(VM, F, Args...), outcome(Ref, F, Args...));
  ASSERT_TRUE(statsOf(VM, F).Compiled) << F;
  EXPECT_EQ(statsOf(VM, F).Deopts, 0u) << F;
}

class SpeculationTest : public jittest::SpeculativeTest {};

TEST_F(SpeculationTest, TheInterpreterRecordsKinds) {
  auto VM = tieredVM(/*Threshold=*/1000, /*BaselineThreshold=*/1000);
  EXPECT_EQ(VM->call("total", 4, 2).cast<double>(), 0 + 1 + 2.5 + 3.5);
  TierManager *TM = tierManagerOf(*VM);
  const int64_t Total = VM->functionIndex("total");
  const FeedbackSlot *Fb = TM->feedback(Total);
  ASSERT_NE(Fb, nullptr);
  EXPECT_EQ(Fb[0].Kinds, kind::Int); // n
  EXPECT_EQ(Fb[1].Kinds, kind::Int); // k
  // pc 4 calls pick: ints, then floats; pc 5 (s + p) likewise.
  EXPECT_EQ(Fb[2 + 4].Kinds, kind::Int | kind::Float);
  EXPECT_EQ(Fb[2 + 2].Kinds, kind::Bool); // i < n
  // pick's own frames: its parameters, and pc 3's float.
  const FeedbackSlot *Pick = TM->feedback(VM->functionIndex("pick"));
  EXPECT_EQ(Pick[0].Kinds, kind::Int);
  EXPECT_EQ(Pick[2 + 3].Kinds, kind::Float);
}

TEST_F(SpeculationTest, TierOneRecordsKindsToo) {
  // The interpreter runs one call or jump, tier 1 the rest.
  auto VM = tieredVM(/*Threshold=*/100000, /*BaselineThreshold=*/1);
  TierManager *TM = tierManagerOf(*VM);
  const int64_t Total = VM->functionIndex("total");
  const int64_t Pick = VM->functionIndex("pick");
  EXPECT_EQ(VM->call("total", 4, 100).cast<int64_t>(), 0 + 1 + 2 + 3);
  EXPECT_EQ(TM->feedback(Total)[2 + 4].Kinds, kind::Int);
  // The second call is tier 1's: pick's floats reach the feedback from
  // its call stencil, pick's parameters from its entry.
  EXPECT_EQ(VM->call("total", 4, 2).cast<double>(), 0 + 1 + 2.5 + 3.5);
  EXPECT_TRUE(statsOf(*VM, "total").Baseline);
  EXPECT_FALSE(statsOf(*VM, "total").Compiled);
  EXPECT_EQ(TM->feedback(Total)[2 + 4].Kinds, kind::Int | kind::Float);
  EXPECT_EQ(VM->call("pick", 1.5, 0).cast<double>(), 2.0);
  EXPECT_EQ(TM->feedback(Pick)[0].Kinds, kind::Int | kind::Float);
}

TEST_F(SpeculationTest, KindsTierOneSawAreNotSpeculatedOn) {
  auto Ref = interpreter();
  // The interpreter sees pick return ints (until the second back edge);
  // tier 1 runs the rest and sees the result turn into a float in every
  // call. Tier 2 (after about 2000 jumps) does not assume an int there, so
  // nothing deoptimizes.
  auto VM = tieredVM(/*Threshold=*/2000, /*BaselineThreshold=*/2);
  for (int K = 0; K < 30; ++K)
    EXPECT_EQ(outcome(*VM, "total", 100, 50), outcome(*Ref, "total", 100, 50));
  ASSERT_TRUE(statsOf(*VM, "total").Compiled);
  EXPECT_EQ(statsOf(*VM, "total").Deopts, 0u);
}

TEST_F(SpeculationTest, CompiledModeGuessesIntsFromTheUses) {
  // Compiled mode runs no call before tier 2: no feedback. pick's result
  // in total is only added, so tier 2 guesses an int there; floats from
  // pick fail the guess until the site is made generic.
  auto Ref = interpreter();
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = ExecMode::Compiled;
  O.Background = false;
  enableJIT(*VM, O);
  EXPECT_EQ(outcome(*VM, "total", 10, 100), outcome(*Ref, "total", 10, 100));
  EXPECT_EQ(statsOf(*VM, "total").Deopts, 0u);
  for (uint32_t K = 1; K <= kDeoptLimit + 2; ++K)
    EXPECT_EQ(outcome(*VM, "total", 10, 5), outcome(*Ref, "total", 10, 5));
  EXPECT_EQ(statsOf(*VM, "total").Deopts, kDeoptLimit);
  EXPECT_EQ(statsOf(*VM, "total").Recompiles, 1u);
}

TEST_F(SpeculationTest, ACallResultOfAnotherKindDeoptimizesInsideALoop) {
  auto Ref = interpreter();
  // Tier 2 is compiled during the first call (its loop counts toward the
  // threshold), from feedback that saw pick return ints only.
  auto VM = tieredVM(/*Threshold=*/20);
  warmUp(*VM, *Ref, 1, "total", 100, 1000);
  // Now pick's result turns into a float at i = 50, in tier 2's loop.
  EXPECT_EQ(outcome(*VM, "total", 100, 50), outcome(*Ref, "total", 100, 50));
  EXPECT_EQ(statsOf(*VM, "total").Deopts, 1u);
  EXPECT_EQ(statsOf(*VM, "total").Recompiles, 0u);
  // Errors after a deoptimization are the interpreter's, frames included.
  EXPECT_EQ(errorOf(*VM, "total", 10, Any(nullptr)),
            errorOf(*Ref, "total", 10, Any(nullptr)));
}

TEST_F(SpeculationTest, ASiteThatKeepsDeoptimizingIsCompiledGenerically) {
  auto Ref = interpreter();
  auto VM = tieredVM(/*Threshold=*/20);
  warmUp(*VM, *Ref, 1, "total", 100, 1000);
  for (uint32_t K = 1; K <= kDeoptLimit; ++K) {
    EXPECT_EQ(outcome(*VM, "total", 30, 5), outcome(*Ref, "total", 30, 5));
    EXPECT_EQ(statsOf(*VM, "total").Deopts, K);
  }
  // The kDeoptLimit-th failure recompiled the function with the site
  // generic: floats from pick no longer deoptimize.
  EXPECT_EQ(statsOf(*VM, "total").Recompiles, 1u);
  for (int K = 0; K < 3; ++K)
    EXPECT_EQ(outcome(*VM, "total", 30, 5), outcome(*Ref, "total", 30, 5));
  EXPECT_EQ(statsOf(*VM, "total").Deopts, kDeoptLimit);
}

TEST_F(SpeculationTest, AParameterOfAnotherKindDeoptimizesAtEntry) {
  auto Ref = interpreter();
  auto VM = tieredVM(/*Threshold=*/20);
  warmUp(*VM, *Ref, 1, "scale", 3, 100);
  EXPECT_EQ(outcome(*VM, "scale", 1.5, 100), outcome(*Ref, "scale", 1.5, 100));
  EXPECT_EQ(statsOf(*VM, "scale").Deopts, 1u);
  EXPECT_EQ(errorOf(*VM, "scale", Any(nullptr), 3),
            errorOf(*Ref, "scale", Any(nullptr), 3));
}

TEST_F(SpeculationTest, AnOsrEntryGuardsTheLoopsRegisters) {
  // Tier 1 records what it sees, so a frame reaches an on-stack entry with
  // kinds the feedback holds; deopt stress assumes a kind (an int, a float
  // or None) for x whatever was seen. A frame with x an int and one with x
  // a float each compile tier 2 at the threshold, in counted tier-1 code,
  // and enter it at the loop header: for one of them at least the
  // header's guards fail and send the frame back.
  auto Ref = interpreter();
  uint64_t Deopts = 0;
  for (Any X : {Any(2), Any(0.25)}) {
    auto VM = tieredVM(/*Threshold=*/1000, /*BaselineThreshold=*/2,
                       /*Stress=*/true);
    EXPECT_EQ(outcome(*VM, "scale", X, 3000), outcome(*Ref, "scale", X, 3000));
    FunctionJITStats S = statsOf(*VM, "scale");
    EXPECT_TRUE(S.Compiled);
    EXPECT_EQ(S.Tier2OsrEntries, 1u);
    Deopts += S.Deopts;
  }
  EXPECT_GE(Deopts, 1u);
}

TEST_F(SpeculationTest, DeoptimizationInsideACallChain) {
  auto Ref = interpreter();
  // The interpreter runs the two outermost frames of the first call; their
  // feedback exists once they return, before the third call reaches the
  // threshold.
  auto VM = tieredVM(/*Threshold=*/100);
  warmUp(*VM, *Ref, 3, "chain", 40, 1000);
  // Every frame deeper than 20 gets a float from pick.
  EXPECT_EQ(outcome(*VM, "chain", 40, 20), outcome(*Ref, "chain", 40, 20));
  EXPECT_GE(statsOf(*VM, "chain").Deopts, 1u);
}

TEST_F(SpeculationTest, DeoptStressAgreesWithTheInterpreter) {
  auto Ref = interpreter();
  for (ExecMode M : {ExecMode::Compiled, ExecMode::Tiered}) {
    auto VM = VirtualMachine::create(program());
    JITOptions O;
    O.Mode = M;
    O.Threshold = 1;
    O.Background = false;
    O.DeoptStress = true;
    enableJIT(*VM, O);
    for (int Round = 0; Round < 5; ++Round) {
      EXPECT_EQ(outcome(*VM, "total", 50, 20), outcome(*Ref, "total", 50, 20));
      EXPECT_EQ(outcome(*VM, "scale", 0.5, 30),
                outcome(*Ref, "scale", 0.5, 30));
      EXPECT_EQ(outcome(*VM, "scale", 7, 30), outcome(*Ref, "scale", 7, 30));
      EXPECT_EQ(outcome(*VM, "chain", 12, 6), outcome(*Ref, "chain", 12, 6));
      EXPECT_EQ(errorOf(*VM, "scale", Any(nullptr), 3),
                errorOf(*Ref, "scale", Any(nullptr), 3));
    }
    uint64_t Deopts = 0;
    for (const char *F : {"total", "scale", "chain", "pick"})
      Deopts += statsOf(*VM, F).Deopts;
    EXPECT_GT(Deopts, 0u) << execModeName(M);
  }
}

} // namespace
