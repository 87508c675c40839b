// Tests the executable builder: layout of functions, labels, constants and
// the errors it reports.
#include "vmjit/bytecode/builder.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

std::string errorKindOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "no error";
}

} // namespace

TEST(BuilderTest, BuildsACountingLoop) {
  ExecutableBuilder B;
  int64_t Lt = B.declarePacked("scalar.lt");
  int64_t Add = B.declarePacked("scalar.add");
  FunctionBuilder &F = B.beginFunction("main", {"n"});
  Label Head = F.newLabel(), Done = F.newLabel();
  F.emitCall(1, Add, {Arg::imm(0), Arg::imm(0)}); // i = 0
  F.bind(Head);
  F.emitCall(2, Lt, {Arg::reg(1), Arg::reg(0)});
  F.emitIf(2, Done);
  F.emitCall(1, Add, {Arg::reg(1), Arg::imm(1)});
  F.emitGoto(Head);
  F.bind(Done);
  F.emitRet(1);
  B.endFunction();
  auto Exe = B.finish();

  ASSERT_EQ(Exe->functions().size(), 3u);
  const FunctionInfo &Main = Exe->function(*Exe->findFunction("main"));
  EXPECT_EQ(Main.Kind, FunctionKind::Bytecode);
  EXPECT_EQ(Main.NumParams, 1);
  EXPECT_EQ(Main.RegisterFileSize, 3);
  EXPECT_EQ(Main.numInstrs(), 6);
  // if at instruction 2 jumps to instruction 5: offset +3; goto at 4 jumps
  // back to 1: offset -3.
  EXPECT_EQ(Exe->instr(Main.StartInstr + 2).ifFalseOffset(), 3);
  EXPECT_EQ(Exe->instr(Main.StartInstr + 4).gotoOffset(), -3);
  EXPECT_EQ(Exe->function(Lt).Kind, FunctionKind::Packed);
}

TEST(BuilderTest, FunctionsAreLaidOutInTableOrder) {
  ExecutableBuilder B;
  int64_t Callee = B.declareFunction("callee", {"x"});
  FunctionBuilder &M = B.beginFunction("main", {});
  M.emitCall(0, Callee, {Arg::imm(3)});
  M.emitRet(0);
  B.endFunction();
  FunctionBuilder &C = B.beginFunction("callee", {"x"});
  C.emitRet(0);
  B.endFunction();
  auto Exe = B.finish();
  EXPECT_EQ(Exe->function(0).Name, "callee");
  EXPECT_EQ(Exe->function(0).StartInstr, 0);
  EXPECT_EQ(Exe->function(0).EndInstr, 1);
  EXPECT_EQ(Exe->function(1).StartInstr, 1);
  EXPECT_EQ(Exe->function(1).EndInstr, 3);
  // finish() can run again and gives an equal executable.
  EXPECT_TRUE(B.finish()->equals(*Exe));
}

TEST(BuilderTest, ConstantsAreDeduplicated) {
  ExecutableBuilder B;
  EXPECT_EQ(B.addConstant(Any(int64_t(7))), 0);
  EXPECT_EQ(B.addConstant(Any(1.5)), 1);
  EXPECT_EQ(B.addConstant(Any(int64_t(7))), 0);
  EXPECT_EQ(B.addConstant(Any(true)), 2);
  EXPECT_EQ(B.addConstant(Any(int64_t(1))), 3); // int 1 is not bool true
  EXPECT_EQ(B.addConstant(Any(std::string("a long string here"))), 4);
  EXPECT_EQ(B.addConstant(Any(std::string("a long string here"))), 4);
  EXPECT_EQ(B.addConstant(Any(Shape{2, 3})), 5);
  EXPECT_EQ(B.addConstant(Any(Shape{2, 3})), 5);
  EXPECT_EQ(B.addConstant(Any(dtype::Float32)), 6);
  EXPECT_EQ(B.addConstant(Any(dtype::Float32)), 6);
  Tensor T = Tensor::empty({2}, dtype::Float32);
  EXPECT_EQ(B.addConstant(Any(T)), 7);
  EXPECT_EQ(B.addConstant(Any(T)), 7); // the same object
  EXPECT_EQ(B.addConstant(Any(Tensor::empty({2}, dtype::Float32))), 8);
  EXPECT_EQ(B.addConstant(Any(int64_t(7)), /*Dedupe=*/false), 9);
  EXPECT_EQ(B.addConstant(Any()), 10);
  EXPECT_EQ(B.addConstant(Any()), 10);
}

TEST(BuilderTest, Errors) {
  EXPECT_EQ(errorKindOf([] {
              ExecutableBuilder B;
              FunctionBuilder &F = B.beginFunction("f", {});
              Label L = F.newLabel();
              F.emitGoto(L);
              B.endFunction();
            }),
            "ValueError: function 'f': label 0 is used but never bound");
  EXPECT_EQ(errorKindOf([] {
              ExecutableBuilder B;
              B.declareFunction("g", {"a"});
              B.finish();
            }),
            "ValueError: function 'g' is declared but has no body");
  EXPECT_EQ(errorKindOf([] {
              ExecutableBuilder B;
              B.declarePacked("h");
              B.declareFunction("h", {});
            }),
            "ValueError: function 'h' is declared as packed and as bytecode");
  EXPECT_EQ(errorKindOf([] {
              ExecutableBuilder B;
              B.beginFunction("f", {});
              B.beginFunction("g", {});
            }),
            "ValueError: beginFunction('g') inside function 'f'");
  // The verifier runs in finish().
  EXPECT_EQ(errorKindOf([] {
              ExecutableBuilder B;
              FunctionBuilder &F = B.beginFunction("f", {});
              F.emitCall(0, B.declarePacked("p"), {});
              B.endFunction();
              B.finish();
            })
                .substr(0, 12),
            "VerifyError:");
}
