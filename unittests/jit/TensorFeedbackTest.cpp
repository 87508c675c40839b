// Tests tensor feedback (docs/jit.md#tensor-feedback): the interpreter and
// tier 1 record the rank and dtype of the tensors a parameter or a call's
// result holds; tier 2 guards them where the value comes in and drops the
// checks of check_tensor_info and match_shape they answer; a tensor of
// another rank or dtype deoptimizes, repeatedly a generic recompile.
// Results, errors and steps agree with the interpreter in every mode and
// under deopt stress (Inputs/tensor_checks.vmasm).
#include "CallErrors.h"
#include "SpeculativeVM.h"
#include "TestInputs.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/feedback.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdlib>
#include <filesystem>
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
    return jittest::assembleInput("tensor_checks.vmasm");
  }();
  return Exe;
}

Tensor tensor(std::initializer_list<int64_t> Shape,
              DLDataType DType = dtype::Float32) {
  return Tensor::empty(Shape, DType);
}

uint64_t wordOf(int32_t Rank, DLDataType DType = dtype::Float32) {
  return feedback::tensorWord(Rank, DType);
}

/// A VM of tensor_checks.vmasm (jittest::speculativeVM).
std::unique_ptr<VirtualMachine> vmIn(ExecMode Mode, int64_t Threshold,
                                     int64_t BaselineThreshold = 2,
                                     bool Stress = false) {
  return jittest::speculativeVM(program(), Mode,
                                {Threshold, BaselineThreshold, Stress, {}});
}

class TensorFeedbackTest : public jittest::SpeculativeTest {};

TEST_F(TensorFeedbackTest, TheInterpreterRecordsRankAndDType) {
  auto VM = vmIn(ExecMode::Tiered, 1000, 1000);
  auto Ref = vmIn(ExecMode::Bytecode, 0);
  TierManager *TM = tierManagerOf(*VM);
  const FeedbackSlot *Rows = TM->feedback(VM->functionIndex("rows"));
  const FeedbackSlot *Through = TM->feedback(VM->functionIndex("through"));
  ASSERT_NE(Rows, nullptr);
  EXPECT_EQ(VM->call("rows", tensor({2, 3}), 2).cast<int64_t>(), 2);
  EXPECT_EQ(VM->call("through", tensor({4, 3})).cast<int64_t>(), 1);
  EXPECT_EQ(Rows[0].Kinds, kind::Object);
  EXPECT_EQ(Rows[0].Tensor, wordOf(2));
  EXPECT_EQ(Rows[1].Tensor, 0u);           // n: no object
  EXPECT_EQ(Through[1].Tensor, wordOf(2)); // pc 0: the result of same(x)
  // Another rank (a loop that never runs checks nothing): no single shape
  // any more. An int adds its kind and leaves the tensors alone.
  EXPECT_EQ(VM->call("rows", tensor({2, 3, 1}), 0).cast<int64_t>(), 0);
  EXPECT_EQ(Rows[0].Tensor, feedback::kMixed);
  EXPECT_EQ(errorOf(*VM, "through", 5), errorOf(*Ref, "through", 5));
  EXPECT_EQ(Through[1].Kinds, kind::Object | kind::Int);
  EXPECT_EQ(Through[1].Tensor, wordOf(2));
}

TEST_F(TensorFeedbackTest, TierOneRecordsThemToo) {
  // The interpreter runs each function's first call, tier 1 the rest.
  auto VM = vmIn(ExecMode::Tiered, 100000, 1);
  TierManager *TM = tierManagerOf(*VM);
  const FeedbackSlot *Rows = TM->feedback(VM->functionIndex("rows"));
  const FeedbackSlot *Through = TM->feedback(VM->functionIndex("through"));
  EXPECT_EQ(VM->call("rows", tensor({2, 3}), 0).cast<int64_t>(), 0);
  EXPECT_EQ(VM->call("through", tensor({2, 3})).cast<int64_t>(), 1);
  EXPECT_EQ(Rows[0].Tensor, wordOf(2));
  EXPECT_EQ(Through[1].Tensor, wordOf(2));
  // Tier 1's entry records the parameter, its call stencil the result.
  EXPECT_EQ(VM->call("rows", tensor({3}, dtype::Int32), 0).cast<int64_t>(), 0);
  EXPECT_TRUE(statsOf(*VM, "rows").Baseline);
  EXPECT_EQ(Rows[0].Tensor, feedback::kMixed);
  EXPECT_NE(errorOf(*VM, "through", tensor({3})), "no error");
  EXPECT_TRUE(statsOf(*VM, "through").Baseline);
  EXPECT_EQ(Through[1].Tensor, feedback::kMixed);
}

