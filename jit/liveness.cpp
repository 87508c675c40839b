//===- liveness.cpp - The registers a function reads later ---------------===//

#include "liveness.h"
#include "successors.h"
#include "vmjit/bytecode/bytecode.h"

#include <deque>

namespace vmjit::jit {

namespace {

using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

/// The live registers before instruction I, given those after it.
std::vector<bool> liveBefore(InstrView I, std::vector<bool> Live) {
  auto Read = [&](vm::RegName R) {
    if (!vm::isSpecialRegister(R))
      Live[static_cast<size_t>(R)] = true;
  };
  switch (I.opcode()) {
  case Opcode::Call:
    if (!vm::isSpecialRegister(I.callDst()))
      Live[static_cast<size_t>(I.callDst())] = false;
    for (int64_t K = 0; K < I.callNumArgs(); ++K)
      if (I.callArg(K).kind() == ArgKind::Register)
        Read(I.callArg(K).value());
    break;
  case Opcode::Ret:
    Read(I.retReg());
    break;
  case Opcode::Goto:
    break;
  case Opcode::If:
    Read(I.ifCond());
    break;
  }
  return Live;
}

} // namespace

LiveTable liveAfter(const vm::Executable &Exe, int64_t Func) {
  const vm::FunctionInfo &F = Exe.function(Func);
  const int64_t N = F.numInstrs();
  const size_t NumRegs = static_cast<size_t>(F.RegisterFileSize);
  LiveTable Out(static_cast<size_t>(N), std::vector<bool>(NumRegs, false));
  std::vector<std::vector<int64_t>> Preds(static_cast<size_t>(N));
  for (int64_t PC = 0; PC < N; ++PC)
    for (int64_t S : successors(Exe.instr(F.StartInstr + PC), PC))
      if (S >= 0 && S < N)
        Preds[static_cast<size_t>(S)].push_back(PC);
  std::deque<int64_t> Work;
  std::vector<char> Queued(static_cast<size_t>(N), 1);
  for (int64_t PC = N - 1; PC >= 0; --PC)
    Work.push_back(PC);
  while (!Work.empty()) {
    const int64_t PC = Work.front();
    Work.pop_front();
    Queued[static_cast<size_t>(PC)] = 0;
    std::vector<bool> In =
        liveBefore(Exe.instr(F.StartInstr + PC), Out[static_cast<size_t>(PC)]);
    for (int64_t P : Preds[static_cast<size_t>(PC)]) {
      std::vector<bool> &PO = Out[static_cast<size_t>(P)];
      bool Grew = false;
      for (size_t R = 0; R < NumRegs; ++R)
        if (In[R] && !PO[R]) {
          PO[R] = true;
          Grew = true;
        }
      if (Grew && !Queued[static_cast<size_t>(P)]) {
        Queued[static_cast<size_t>(P)] = 1;
        Work.push_back(P);
      }
    }
  }
  return Out;
}

} // namespace vmjit::jit
