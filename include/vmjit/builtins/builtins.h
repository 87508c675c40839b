//===- vmjit/builtins/builtins.h - The vm.builtin.* functions ---*- C++ -*-===//
//
// The VM builtins: the contract's (copy, make_tuple, tuple_getitem,
// read_if_cond, null_value, make_closure, invoke_closure, alloc_storage,
// alloc_tensor, shape_of, check_tensor_info, alloc_shape_heap, match_shape,
// make_shape) and the rest of the CPU set of Apache TVM's Relax VM
// (match_prim_value, make_prim_value, check_shape_info, check_tuple_info,
// check_prim_value_info, check_func_info, tuple_reset_item, call_tir_dyn,
// reshape, tensor_to_shape, ensure_zero_offset, to_device), all with TVM's
// argument orders. They are registered in the global registry when the
// first VM is created. docs/tvm-builtins.md describes each one.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_BUILTINS_BUILTINS_H
#define VMJIT_BUILTINS_BUILTINS_H

#include "vmjit/runtime/function.h"
#include "vmjit/runtime/tensor.h"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace vmjit {
class Registry;
}

namespace vmjit::vm {

/// Copies Src's elements, following its strides (zero or negative too),
/// into `Dst`: compact row-major memory of Src.nbytes() bytes. Src must be
/// on the CPU; a strided tensor of a packed (sub-byte) dtype is a
/// ValueError.
void copyElements(const Tensor &Src, void *Dst);

/// Registers vm.builtin.* and the standard kernels into the global
/// registry, once per process; a name registered there earlier (a user's
/// replacement) keeps its function. Thread-safe.
void registerVMBuiltins();

/// The standard function `Name` (vm.builtin.*, scalar.*, tensor.*,
/// kernel.*) as vmjit defines it, whatever the global registry now holds
/// under that name: the JIT replaces a call with its inline form only when
/// the callee is this very function.
std::optional<Function> standardFunction(std::string_view Name);

/// Registers vm.builtin.* (only) into `R`, e.g. a registry given to a VM
/// through VMOptions. Throws ValueError if a name is already taken there.
void registerVMBuiltins(Registry &R);

/// A closure: calling it calls `Target` with the call's own arguments
/// followed by `Captured`. It is a Function (type 68), so it can be called
/// wherever a function can, and prints as {"function": NAME}.
Function makeClosure(Function Target, std::vector<Any> Captured);

/// Sees a kernel call made inside a builtin (the paged KV cache's
/// attention runs the model's kernels itself): the kernel and its
/// arguments, borrowed for the call (DLTensor pointers among them are the
/// cache's own and change after it).
using KernelCallObserver = void (*)(void *Context, const Function &Kernel,
                                    std::span<const AnyView> Args);
/// Makes `Observer` see the builtins' kernel calls on the calling thread
/// (nullptr: none). For benchmarks' kernels-only floors and tests.
void setBuiltinKernelObserver(KernelCallObserver Observer,
                              void *Context) noexcept;

} // namespace vmjit::vm

#endif // VMJIT_BUILTINS_BUILTINS_H
