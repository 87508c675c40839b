// Tests the verifier: one accepted program per rule where it matters and
// one rejected program per rule, with the message naming function and
// instruction.
#include "vmjit/bytecode/verifier.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

namespace {

constexpr Word kCall = 1, kRet = 2, kGoto = 3, kIf = 4;

FunctionInfo bytecode(std::string Name, int64_t Start, int64_t End,
                      int64_t Params, int64_t Regs) {
  FunctionInfo F;
  F.Kind = FunctionKind::Bytecode;
  F.Name = std::move(Name);
  F.StartInstr = Start;
  F.EndInstr = End;
  F.NumParams = Params;
  F.RegisterFileSize = Regs;
  for (int64_t I = 0; I < Params; ++I)
    F.ParamNames.push_back("p" + std::to_string(I));
  return F;
}

FunctionInfo packed(std::string Name) {
  FunctionInfo F;
  F.Name = std::move(Name);
  return F;
}

/// Verifies `main` (2 params, 4 registers) with body `Code`, plus a packed
/// function "p" (index 1) and bytecode "two" (index 2, two params), and
/// one constant. Returns the error text or "ok".
std::string verify(std::vector<Word> Code, int64_t NumInstrs,
                   int64_t Regs = 4) {
  std::vector<FunctionInfo> Fns = {bytecode("main", 0, NumInstrs, 2, Regs),
                                   packed("p"),
                                   bytecode("two", NumInstrs, NumInstrs + 1,
                                            2, 2)};
  Code.insert(Code.end(), {kRet, 0});
  try {
    auto Exe = Executable::create(Fns, {Any(int64_t(1))}, Code);
    verifyExecutable(*Exe);
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "ok";
}

Word reg(int64_t R) { return Arg::reg(R).word(); }

} // namespace

TEST(VerifierTest, AcceptsWellFormedCode) {
  // %2 = p(%0, 5, $0, @two, %vm); ret %2
  EXPECT_EQ(verify({kCall, 2, 1, 5, reg(0), Arg::imm(5).word(),
                    Arg::constant(0).word(), Arg::func(2).word(),
                    Arg::vm().word(), kRet, 2},
                   2),
            "ok");
  // Written on both paths of an if, then read.
  EXPECT_EQ(verify({kIf, 0, 3,                 // 0: if %0 else 3
                    kCall, 2, 1, 0,            // 1: %2 = p()
                    kGoto, 2,                  // 2: goto 4
                    kCall, 2, 1, 0,            // 3: %2 = p()
                    kRet, 2},                  // 4: ret %2
                   5),
            "ok");
  // A call of a bytecode function with the right arity, result dropped.
  EXPECT_EQ(verify({kCall, kVoidRegister, 2, 2, reg(0), reg(1), kRet, 0}, 2),
            "ok");
}

TEST(VerifierTest, RegisterOutOfRange) {
  EXPECT_EQ(verify({kCall, 9, 1, 0, kRet, 0}, 2),
            "VerifyError: function 'main', instruction 0 (call 'p'): writes "
            "register %9, but the register file has 4 registers");
  EXPECT_EQ(verify({kCall, 2, 1, 1, reg(4), kRet, 2}, 2),
            "VerifyError: function 'main', instruction 0 (call 'p'): argument "
            "1 reads register %4, but the register file has 4 registers");
  EXPECT_EQ(verify({kRet, 7}, 1),
            "VerifyError: function 'main', instruction 0: returns register "
            "%7, but the register file has 4 registers");
  EXPECT_EQ(verify({kIf, -1, 1, kRet, 0}, 2),
            "VerifyError: function 'main', instruction 0: tests register %-1, "
            "but the register file has 4 registers");
}

TEST(VerifierTest, SpecialRegisters) {
  EXPECT_THAT(verify({kCall, kVMRegister, 1, 0, kRet, 0}, 2),
              HasSubstr("writes its result to the vm register"));
  EXPECT_THAT(verify({kRet, kVMRegister}, 2),
              HasSubstr("returns the vm register"));
  EXPECT_THAT(verify({kIf, kVMRegister, 1, kRet, 0}, 2),
              HasSubstr("tests the vm register"));
}

// %void reads as None wherever TVM's VM reads it: an argument (TVM's
// compiler passes R.null_value() so), `ret` and `if` (an error when it runs).
TEST(VerifierTest, VoidRegisterReadsAsNone) {
  EXPECT_EQ(verify({kCall, 2, 1, 1, reg(kVoidRegister), kRet, 2}, 2), "ok");
  EXPECT_EQ(verify({kRet, kVoidRegister}, 1), "ok");
  EXPECT_EQ(verify({kIf, kVoidRegister, 2, kRet, 0, kRet, 0}, 3), "ok");
}

TEST(VerifierTest, ConstantAndFunctionIndices) {
  EXPECT_EQ(verify({kCall, 2, 1, 1, Arg::constant(1).word(), kRet, 2}, 2),
            "VerifyError: function 'main', instruction 0 (call 'p'): argument "
            "1 refers to constant 1, but there are 1 constants");
  EXPECT_EQ(verify({kCall, 2, 3, 0, kRet, 2}, 2),
            "VerifyError: function 'main', instruction 0: calls function "
            "index 3, but there are 3 functions");
  EXPECT_THAT(verify({kCall, 2, 1, 1, Arg::func(-1).word(), kRet, 2}, 2),
              HasSubstr("argument 1 refers to function -1"));
  EXPECT_THAT(verify({kCall, 2, 1, 1, (Word(9) << 56) | 1, kRet, 2}, 2),
              HasSubstr("argument 1 has unknown kind 9"));
}

TEST(VerifierTest, JumpTargets) {
  EXPECT_EQ(verify({kGoto, 5}, 1),
            "VerifyError: function 'main', instruction 0: jump by 5 lands on "
            "instruction 5, outside the function's 1 instructions");
  EXPECT_THAT(verify({kIf, 0, -1, kRet, 0}, 2),
              HasSubstr("jump by -1 lands on instruction -1"));
  // A jump to the first instruction of the next function is still out.
  EXPECT_THAT(verify({kIf, 0, 2, kRet, 0}, 2),
              HasSubstr("lands on instruction 2"));
}

TEST(VerifierTest, BytecodeCallArity) {
  EXPECT_EQ(verify({kCall, 2, 2, 1, reg(0), kRet, 2}, 2),
            "VerifyError: function 'main', instruction 0 (call 'two'): passes "
            "1 arguments to 'two', which takes 2");
}

TEST(VerifierTest, LastInstructionMustBeRetOrGoto) {
  EXPECT_EQ(verify({kRet, 0, kCall, 2, 1, 0}, 2),
            "VerifyError: function 'main', instruction 1 (call 'p'): the last "
            "instruction of a function must be 'ret' or 'goto', not 'call'");
}

TEST(VerifierTest, DefiniteAssignment) {
  // %2 is written only when %0 is true.
  EXPECT_EQ(verify({kIf, 0, 2,      // 0: if %0 else 2
                    kCall, 2, 1, 0, // 1: %2 = p()
                    kRet, 2},       // 2: ret %2
                   3),
            "VerifyError: function 'main', instruction 2: ret reads register "
            "%2 before it is written on every path that reaches it");
  // Read in a loop body before the write later in the body.
  EXPECT_THAT(verify({kCall, 3, 1, 1, reg(2), // 0: %3 = p(%2)
                      kCall, 2, 1, 0,         // 1: %2 = p()
                      kGoto, -2},             // 2: goto 0
                     3),
              HasSubstr("instruction 0 (call 'p'): argument 1 reads register "
                        "%2 before it is written"));
  // Unreachable code is not checked.
  EXPECT_EQ(verify({kRet, 0, kRet, 3}, 2), "ok");
}

TEST(VerifierTest, FunctionHeader) {
  auto Check = [](FunctionInfo F) {
    try {
      auto Exe = Executable::create({F}, {}, {kRet, 0});
      verifyExecutable(*Exe);
    } catch (const Error &E) {
      return E.message();
    }
    return std::string("ok");
  };
  FunctionInfo F = bytecode("f", 0, 1, 1, 1);
  EXPECT_EQ(Check(F), "ok");
  FunctionInfo Empty = bytecode("f", 0, 0, 1, 1);
  EXPECT_THAT(Check(Empty), HasSubstr("function 'f': instruction range [0, 0) "
                                      "is empty"));
  FunctionInfo Outside = bytecode("f", 0, 2, 1, 1);
  EXPECT_THAT(Check(Outside), HasSubstr("outside the 1 instructions"));
  FunctionInfo Small = bytecode("f", 0, 1, 1, 0);
  EXPECT_THAT(Check(Small), HasSubstr("register file of 0 registers cannot "
                                      "hold its 1 parameters"));
  FunctionInfo Names = bytecode("f", 0, 1, 1, 1);
  Names.ParamNames.clear();
  EXPECT_THAT(Check(Names), HasSubstr("1 parameters but 0 parameter names"));
  FunctionInfo Huge = bytecode("f", 0, 1, 1, int64_t(1) << 40);
  EXPECT_THAT(Check(Huge), HasSubstr("is over the limit of 65536"));
  FunctionInfo Nameless = packed("");
  try {
    verifyExecutable(*Executable::create({Nameless}, {}, {}));
    FAIL() << "a nameless function was accepted";
  } catch (const Error &E) {
    EXPECT_EQ(E.message(), "function table entry 0 has no name");
  }
}

TEST(VerifierTest, CreateRejectsMalformedCode) {
  auto Create = [](std::vector<Word> Code) {
    try {
      Executable::create({}, {}, std::move(Code));
    } catch (const Error &E) {
      return E.kind() + ": " + E.message();
    }
    return std::string("ok");
  };
  EXPECT_EQ(Create({kRet, 0, 9}),
            "FormatError: instruction 1 has unknown opcode 9");
  EXPECT_EQ(Create({kCall, 0, 0}),
            "FormatError: instruction 0 (a call) is truncated");
  EXPECT_EQ(Create({kCall, 0, 0, 5, 1}),
            "FormatError: instruction 0 (a call) has 5 arguments, more than "
            "the code holds");
  EXPECT_EQ(Create({kCall, 0, 0, -1}),
            "FormatError: instruction 0 (a call) has -1 arguments, more than "
            "the code holds");
  EXPECT_EQ(Create({kIf, 0}), "FormatError: instruction 0 is truncated");
  FunctionInfo A = packed("x"), B = packed("x");
  try {
    Executable::create({A, B}, {}, {});
    FAIL() << "duplicate names were accepted";
  } catch (const Error &E) {
    EXPECT_THAT(E.message(), HasSubstr("function name 'x' appears twice"));
  }
}

TEST(VerifierTest, SizeLimits) {
  // main: 2 instructions; 3 functions; 1 constant.
  std::vector<FunctionInfo> Fns = {bytecode("main", 0, 1, 1, 1),
                                   packed("p"), bytecode("q", 1, 2, 1, 1)};
  auto Tensor4K = Tensor::empty({1024}, DLDataType{kDLFloat, 32, 1});
  auto Exe = Executable::create(Fns, {Any(Tensor4K)}, {kRet, 0, kRet, 0});
  auto Check = [&](VerifierLimits L) -> std::string {
    try {
      verifyExecutable(*Exe, L);
    } catch (const Error &E) {
      return E.kind() + ": " + E.message();
    }
    return "ok";
  };
  EXPECT_EQ(Check({}), "ok");
  EXPECT_EQ(Check({.MaxFunctions = 2}),
            "VerifyError: 3 functions is over the limit of 2");
  EXPECT_EQ(Check({.MaxConstants = 0}),
            "VerifyError: 1 constants is over the limit of 0");
  EXPECT_EQ(Check({.MaxInstructions = 1}),
            "VerifyError: 2 instructions is over the limit of 1");
  EXPECT_EQ(Check({.MaxTensorConstantBytes = 4095}),
            "VerifyError: constant 0: a tensor of 4096 bytes is over the "
            "limit of 4095 bytes");
  EXPECT_EQ(Check({.MaxTensorConstantBytes = 4096}), "ok");
}
