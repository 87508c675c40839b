//===- program_generator.cpp - Structured programs from fuzz bytes --------===//
//
// Every choice is one small read from the FuzzedDataProvider, so that a
// mutation of the input changes one instruction or operand rather than
// the whole program, and an exhausted input (which reads as zeros) still
// ends every function properly.
//
//===----------------------------------------------------------------------===//

#include "program_generator.h"

#include "vmjit/bytecode/builder.h"
#include "vmjit/runtime/any.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/string.h"

#include <array>
#include <cmath>
#include <fuzzer/FuzzedDataProvider.h>
#include <limits>
#include <string>
#include <vector>

namespace vmjit::fuzz {
namespace {

using vm::Arg;
using vm::ExecutableBuilder;
using vm::FunctionBuilder;
using vm::Label;

constexpr std::array kBinary = {
    "scalar.add", "scalar.sub", "scalar.mul", "scalar.div", "scalar.mod",
    "scalar.min", "scalar.max", "scalar.lt",  "scalar.le",  "scalar.gt",
    "scalar.ge",  "scalar.eq",  "scalar.ne"};
constexpr std::array kUnary = {"scalar.neg", "scalar.not", "vm.builtin.copy"};
constexpr std::array<int64_t, 10> kSmallImms = {0, 1, 2, -1, 3, 7, 10, -7, 64,
                                                100};

struct Signature {
  std::string Name;
  int64_t NumParams;
  int64_t Index;
};

class Generator {
public:
  explicit Generator(FuzzedDataProvider &P) : P(P) {}
  GeneratedProgram run();

private:
  int64_t packed(const char *Name) { return B.declarePacked(Name); }
  Any constantValue(int K);
  Arg operand();
  vm::RegName reg() { return P.ConsumeIntegralInRange<int64_t>(0, NumRegs - 1); }
  /// A register to read: now and then %void, which reads as None.
  vm::RegName src() {
    return P.ConsumeIntegralInRange(0, 31) == 0 ? vm::kVoidRegister : reg();
  }
  vm::RegName dst() {
    return P.ConsumeIntegralInRange(0, 15) == 0 ? vm::kVoidRegister : reg();
  }
  std::vector<Arg> operands(int64_t N) {
    std::vector<Arg> Args;
    for (int64_t I = 0; I < N; ++I)
      Args.push_back(operand());
    return Args;
  }
  void body(const Signature &S);
  void reenter(FunctionBuilder &F);
  void reenterBody();
  void instruction(FunctionBuilder &F);
  Label label();