TEST_F(TensorFeedbackTest, AGuardedTensorsChecksAreDropped) {
  // With the parameter seen a float32 matrix, tier 2 guards it at the
  // entry and at the loop's on-stack entry, and the check_tensor_info in
  // the loop (pc 3) keeps no test of the tensor's fields.
  auto VM = vmIn(ExecMode::Tiered, 1000, 1000);
  EXPECT_EQ(VM->call("rows", tensor({2, 3}), 2).cast<int64_t>(), 2);
  const int64_t Rows = VM->functionIndex("rows");
  const std::string Speculated = tierManagerOf(*VM)->irText(Rows, false);
  EXPECT_NE(Speculated.find("guard.tensor"), std::string::npos);
  EXPECT_EQ(Speculated.find("i3.fields"), std::string::npos);
  // Without feedback (nothing seen: a fresh executable, since VMs of one
  // share it) the check stays whole.
  auto Fresh =
      VirtualMachine::create(jittest::assembleInput("tensor_checks.vmasm"));
  JITOptions O;
  O.Mode = ExecMode::Tiered;
  O.Background = false;
  enableJIT(*Fresh, O);
  const std::string Plain = tierManagerOf(*Fresh)->irText(Rows, false);
  EXPECT_EQ(Plain.find("guard.tensor"), std::string::npos);
  EXPECT_NE(Plain.find("i3.fields"), std::string::npos);
}

TEST_F(TensorFeedbackTest, AnotherRankOrDTypeDeoptimizesAtEntry) {
  auto Ref = vmIn(ExecMode::Bytecode, 0);
  auto VM = vmIn(ExecMode::Tiered, 3);
  for (int K = 0; K < 4; ++K)
    EXPECT_EQ(outcome(*VM, "rows", tensor({2, 3}), 5),
              outcome(*Ref, "rows", tensor({2, 3}), 5));
  ASSERT_TRUE(statsOf(*VM, "rows").Compiled);
  EXPECT_EQ(statsOf(*VM, "rows").Deopts, 0u);
  // Same rank and dtype, other dimensions: no deoptimization; the
  // match_shape in the loop still checks the columns.
  EXPECT_EQ(outcome(*VM, "rows", tensor({7, 3}), 5),
            outcome(*Ref, "rows", tensor({7, 3}), 5));
  EXPECT_EQ(errorOf(*VM, "rows", tensor({2, 4}), 5),
            errorOf(*Ref, "rows", tensor({2, 4}), 5));
  EXPECT_EQ(statsOf(*VM, "rows").Deopts, 0u);
  // Another rank, another dtype, not a tensor: tier 1 from pc 0 raises
  // what the interpreter raises, or runs the call (n = 0) to its end.
  EXPECT_EQ(errorOf(*VM, "rows", tensor({2, 3, 1}), 5),
            errorOf(*Ref, "rows", tensor({2, 3, 1}), 5));
  EXPECT_EQ(statsOf(*VM, "rows").Deopts, 1u);
  EXPECT_EQ(errorOf(*VM, "rows", tensor({2, 3}, dtype::Int32), 5),
            errorOf(*Ref, "rows", tensor({2, 3}, dtype::Int32), 5));
  EXPECT_EQ(statsOf(*VM, "rows").Deopts, 2u);
  EXPECT_EQ(outcome(*VM, "rows", 17, 0), outcome(*Ref, "rows", 17, 0));
  // The third failure at the entry recompiled it generically.
  EXPECT_EQ(statsOf(*VM, "rows").Deopts, kDeoptLimit);
  EXPECT_EQ(statsOf(*VM, "rows").Recompiles, 1u);
  EXPECT_EQ(outcome(*VM, "rows", tensor({1}), 0),
            outcome(*Ref, "rows", tensor({1}), 0));
  EXPECT_EQ(statsOf(*VM, "rows").Deopts, kDeoptLimit);
}

