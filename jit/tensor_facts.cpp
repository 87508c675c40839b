//===- tensor_facts.cpp - Tensors of known rank and dtype -----------------===//

#include "tensor_facts.h"
#include "forward_dataflow.h"
#include "vmjit/vm/feedback.h"

#include <climits>

namespace vmjit::jit {

using vm::Arg;
using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

uint64_t checkedTensorWord(const vm::Executable &Exe, InstrView I) {
  if (I.callNumArgs() != 4)
    return 0;
  const Arg NDim = I.callArg(1), DType = I.callArg(2);
  if (NDim.kind() != ArgKind::Immediate || NDim.value() < 0 ||
      NDim.value() > INT32_MAX || DType.kind() != ArgKind::ConstIdx)
    return 0;
  const VMJITAny &C = Exe.constants()[static_cast<size_t>(DType.value())].raw();
  if (C.type_index != kVMJITDataType)
    return 0;
  return vm::feedback::tensorWord(static_cast<int32_t>(NDim.value()),
                                  C.v_dtype);
}

namespace {

/// The builtin tier 2 inlines at call `I`, if any.
SpecialBuiltin inlinedAt(const std::vector<CalleeBinding> &Callees,
                         bool InlineBuiltins, InstrView I) {
  return inlinedBuiltin(Callees[static_cast<size_t>(I.callFunc())],
                        InlineBuiltins);
}

/// Argument K of call `I` when it is an ordinary register, else -1.
int64_t registerArg(InstrView I, int64_t K) {
  const Arg A = I.callArg(K);
  return A.kind() == ArgKind::Register && !vm::isSpecialRegister(A.value())
             ? A.value()
             : -1;
}

} // namespace

std::vector<bool>
tensorCheckedRegisters(const vm::Executable &Exe, int64_t Func,
                       const std::vector<CalleeBinding> &Callees,
                       bool InlineBuiltins) {
  const vm::FunctionInfo &F = Exe.function(Func);
  std::vector<bool> Checked(static_cast<size_t>(F.RegisterFileSize), false);
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() != Opcode::Call || I.callNumArgs() == 0)
      continue;
    const SpecialBuiltin W = inlinedAt(Callees, InlineBuiltins, I);
    if (W != SpecialBuiltin::CheckTensorInfo && W != SpecialBuiltin::MatchShape)
      continue;
    if (const int64_t R = registerArg(I, 0); R >= 0)
      Checked[static_cast<size_t>(R)] = true;
  }
  return Checked;
}

TensorFacts inferTensorFacts(const vm::Executable &Exe, int64_t Func,
                             const std::vector<CalleeBinding> &Callees,
                             bool InlineBuiltins,
                             const FunctionSpeculation &Spec) {
  const vm::FunctionInfo &F = Exe.function(Func);
  const size_t NumRegs = static_cast<size_t>(F.RegisterFileSize);
  std::vector<uint64_t> Entry(NumRegs, 0);
  for (size_t K = 0; K < Spec.ParamTensors.size() && K < NumRegs &&
                     static_cast<int64_t>(K) < F.NumParams;
       ++K)
    Entry[K] = Spec.ParamTensors[K];
  // A fact holds before PC when it holds on every way there.
  auto Join = [](std::vector<uint64_t> &S, const std::vector<uint64_t> &In,
                 bool First) {
    return joinAgreeing<uint64_t>(S, In, First, 0);
  };
  auto Transfer = [&](int64_t PC, InstrView I, std::vector<uint64_t> &Out) {
    if (I.opcode() != Opcode::Call)
      return;
    const SpecialBuiltin W = inlinedAt(Callees, InlineBuiltins, I);
    uint64_t Result = 0;
    const vm::ResultFact Fact = vm::specialBuiltin(W).Result;
    if (Fact == vm::ResultFact::CheckedTensor) {
      // Past the check (inline or the builtin's own), x is such a
      // tensor, and so is the result (x itself).
      Result = checkedTensorWord(Exe, I);
      if (const int64_t X = registerArg(I, 0); X >= 0 && Result)
        Out[static_cast<size_t>(X)] = Result;
    } else if (Fact == vm::ResultFact::FirstArg &&
               vm::inlineFormApplies(W, I)) {
      if (const int64_t X = registerArg(I, 0); X >= 0)
        Result = Out[static_cast<size_t>(X)];
    } else if (W == SpecialBuiltin::None && !Spec.ResultTensors.empty()) {
      Result = Spec.ResultTensors[static_cast<size_t>(PC)];
    }
    if (!vm::isSpecialRegister(I.callDst()))
      Out[static_cast<size_t>(I.callDst())] = Result;
  };
  // A loop header whose entry guards nothing admits anything.
  return forwardDataflow<uint64_t>(Exe, Func, 0, Entry, Spec.GenericEntries, 0,
                                   Join, Transfer);
}

} // namespace vmjit::jit
