//===- forward_dataflow.h - One forward pass over a function --*- C++ -*-===//
//
// Private to jit/: the worklist both forward dataflows of tier 2 (kinds,
// tensor facts) run over one bytecode function: a state per instruction
// (a fact per register before it), control followed by successors().
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_FORWARD_DATAFLOW_H
#define VMJIT_JIT_FORWARD_DATAFLOW_H

#include "successors.h"
#include "vmjit/bytecode/executable.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace vmjit::jit {

/// Table[PC][R]: the fact about register R before instruction PC of
/// bytecode function `Func`, `Bottom` where no path reaches. Control
/// enters at pc 0 with `Entry` and at each of `Generic` (loop headers
/// entered knowing nothing) with `Unknown`. `Join(State, In, First)`
/// merges a state arriving at an instruction (First: the first to
/// arrive there) and says whether State changed; `Transfer(PC, I, Out)`
/// turns the state before instruction I into the state after it.
template <typename Fact, typename JoinFn, typename TransferFn>
std::vector<std::vector<Fact>>
forwardDataflow(const vm::Executable &Exe, int64_t Func, Fact Bottom,
                const std::vector<Fact> &Entry,
                const std::vector<int64_t> &Generic, Fact Unknown, JoinFn Join,
                TransferFn Transfer) {
  const vm::FunctionInfo &F = Exe.function(Func);
  const int64_t N = F.numInstrs();
  const size_t NumRegs = static_cast<size_t>(F.RegisterFileSize);
  std::vector<std::vector<Fact>> T(static_cast<size_t>(N),
                                   std::vector<Fact>(NumRegs, Bottom));
  std::vector<char> Reached(static_cast<size_t>(N), 0);
  std::vector<char> Queued(static_cast<size_t>(N), 0);
  std::deque<int64_t> Work;
  auto Push = [&](int64_t PC, const std::vector<Fact> &In) {
    if (PC < 0 || PC >= N)
      return;
    const size_t K = static_cast<size_t>(PC);
    const bool First = !Reached[K];
    Reached[K] = 1;
    if (Join(T[K], In, First) && !Queued[K]) {
      Queued[K] = 1;
      Work.push_back(PC);
    }
  };
  Push(0, Entry);
  for (int64_t H : Generic)
    Push(H, std::vector<Fact>(NumRegs, Unknown));
  while (!Work.empty()) {
    const int64_t PC = Work.front();
    Work.pop_front();
    Queued[static_cast<size_t>(PC)] = 0;
    std::vector<Fact> Out = T[static_cast<size_t>(PC)];
    vm::InstrView I = Exe.instr(F.StartInstr + PC);
    Transfer(PC, I, Out);
    for (int64_t Next : successors(I, PC))
      Push(Next, Out);
  }
  return T;
}

/// The join of a must-dataflow, for forwardDataflow: the first state to
/// arrive at an instruction is taken whole; a later one turns every fact it
/// disagrees with into `Conflict`. Says whether State changed.
template <typename Fact>
bool joinAgreeing(std::vector<Fact> &State, const std::vector<Fact> &In,
                  bool First, Fact Conflict) {
  if (First) {
    State = In;
    return true;
  }
  bool Changed = false;
  for (size_t R = 0; R < State.size(); ++R)
    if (State[R] != Conflict && State[R] != In[R]) {
      State[R] = Conflict;
      Changed = true;
    }
  return Changed;
}

} // namespace vmjit::jit

#endif // VMJIT_JIT_FORWARD_DATAFLOW_H
