//===- SpecialBuiltinsTest.cpp - The table of special builtins ------------===//
//
// The rows every tier reads (vm/special_builtins.h): each at its number,
// each a standard function, the scalar rows the scalar table's, the count
// rule and the forms tier 2 inlines.
//
//===----------------------------------------------------------------------===//

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/function.h"
#include "vmjit/vm/special_builtins.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

SpecialBuiltin nth(int K) { return static_cast<SpecialBuiltin>(K); }

/// A call instruction of `Args` into register 0 (or %void).
std::vector<Word> callOf(std::initializer_list<Arg> Args,
                         RegName Dst = RegName(0)) {
  std::vector<Word> Code = {static_cast<Word>(Opcode::Call), Dst, 0,
                            static_cast<Word>(Args.size())};
  for (Arg A : Args)
    Code.push_back(A.word());
  return Code;
}

} // namespace

TEST(SpecialBuiltinsTest, EveryRowIsAStandardFunctionFoundByItsName) {
  EXPECT_EQ(specialBuiltinFor(""), SpecialBuiltin::None);
  EXPECT_EQ(specialBuiltinFor("vm.builtin.invoke_closure"),
            SpecialBuiltin::None);
  EXPECT_EQ(standardSpecial(SpecialBuiltin::None), nullptr);
  for (int K = 1; K < kNumSpecialBuiltins; ++K) {
    const SpecialBuiltinInfo &Row = specialBuiltin(nth(K));
    EXPECT_EQ(Row.Id, nth(K));
    EXPECT_EQ(specialBuiltinFor(Row.Name), nth(K)) << Row.Name;
    std::optional<Function> Std = standardFunction(Row.Name);
    ASSERT_TRUE(Std) << Row.Name;
    EXPECT_EQ(standardSpecial(nth(K)), Std->get()) << Row.Name;
  }
}

TEST(SpecialBuiltinsTest, TheScalarRowsAreTheScalarTable) {
  namespace scalar = kernels::scalar;
  for (int K = 0; K < scalar::kNumOps; ++K) {
    const auto Op = static_cast<scalar::Op>(K);
    const SpecialBuiltin B = specialBuiltinFor(scalar::name(Op));
    ASSERT_TRUE(scalarOpOf(B)) << scalar::name(Op);
    EXPECT_EQ(*scalarOpOf(B), Op);
    EXPECT_EQ(specialBuiltin(B).MinArgs, scalar::arity(Op));
    EXPECT_EQ(specialBuiltin(B).MaxArgs, scalar::arity(Op));
    EXPECT_EQ(specialBuiltin(B).Tier1, Tier1Form::ScalarStencil);
  }
  EXPECT_FALSE(scalarOpOf(SpecialBuiltin::Copy));
  EXPECT_FALSE(scalarOpOf(SpecialBuiltin::CheckTensorInfo));
}

TEST(SpecialBuiltinsTest, TheCountRule) {
  // What the stats call "not counted" in JIT modes (docs/command.md).
  for (const char *Name : {"vm.builtin.copy", "vm.builtin.read_if_cond",
                           "scalar.add", "scalar.not"})
    EXPECT_FALSE(countedWhenInlined(Name)) << Name;
  for (const char *Name : {"vm.builtin.alloc_tensor", "vm.builtin.null_value",
                           "vm.builtin.match_shape", "kernel.add", ""})
    EXPECT_TRUE(countedWhenInlined(Name)) << Name;
  EXPECT_TRUE(countedAtCall(true, SpecialBuiltin::None));
  EXPECT_TRUE(countedAtCall(true, SpecialBuiltin::AllocTensor));
  EXPECT_FALSE(countedAtCall(true, SpecialBuiltin::ScalarAdd));
  EXPECT_FALSE(countedAtCall(false, SpecialBuiltin::None));
}

TEST(SpecialBuiltinsTest, InlineFormsTakeTheirArgumentCounts) {
  const std::vector<Word> None0 = callOf({});
  const std::vector<Word> One = callOf({Arg::reg(1)});
  const std::vector<Word> Two = callOf({Arg::reg(1), Arg::imm(2)});
  EXPECT_TRUE(
      inlineFormApplies(SpecialBuiltin::NullValue, InstrView(None0.data())));
  EXPECT_FALSE(
      inlineFormApplies(SpecialBuiltin::NullValue, InstrView(One.data())));
  EXPECT_TRUE(inlineFormApplies(SpecialBuiltin::Copy, InstrView(One.data())));
  EXPECT_FALSE(inlineFormApplies(SpecialBuiltin::Copy, InstrView(Two.data())));
  EXPECT_TRUE(
      inlineFormApplies(SpecialBuiltin::ScalarAdd, InstrView(Two.data())));
  EXPECT_FALSE(
      inlineFormApplies(SpecialBuiltin::ScalarNeg, InstrView(Two.data())));
  EXPECT_FALSE(
      inlineFormApplies(SpecialBuiltin::None, InstrView(None0.data())));
  // alloc_storage has no inline form: only its site call.
  EXPECT_FALSE(
      inlineFormApplies(SpecialBuiltin::AllocStorage, InstrView(Two.data())));
}

TEST(SpecialBuiltinsTest, MatchShapeInlinesImmediateCodesOnly) {
  // match_shape(x, heap, 2, code, imm, code, imm, text).
  const std::vector<Word> Inlinable =
      callOf({Arg::reg(1), Arg::reg(2), Arg::imm(2), Arg::imm(0), Arg::imm(4),
              Arg::imm(1), Arg::imm(0), Arg::constant(0)});
  EXPECT_TRUE(inlineFormApplies(SpecialBuiltin::MatchShape,
                                InstrView(Inlinable.data())));
  const std::vector<Word> UnknownCode =
      callOf({Arg::reg(1), Arg::reg(2), Arg::imm(1), Arg::imm(4), Arg::imm(4),
              Arg::constant(0)});
  EXPECT_FALSE(inlineFormApplies(SpecialBuiltin::MatchShape,
                                 InstrView(UnknownCode.data())));
  const std::vector<Word> NegativeSlot =
      callOf({Arg::reg(1), Arg::reg(2), Arg::imm(1), Arg::imm(3), Arg::imm(-1),
              Arg::constant(0)});
  EXPECT_FALSE(inlineFormApplies(SpecialBuiltin::MatchShape,
                                 InstrView(NegativeSlot.data())));
  const std::vector<Word> CodeInRegister =
      callOf({Arg::reg(1), Arg::reg(2), Arg::imm(1), Arg::reg(3), Arg::imm(0),
              Arg::constant(0)});
  EXPECT_FALSE(inlineFormApplies(SpecialBuiltin::MatchShape,
                                 InstrView(CodeInRegister.data())));
}
