//===- lib/vm/function_code.cpp - A function's code to rewrite --*- C++ -*-===//
//
// Decoding one function into an editable list, its blocks and register
// uses, and encoding it back into an executable (function_code.h).
//
//===----------------------------------------------------------------------===//

#include "function_code.h"

#include <algorithm>
#include <map>
#include <string>

namespace vmjit::vm {

bool CodeInstr::reads(RegName R) const {
  switch (Op) {
  case Opcode::Call:
    return std::any_of(Args.begin(), Args.end(), [&](Arg A) {
      return A.kind() == ArgKind::Register && A.value() == R;
    });
  case Opcode::Ret:
  case Opcode::If:
    return Reg == R;
  case Opcode::Goto:
    return false;
  }
  return false;
}

FunctionCode FunctionCode::decode(const Executable &Exe, int64_t Func) {
  const FunctionInfo &F = Exe.function(Func);
  FunctionCode Code;
  for (int64_t I = 0; I < F.numInstrs(); ++I) {
    const InstrView V = Exe.instr(F.StartInstr + I);
    CodeInstr C;
    C.Op = V.opcode();
    C.Origin = I;
    switch (C.Op) {
    case Opcode::Call:
      C.Dst = V.callDst();
      C.Callee = V.callFunc();
      for (int64_t A = 0; A < V.callNumArgs(); ++A)
        C.Args.push_back(V.callArg(A));
      break;
    case Opcode::Ret:
      C.Reg = V.retReg();
      break;
    case Opcode::Goto:
      C.Target = I + V.gotoOffset();
      break;
    case Opcode::If:
      C.Reg = V.ifCond();
      C.Target = I + V.ifFalseOffset();
      break;
    }
    Code.Instrs.push_back(std::move(C));
  }
  return Code;
}

namespace {

void encodeInstr(const CodeInstr &C, int64_t Offset, std::vector<Word> &Out) {
  Out.push_back(static_cast<Word>(C.Op));
  switch (C.Op) {
  case Opcode::Call:
    Out.push_back(C.Dst);
    Out.push_back(C.Callee);
    Out.push_back(static_cast<Word>(C.Args.size()));
    for (Arg A : C.Args)
      Out.push_back(A.word());
    break;
  case Opcode::Ret:
    Out.push_back(C.Reg);
    break;
  case Opcode::Goto:
    Out.push_back(Offset);
    break;
  case Opcode::If:
    Out.push_back(C.Reg);
    Out.push_back(Offset);
    break;
  }
}

} // namespace

std::vector<Word> FunctionCode::encode() const {
  // New numbers: the prologue first; a removed instruction takes the
  // number of the next live one.
  const int64_t N = static_cast<int64_t>(Instrs.size());
  std::vector<int64_t> NewIndex(size_t(N) + 1);
  int64_t Next = static_cast<int64_t>(Prologue.size());
  for (int64_t I = 0; I < N; ++I) {
    NewIndex[size_t(I)] = Next;
    if (!Instrs[size_t(I)].Dead)
      ++Next;
  }
  NewIndex[size_t(N)] = Next;
  std::vector<Word> Out;
  for (const CodeInstr &C : Prologue)
    encodeInstr(C, 0, Out);
  for (int64_t I = 0; I < N; ++I) {
    const CodeInstr &C = Instrs[size_t(I)];
    if (C.Dead)
      continue;
    const bool Jumps = C.Op == Opcode::Goto || C.Op == Opcode::If;
    encodeInstr(C, Jumps ? NewIndex[size_t(C.Target)] - NewIndex[size_t(I)] : 0,
                Out);
  }
  return Out;
}

CodeFacts::CodeFacts(const FunctionCode &Code, int64_t NumRegs)
    : BlockOf(Code.Instrs.size(), -1), Readers(size_t(NumRegs)),
      Writers(size_t(NumRegs)) {
  const auto &Is = Code.Instrs;
  const int64_t N = static_cast<int64_t>(Is.size());
  // Leaders: the entry, jump targets and what follows a jump or a return.
  std::vector<char> Leader(size_t(N) + 1, 0);
  Leader[0] = 1;
  for (int64_t I = 0; I < N; ++I) {
    if (Is[size_t(I)].Op == Opcode::Call)
      continue;
    Leader[size_t(I) + 1] = 1;
    if (Is[size_t(I)].Op != Opcode::Ret)
      Leader[size_t(Is[size_t(I)].Target)] = 1;
  }
  int64_t Block = -1;
  for (int64_t I = 0; I < N; ++I) {
    if (Leader[size_t(I)])
      ++Block;
    BlockOf[size_t(I)] = Block;
  }
  Preds.resize(size_t(Block) + 1);
  for (int64_t I = 0; I < N; ++I) {
    const CodeInstr &C = Is[size_t(I)];
    const int64_t B = BlockOf[size_t(I)];
    if (C.Op == Opcode::Goto || C.Op == Opcode::If)
      Preds[size_t(BlockOf[size_t(C.Target)])].push_back(B);
    const bool FallsThrough = C.Op == Opcode::Call || C.Op == Opcode::If;
    if (FallsThrough && I + 1 < N && Leader[size_t(I) + 1])
      Preds[size_t(BlockOf[size_t(I) + 1])].push_back(B);
    if (C.Dead)
      continue;
    if (C.Op == Opcode::Call && !isSpecialRegister(C.Dst))
      Writers[size_t(C.Dst)].push_back(I);
    auto Read = [&](RegName R) {
      if (R >= 0 && R < NumRegs &&
          (Readers[size_t(R)].empty() || Readers[size_t(R)].back() != I))
        Readers[size_t(R)].push_back(I);
    };
    if (C.Op == Opcode::Ret || C.Op == Opcode::If)
      Read(C.Reg);
    for (Arg A : C.Args)
      if (A.kind() == ArgKind::Register)
        Read(A.value());
  }
}

int64_t CodeFacts::nextWrite(RegName R, int64_t Instr) const {
  for (int64_t W : Writers[size_t(R)])
    if (W > Instr && block(W) == block(Instr))
      return W;
  return -1;
}

bool CodeFacts::readsConfinedAfter(RegName R, int64_t Instr,
                                   int64_t Except) const {
  const int64_t End = nextWrite(R, Instr);
  return std::all_of(
      Readers[size_t(R)].begin(), Readers[size_t(R)].end(), [&](int64_t Rd) {
        return Rd == Except || (block(Rd) == block(Instr) && Rd > Instr &&
                                (End < 0 || Rd <= End));
      });
}

bool CodeFacts::mayBeRedefinedAt(RegName R, int64_t Instr) const {
  const int64_t B = block(Instr);
  for (int64_t W : Writers[size_t(R)])
    if (block(W) == B && W < Instr)
      return true;
  // Blocks a write of R may have reached the end of (a fixed point).
  std::vector<char> Out(Preds.size(), 0);
  for (int64_t W : Writers[size_t(R)])
    Out[size_t(block(W))] = 1;
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (size_t Bl = 0; Bl < Preds.size(); ++Bl)
      for (int64_t P : Preds[Bl])
        if (Out[size_t(P)] && !Out[Bl]) {
          Out[Bl] = 1;
          Changed = true;
        }
  }
  return std::any_of(Preds[size_t(B)].begin(), Preds[size_t(B)].end(),
                     [&](int64_t P) { return Out[size_t(P)] != 0; });
}