  FuzzedDataProvider &P;
  ExecutableBuilder B;
  std::vector<Signature> Funcs;
  int64_t NumRegs = 1;
  std::vector<Label> Labels;
  /// The function being generated (index into Funcs).
  size_t Current = 0;
  /// The last register a make_tuple wrote in this function, or -1.
  vm::RegName LastTuple = -1;
  /// reenter(k, f, x): f(x) called through invoke_closure under k nested
  /// invoke_closure runs of itself (each a run of the VM inside a call).
  int64_t ReenterIndex = -1;
};

/// Depths of reenter: around the interpreter's first reservation of 64
/// frames (a call that re-entered the VM once read a frame freed by its
/// growth) and deeper, up to past the call-depth limit.
constexpr std::array<int64_t, 8> kReenterDepths = {0,  1,  62,  63,
                                                   64, 65, 100, 150};

Any Generator::constantValue(int K) {
  switch (K) {
  case 0:
    return Any(std::numeric_limits<int64_t>::min());
  case 1:
    return Any(std::numeric_limits<int64_t>::max());
  case 2:
    return Any(0.5);
  case 3:
    return Any(-0.0);
  case 4:
    return Any(std::numeric_limits<double>::infinity());
  case 5:
    return Any(std::numeric_limits<double>::quiet_NaN());
  case 6:
    return Any(true);
  case 7:
    return Any(String("s"));
  case 8:
    return Any(-3.75);
  default:
    return Any();
  }
}

Arg Generator::operand() {
  int K = P.ConsumeIntegralInRange(0, 31);
  if (K < 18)
    return Arg::reg(src());
  if (K < 26)
    return Arg::imm(kSmallImms[P.ConsumeIntegralInRange<size_t>(
        0, kSmallImms.size() - 1)]);
  if (K < 28)
    return Arg::imm(P.ConsumeIntegralInRange(Arg::kMinValue, Arg::kMaxValue));
  if (K < 31)
    return Arg::constant(
        B.addConstant(constantValue(P.ConsumeIntegralInRange(0, 9))));
  return Arg::func(
      Funcs[P.ConsumeIntegralInRange<size_t>(0, Funcs.size() - 1)].Index);
}

Label Generator::label() {
  return Labels[P.ConsumeIntegralInRange<size_t>(0, Labels.size() - 1)];
}

void Generator::instruction(FunctionBuilder &F) {
  int Kind = P.ConsumeIntegralInRange(0, 31);
  if (Kind >= 21 && Kind <= 25 && Labels.empty())
    Kind = 0;
  if (Kind < 10) {
    const char *Op =
        kBinary[P.ConsumeIntegralInRange<size_t>(0, kBinary.size() - 1)];
    F.emitCall(dst(), packed(Op), operands(2));
  } else if (Kind < 12) {
    const char *Op =
        kUnary[P.ConsumeIntegralInRange<size_t>(0, kUnary.size() - 1)];
    F.emitCall(dst(), packed(Op), operands(1));
  } else if (Kind < 14) {
    vm::RegName D = dst();
    F.emitCall(D, packed("vm.builtin.make_tuple"),
               operands(P.ConsumeIntegralInRange(0, 3)));
    if (D != vm::kVoidRegister)
      LastTuple = D;
  } else if (Kind < 16) {
    Arg Index = P.ConsumeBool() ? Arg::imm(P.ConsumeIntegralInRange(-1, 3))
                                : operand();
    vm::RegName Tuple =
        LastTuple >= 0 && P.ConsumeIntegralInRange(0, 3) != 0 ? LastTuple
                                                               : reg();
    F.emitCall(dst(), packed("vm.builtin.tuple_getitem"),
               {Arg::reg(Tuple), Index});
  } else if (Kind < 20) {
    // Mostly calls down the list of functions; recursion (a call of this
    // function or one before it) ends only under an `if`.
    size_t Lo = Current + 1 < Funcs.size() && P.ConsumeIntegralInRange(0, 3) != 0
                    ? Current + 1
                    : 0;
    const Signature &G = Funcs[P.ConsumeIntegralInRange<size_t>(Lo, Funcs.size() - 1)];
    F.emitCall(dst(), G.Index, operands(G.NumParams));
  } else if (Kind == 20) {
    // A closure over one of the program's functions, a call of one (the
    // callee need not be a closure: that is a TypeError), or a call of a
    // one-parameter function under nested runs of the VM.
    const int Which = P.ConsumeIntegralInRange(0, 2);
    if (Which == 2) {
      reenter(F);
    } else if (Which == 0) {
      const Signature &G =
          Funcs[P.ConsumeIntegralInRange<size_t>(0, Funcs.size() - 1)];
      std::vector<Arg> Args = {Arg::func(G.Index)};
      for (Arg A : operands(P.ConsumeIntegralInRange<int64_t>(0, G.NumParams)))
        Args.push_back(A);
      F.emitCall(dst(), packed("vm.builtin.make_closure"), Args);
    } else {
      std::vector<Arg> Args = {Arg::vm(), Arg::reg(reg())};
      for (Arg A : operands(P.ConsumeIntegralInRange(0, 2)))
        Args.push_back(A);
      F.emitCall(dst(), packed("vm.builtin.invoke_closure"), Args);
    }
  } else if (Kind < 24) {
    F.emitIf(src(), label());
  } else if (Kind < 26) {
    F.emitGoto(label());
  } else if (Kind == 26) {
    F.emitRet(src());
  } else {
    // A counted loop's latch: i = i + 1; c = i >= k; if c else L (with L
    // before it, the loop's header; after it, a forward branch).
    vm::RegName I = reg(), C = reg();
    F.emitCall(I, packed("scalar.add"), {Arg::reg(I), Arg::imm(1)});
    F.emitCall(C, packed(P.ConsumeBool() ? "scalar.ge" : "scalar.lt"),
               {Arg::reg(I), operand()});
    if (!Labels.empty())
      F.emitIf(C, label());
  }
}

void Generator::reenter(FunctionBuilder &F) {
  std::vector<size_t> Unary;
  for (size_t I = 0; I < Funcs.size(); ++I)
    if (Funcs[I].NumParams == 1)
      Unary.push_back(I); // main at least
  const Signature &G =
      Funcs[Unary[P.ConsumeIntegralInRange<size_t>(0, Unary.size() - 1)]];
  const int64_t K = kReenterDepths[P.ConsumeIntegralInRange<size_t>(
      0, kReenterDepths.size() - 1)];
  F.emitCall(dst(), ReenterIndex, {Arg::imm(K), Arg::func(G.Index), operand()});
}

void Generator::reenterBody() {
  FunctionBuilder &F = B.beginFunction("reenter", {"k", "f", "x"});
  const vm::RegName Cond = 3, Result = 4;
  Label Deeper = F.newLabel();
  F.emitCall(Cond, packed("scalar.lt"), {Arg::reg(0), Arg::imm(1)});
  F.emitIf(Cond, Deeper);
  F.emitCall(Result, packed("vm.builtin.invoke_closure"),
             {Arg::vm(), Arg::reg(1), Arg::reg(2)});
  F.emitRet(Result);
  F.bind(Deeper);
  F.emitCall(Cond, packed("scalar.sub"), {Arg::reg(0), Arg::imm(1)});
  F.emitCall(Result, packed("vm.builtin.invoke_closure"),
             {Arg::vm(), Arg::func(ReenterIndex), Arg::reg(Cond), Arg::reg(1),
              Arg::reg(2)});
  F.emitRet(Result);
  B.endFunction();
}

void Generator::body(const Signature &S) {
  std::vector<std::string> Params;
  for (int64_t I = 0; I < S.NumParams; ++I)
    Params.push_back(S.Index == 0 ? "n" : "p" + std::to_string(I));
  FunctionBuilder &F = B.beginFunction(S.Name, Params);
  NumRegs = S.NumParams + P.ConsumeIntegralInRange<int64_t>(1, 6);
  // Prologue: every register but the parameters gets a value, so that
  // every read is definitely assigned wherever the jumps go.
  for (int64_t R = S.NumParams; R < NumRegs; ++R) {
    Arg V = P.ConsumeIntegralInRange(0, 7) == 0
                ? Arg::constant(B.addConstant(
                      constantValue(P.ConsumeIntegralInRange(0, 9))))
                : Arg::imm(kSmallImms[P.ConsumeIntegralInRange<size_t>(
                      0, kSmallImms.size() - 1)]);
    if (S.NumParams > 0 && P.ConsumeIntegralInRange(0, 3) == 0)
      V = Arg::reg(P.ConsumeIntegralInRange<int64_t>(0, S.NumParams - 1));
    F.emitCall(R, packed("vm.builtin.copy"), {V});
  }
  Labels.clear();
  LastTuple = -1;
  std::vector<bool> Bound;
  for (int I = 0, N = P.ConsumeIntegralInRange(0, 4); I < N; ++I) {
    Labels.push_back(F.newLabel());
    Bound.push_back(false);
  }
  auto BindOne = [&](size_t I) {
    if (!Bound[I]) {
      F.bind(Labels[I]);
      Bound[I] = true;
    }
  };
  int NumInstrs = P.ConsumeIntegralInRange(1, 24);
  for (int I = 0; I < NumInstrs && P.remaining_bytes() > 0; ++I) {
    if (!Labels.empty() && P.ConsumeIntegralInRange(0, 3) == 0)
      BindOne(P.ConsumeIntegralInRange<size_t>(0, Labels.size() - 1));
    instruction(F);
  }
  for (size_t I = 0; I < Labels.size(); ++I)
    BindOne(I);
  F.emitRet(reg());
  B.endFunction();
}

GeneratedProgram Generator::run() {
  GeneratedProgram G;
  G.Arg = P.ConsumeIntegralInRange<int64_t>(-3, 20);
  int NumFuncs = P.ConsumeIntegralInRange(1, 4);
  for (int I = 0; I < NumFuncs; ++I) {
    Signature S;
    S.Name = I == 0 ? "main" : "f" + std::to_string(I);
    S.NumParams = I == 0 ? 1 : P.ConsumeIntegralInRange<int64_t>(0, 3);
    std::vector<std::string> Params;
    for (int64_t J = 0; J < S.NumParams; ++J)
      Params.push_back(I == 0 ? "n" : "p" + std::to_string(J));
    S.Index = B.declareFunction(S.Name, Params);
    Funcs.push_back(S);
  }
  ReenterIndex = B.declareFunction("reenter", {"k", "f", "x"});
  for (Current = 0; Current < Funcs.size(); ++Current)
    body(Funcs[Current]);
  reenterBody();
  G.Exe = B.finish();
  return G;
}

} // namespace

GeneratedProgram generateProgram(FuzzedDataProvider &P) {
  return Generator(P).run();
}

} // namespace vmjit::fuzz