TEST_F(TensorFeedbackTest, AResultOfAnotherRankDeoptimizesAfterTheCall) {
  auto Ref = vmIn(ExecMode::Bytecode, 0);
  auto VM = vmIn(ExecMode::Tiered, 3);
  for (int K = 0; K < 4; ++K)
    EXPECT_EQ(outcome(*VM, "through", tensor({2, 3})),
              outcome(*Ref, "through", tensor({2, 3})));
  ASSERT_TRUE(statsOf(*VM, "through").Compiled);
  EXPECT_EQ(statsOf(*VM, "through").Deopts, 0u);
  // same(x) returns a vector: tier 1 goes on after the call, and its
  // check_tensor_info raises the interpreter's error.
  EXPECT_EQ(errorOf(*VM, "through", tensor({3})),
            errorOf(*Ref, "through", tensor({3})));
  EXPECT_EQ(statsOf(*VM, "through").Deopts, 1u);
}

TEST_F(TensorFeedbackTest, TheCacheKeyCoversTheCheckedDType) {
  // Two programs with the same words whose check_tensor_info constant is
  // float32 in one and float16 in the other, compiled from the same
  // feedback (float32 matrices) into one object cache: the first drops
  // its check, the second must not reuse that code.
  char Template[] = "/tmp/vmjit-tensor-cache-XXXXXX";
  ASSERT_NE(::mkdtemp(Template), nullptr);
  const std::string Dir = Template;
  std::string Text = jittest::inputText("tensor_checks.vmasm");
  const std::string F32 = "dtype float32";
  std::string F16Text = Text;
  F16Text.replace(F16Text.find(F32), F32.size(), "dtype float16");
  for (const std::string &T : {Text, F16Text}) {
    auto Exe = assemble(T, "tensor_checks.vmasm");
    auto Ref = VirtualMachine::create(Exe);
    auto VM = jittest::speculativeVM(Exe, ExecMode::Tiered, {2, 1, false, Dir});
    for (int K = 0; K < 4; ++K)
      EXPECT_EQ(errorOf(*VM, "rows", tensor({2, 3}), 2),
                errorOf(*Ref, "rows", tensor({2, 3}), 2));
    EXPECT_TRUE(statsOf(*VM, "rows").Compiled);
    EXPECT_FALSE(statsOf(*VM, "rows").CacheHit);
  }
  std::filesystem::remove_all(Dir);
}

/// Every mode, and tier 2 from wrong feedback (deopt stress assumes a rank
/// the tensors did not have): the interpreter's results, errors and steps.
TEST_F(TensorFeedbackTest, EveryModeAgreesWithTheInterpreter) {
  auto Ref = vmIn(ExecMode::Bytecode, 0);
  struct Setting {
    ExecMode Mode;
    bool Stress;
  };
  for (Setting S :
       {Setting{ExecMode::Baseline, false}, Setting{ExecMode::Compiled, false},
        Setting{ExecMode::Tiered, false}, Setting{ExecMode::Compiled, true},
        Setting{ExecMode::Tiered, true}}) {
    SCOPED_TRACE(std::string(execModeName(S.Mode)) +
                 (S.Stress ? " stress" : ""));
    auto VM = vmIn(S.Mode, 1, 1, S.Stress);
    for (int Round = 0; Round < 5; ++Round) {
      EXPECT_EQ(outcome(*VM, "rows", tensor({2, 3}), 4),
                outcome(*Ref, "rows", tensor({2, 3}), 4));
      EXPECT_EQ(outcome(*VM, "through", tensor({5, 3})),
                outcome(*Ref, "through", tensor({5, 3})));
      EXPECT_EQ(errorOf(*VM, "rows", tensor({2, 3, 4}), 2),
                errorOf(*Ref, "rows", tensor({2, 3, 4}), 2));
      EXPECT_EQ(errorOf(*VM, "through", tensor({5, 2})),
                errorOf(*Ref, "through", tensor({5, 2})));
    }
    if (S.Stress && S.Mode == ExecMode::Tiered) {
      uint64_t Deopts = 0;
      for (const char *F : {"rows", "through"})
        Deopts += statsOf(*VM, F).Deopts;
      EXPECT_GT(Deopts, 0u);
    }
  }
}

} // namespace