std::shared_ptr<Executable> replaceFunction(const Executable &Exe,
                                            std::vector<FunctionInfo> Table,
                                            int64_t Func,
                                            const FunctionCode &Code,
                                            std::vector<Any> NewConstants) {
  std::vector<Word> Words;
  std::vector<SourcePos> Positions;
  const SourceMap *Sources = Exe.sourceMap();
  int64_t NumInstrs = 0;
  for (size_t F = 0; F < Table.size(); ++F) {
    FunctionInfo &Info = Table[F];
    if (Info.Kind != FunctionKind::Bytecode)
      continue;
    const int64_t Start = NumInstrs;
    if (static_cast<int64_t>(F) == Func) {
      const std::vector<Word> New = Code.encode();
      Words.insert(Words.end(), New.begin(), New.end());
      auto Add = [&](const CodeInstr &C) {
        ++NumInstrs;
        if (Sources)
          Positions.push_back(
              Sources
                  ->Instrs[size_t(Exe.function(Func).StartInstr + C.Origin)]);
      };
      for (const CodeInstr &C : Code.Prologue)
        Add(C);
      for (const CodeInstr &C : Code.Instrs)
        if (!C.Dead)
          Add(C);
    } else {
      const FunctionInfo &Old = Exe.function(static_cast<int64_t>(F));
      for (int64_t I = Old.StartInstr; I < Old.EndInstr; ++I) {
        const InstrView V = Exe.instr(I);
        Words.insert(Words.end(), V.words(), V.words() + V.numWords());
        if (Sources)
          Positions.push_back(Sources->Instrs[size_t(I)]);
      }
      NumInstrs += Old.numInstrs();
    }
    Info.StartInstr = Start;
    Info.EndInstr = NumInstrs;
  }
  std::vector<Any> Constants = Exe.constants();
  Constants.insert(Constants.end(), NewConstants.begin(), NewConstants.end());
  auto Out = Executable::create(std::move(Table), std::move(Constants),
                                std::move(Words));
  std::vector<DebugNames> Names;
  for (size_t F = 0; F < Out->functions().size(); ++F) {
    const bool Kept = static_cast<int64_t>(F) != Func &&
                      F < Exe.functions().size() &&
                      Exe.debugNames(static_cast<int64_t>(F));
    Names.push_back(Kept ? *Exe.debugNames(static_cast<int64_t>(F))
                         : DebugNames());
  }
  Out->setDebugNames(std::move(Names));
  std::vector<std::string> ConstNames;
  for (size_t C = 0; C < Out->constants().size(); ++C) {
    const std::string *N = Exe.constantName(C);
    ConstNames.push_back(N ? *N : std::string());
  }
  Out->setConstantNames(std::move(ConstNames));
  if (Sources)
    Out->setSourceMap(SourceMap{Sources->File, std::move(Positions)});
  std::map<size_t, std::string> Tails;
  for (size_t C = 0; C < Exe.constants().size(); ++C)
    if (const std::string *T = Exe.tvmTensorTail(C))
      Tails.emplace(C, *T);
  Out->setTvmTensorTails(std::move(Tails));
  return Out;
}

} // namespace vmjit::vm
