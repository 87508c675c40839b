//===- tensor_facts.h - Tensors of known rank and dtype ---------*- C++ -*-===//
//
// Private to jit/: a forward dataflow over one bytecode function that finds,
// before each instruction, the registers that hold a tensor of a known rank
// and dtype on every path tier-2 code takes there: from what tier 2
// speculates (speculation.h: FunctionSpeculation::ParamTensors and
// ResultTensors, each guarded where the value comes in) and from
// check_tensor_info calls that passed. Tier 2 then drops the checks of
// check_tensor_info and match_shape that these facts already answer
// (docs/jit.md#tensor-feedback).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_TENSOR_FACTS_H
#define VMJIT_JIT_TENSOR_FACTS_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/jit/speculation.h"

#include <cstdint>
#include <vector>

namespace vmjit::jit {

/// Facts[PC][R]: 0, or the word (vm::feedback::tensorWord) of the tensor
/// register R holds before instruction PC of bytecode function `Func`
/// whenever tier-2 code speculating `Spec` gets there: its entries guard
/// the parameters at pc 0 and, at a loop header that is not generic, every
/// fact of the table there (the on-stack-replacement entry).
using TensorFacts = std::vector<std::vector<uint64_t>>;
TensorFacts inferTensorFacts(const vm::Executable &Exe, int64_t Func,
                             const std::vector<CalleeBinding> &Callees,
                             bool InlineBuiltins,
                             const FunctionSpeculation &Spec);

/// The word of the tensor check_tensor_info's call `I` checks for, when its
/// rank is an immediate other than -1 and its dtype a dtype constant;
/// else 0.
uint64_t checkedTensorWord(const vm::Executable &Exe, vm::InstrView I);

/// Per register of bytecode function `Func`: whether it is the tensor
/// argument of a check_tensor_info or match_shape tier 2 inlines. Only
/// there does speculating on a tensor's rank and dtype save a check.
std::vector<bool>
tensorCheckedRegisters(const vm::Executable &Exe, int64_t Func,
                       const std::vector<CalleeBinding> &Callees,
                       bool InlineBuiltins);

} // namespace vmjit::jit

#endif // VMJIT_JIT_TENSOR_FACTS_H
