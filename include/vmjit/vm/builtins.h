//===- vmjit/vm/builtins.h - The vm.builtin.* functions ----------*- C++ -*-===//
//
// The VM builtins of the contract (names and semantics follow Apache TVM's
// Relax VM builtins): copy, make_tuple, tuple_getitem, read_if_cond,
// null_value, make_closure, invoke_closure, alloc_storage, alloc_tensor,
// shape_of, check_tensor_info, alloc_shape_heap, match_shape, make_shape.
// They are registered in the global registry when the first VM is created.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_BUILTINS_H
#define VMJIT_VM_BUILTINS_H

#include "vmjit/runtime/function.h"

#include <vector>

namespace vmjit::vm {

/// Registers vm.builtin.* (and, when linked in, the standard kernels) into
/// the global registry, once per process. Thread-safe.
void registerVMBuiltins();

/// A closure: calling it calls `Target` with the call's own arguments
/// followed by `Captured`. It is a Function (type 68), so it can be called
/// wherever a function can, and prints as {"function": NAME}.
Function makeClosure(Function Target, std::vector<Any> Captured);

} // namespace vmjit::vm

#endif // VMJIT_VM_BUILTINS_H
