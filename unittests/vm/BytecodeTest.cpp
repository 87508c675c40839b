// Tests the instruction encoding: argument words, special registers and
// decoding in place.
#include "vmjit/bytecode/bytecode.h"

#include <gtest/gtest.h>

using namespace vmjit::vm;

TEST(BytecodeTest, ArgumentKindsRoundTrip) {
  for (ArgKind K : {ArgKind::Register, ArgKind::Immediate, ArgKind::ConstIdx,
                    ArgKind::FuncIdx}) {
    for (int64_t V : {int64_t(0), int64_t(1), int64_t(-1), int64_t(12345),
                      Arg::kMaxValue, Arg::kMinValue}) {
      Arg A(K, V);
      EXPECT_EQ(A.kind(), K);
      EXPECT_EQ(A.value(), V) << "kind " << int(K);
      EXPECT_EQ(Arg::fromWord(A.word()), A);
    }
  }
}

TEST(BytecodeTest, KindLivesInTheTopByte) {
  EXPECT_EQ(static_cast<uint64_t>(Arg::imm(5).word()), (uint64_t(1) << 56) | 5);
  EXPECT_EQ(static_cast<uint64_t>(Arg::constant(3).word()),
            (uint64_t(2) << 56) | 3);
  EXPECT_EQ(static_cast<uint64_t>(Arg::func(7).word()), (uint64_t(3) << 56) | 7);
  EXPECT_EQ(Arg::reg(9).word(), 9);
  // A negative immediate keeps the kind byte and sign-extends on decode.
  Arg Neg = Arg::imm(-2);
  EXPECT_EQ(Neg.kindByte(), 1);
  EXPECT_EQ(static_cast<uint64_t>(Neg.word()) & ((uint64_t(1) << 56) - 1),
            (uint64_t(1) << 56) - 2);
  EXPECT_EQ(Neg.value(), -2);
}

TEST(BytecodeTest, ImmediateRange) {
  EXPECT_EQ(Arg::kMaxValue, (int64_t(1) << 55) - 1);
  EXPECT_EQ(Arg::kMinValue, -(int64_t(1) << 55));
  EXPECT_TRUE(Arg::fitsValue(Arg::kMaxValue));
  EXPECT_TRUE(Arg::fitsValue(Arg::kMinValue));
  EXPECT_FALSE(Arg::fitsValue(Arg::kMaxValue + 1));
  EXPECT_FALSE(Arg::fitsValue(Arg::kMinValue - 1));
}

TEST(BytecodeTest, SpecialRegisters) {
  EXPECT_EQ(kVoidRegister, int64_t(1) << 54);
  EXPECT_EQ(kVMRegister, (int64_t(1) << 54) + 1);
  EXPECT_TRUE(isSpecialRegister(kVoidRegister));
  EXPECT_TRUE(isSpecialRegister(kVMRegister));
  EXPECT_FALSE(isSpecialRegister(0));
  // The vm register survives encoding as a register argument.
  EXPECT_EQ(Arg::vm().value(), kVMRegister);
  EXPECT_EQ(Arg::vm().kind(), ArgKind::Register);
}

TEST(BytecodeTest, InstrViewDecodesInPlace) {
  const Word Code[] = {1,  3, 7, 2, Arg::reg(0).word(), Arg::imm(-4).word(),
                       4,  3, 2,                        // if %3 else +2
                       3,  -2,                          // goto -2
                       2,  3};                          // ret %3
  InstrView Call(Code);
  EXPECT_EQ(Call.opcode(), Opcode::Call);
  EXPECT_EQ(Call.callDst(), 3);
  EXPECT_EQ(Call.callFunc(), 7);
  EXPECT_EQ(Call.callNumArgs(), 2);
  EXPECT_EQ(Call.callArg(1).value(), -4);
  EXPECT_EQ(Call.numWords(), 6);
  InstrView If(Code + 6);
  EXPECT_EQ(If.opcode(), Opcode::If);
  EXPECT_EQ(If.ifCond(), 3);
  EXPECT_EQ(If.ifFalseOffset(), 2);
  EXPECT_EQ(If.numWords(), 3);
  InstrView Goto(Code + 9);
  EXPECT_EQ(Goto.gotoOffset(), -2);
  InstrView Ret(Code + 11);
  EXPECT_EQ(Ret.retReg(), 3);
  EXPECT_EQ(opcodeName(Ret.opcode()), "ret");
}
