//===- vmjit/vm/bind_params.h - Binding a function's parameters -*- C++ -*-===//
//
// TVM's BindParams at run time: the weights of a model given once. Binding
// some parameters of a bytecode function makes an executable whose function
// of that name takes only the others (in order) and reads the bound values
// as constants. Kernel calls the kernels' effects prove to read only
// constants and to write only fresh allocations then run once, at bind
// time, and their results become constants too (docs/tvm.md#binding-
// parameters).
//
//   std::vector<vm::ParamBinding> P = {{"fc1.weight", W1}, {"fc2.weight", W2}};
//   vm::BindResult B = vm::bindParams(*VM, "main", P, Effects);
//   auto Bound = vm::VirtualMachine::create(B.Exe, SameOptions);
//   Any R = Bound->call("main", X, B1, B2);
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_BIND_PARAMS_H
#define VMJIT_VM_BIND_PARAMS_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/any.h"
#include "vmjit/runtime/kernel_effects.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::vm {

class VirtualMachine;

/// One bound parameter: by name (FunctionInfo::ParamNames) when `Name` is
/// not empty, else by its 0-based `Index`.
struct ParamBinding {
  std::string Name;
  int64_t Index = -1;
  /// The value every call then sees: a tensor, or a tuple of them (the
  /// llm's packed parameters), or any other value. Tensors are used as
  /// they are, not copied: the caller must not change them afterwards.
  Any Value;

  ParamBinding(std::string Name, Any Value)
      : Name(std::move(Name)), Value(std::move(Value)) {}
  ParamBinding(int64_t Index, Any Value)
      : Index(Index), Value(std::move(Value)) {}
};

/// The proven effects of the kernel named `Kernel` (a packed function of
/// the executable), or nullopt when nothing is proven: its calls are then
/// never folded (jit::KernelTier::effects() provides them).
using KernelEffectsLookup =
    std::function<std::optional<KernelEffects>(std::string_view Kernel)>;

/// A lookup in `Effects` (kept by reference: it must outlive the lookup),
/// such as jit::KernelTier::effects().
KernelEffectsLookup
effectsIn(const std::map<std::string, KernelEffects> &Effects);

/// A call that binding ran once and removed.
struct FoldedCall {
  std::string Function;
  /// The callee: a kernel, or vm.builtin.tuple_getitem of a bound tuple.
  std::string Callee;
  /// The instruction within the function, as the unbound function numbers
  /// them (`vmjit dis`).
  int64_t Instr = 0;
};

/// What binding made.
struct BindResult {
  /// The executable with the function rewritten; the other functions, the
  /// function table's order and the constants are those of the input (the
  /// bound values and folded results are new constants after them).
  std::shared_ptr<Executable> Exe;
  /// The folded calls, in the order they were run.
  std::vector<FoldedCall> Folded;
};

/// Binds `Params` of bytecode function `Func` of `VM`'s executable. The
/// checks of a bound parameter the function makes
/// (`vm.builtin.check_tensor_info`, `check_tuple_info`, `match_shape`
/// against immediates) run now and are removed. Then every call of a
/// kernel whose `Effects` say it touches only its arguments' memory, whose
/// other arguments are all constants and whose written arguments are each
/// a fresh `vm.builtin.alloc_tensor` of constant shape and dtype, read only
/// by later calls of kernels proven not to write them before the register
/// is redefined, runs once on `VM`'s pool entry; its outputs become
/// constants and the call and the allocations left unused are removed.
/// `VM` is not changed: run the result on a VM created like it.
///
/// Throws Error("BindError") naming the function and the parameter for a
/// parameter that does not exist or is bound twice, a value the function's
/// checks refuse, a function that another function calls, and a kernel
/// call whose effects say it writes a bound value or a constant.
BindResult bindParams(VirtualMachine &VM, std::string_view Func,
                      std::span<const ParamBinding> Params,
                      const KernelEffectsLookup &Effects = {});

} // namespace vmjit::vm

#endif // VMJIT_VM_BIND_PARAMS_H
