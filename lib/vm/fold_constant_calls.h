//===- lib/vm/fold_constant_calls.h - Calls on constants, once --*- C++ -*-===//
//
// Private to lib/vm: the state binding a function's parameters shares with
// the folding of its calls on constants (bind_params.cpp,
// fold_constant_calls.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_VM_FOLD_CONSTANT_CALLS_H
#define VMJIT_LIB_VM_FOLD_CONSTANT_CALLS_H

#include "function_code.h"

#include "vmjit/vm/bind_params.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vmjit::vm {

/// One function being bound.
struct BindState {
  VirtualMachine &VM;
  const Executable &Exe;
  int64_t Func;
  /// The function table of the result (Exe's, perhaps with entries added).
  std::vector<FunctionInfo> Table;
  FunctionCode Code;
  int64_t NumRegs;
  /// Constants after Exe's (bound values, folded results).
  std::vector<Any> NewConstants;
  /// What each new constant that is a bound value is ("parameter 'w'",
  /// "element 3 of parameter 'params'"): immutable, named in errors.
  std::map<int64_t, std::string> BoundConsts;
  const KernelEffectsLookup &Effects;
  std::vector<FoldedCall> Folded;

  const std::string &funcName() const { return Exe.function(Func).Name; }
  const std::string &calleeName(const CodeInstr &C) const {
    return Table[size_t(C.Callee)].Name;
  }
  /// The value of constant `Index` (Exe's or a new one).
  const Any &constant(int64_t Index) const;
  /// Appends a constant; returns its index.
  int64_t addConstant(Any V);
  /// The callee's effects when it is a packed function with proven effects
  /// whose argument count matches the call's.
  std::optional<KernelEffects> effectsOf(const CodeInstr &C) const;
  /// "function 'F', instruction N (call 'G')": where errors point.
  std::string where(const CodeInstr &C) const;
};

/// Whether argument `A` is known at bind time (a constant or immediate).
inline bool isConstantArg(Arg A) {
  return A.kind() == ArgKind::ConstIdx || A.kind() == ArgKind::Immediate;
}

/// Calls function `Callee` of `S.VM` on the constant `Args` (and
/// `Outputs`, written in place, for register arguments in order); the error
/// message when it fails.
std::optional<std::string> callAtBindTime(BindState &S, int64_t Callee,
                                          const std::vector<Arg> &Args,
                                          const std::vector<Any> &Outputs);

/// Runs every foldable call once (bind_params.h), repeatedly, until none is
/// left; records them in S.Folded.
void foldConstantCalls(BindState &S);

/// Removes the allocations, tuple reads and kills of registers nothing
/// reads any more.
void removeUnusedDefinitions(BindState &S);

} // namespace vmjit::vm

#endif // VMJIT_LIB_VM_FOLD_CONSTANT_CALLS_H
