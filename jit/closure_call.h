//===- closure_call.h - Direct calls of own closures -----------*- C++ -*-===//
//
// Private to jit/. invoke_closure(%vm, %f, args...) where the one
// definition of %f in the function is make_closure(@G, captured...): tier
// 2 calls G itself, with (args..., captured...), whenever %f holds at the
// call a closure of the pool's G with that many captured values; anything
// else calls invoke_closure as written (docs/jit.md#closure-calls).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CLOSURE_CALL_H
#define VMJIT_JIT_CLOSURE_CALL_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/jit/callee_binding.h"

#include <optional>
#include <vector>

namespace vmjit::jit {

/// The closure an invoke_closure call most likely calls.
struct ClosureCall {
  int64_t Target;      ///< G, a bytecode function
  int64_t NumCaptured; ///< the make_closure's captured values
};

/// What the call `I` of function `Func` calls, when it is the standard
/// invoke_closure (CalleeBinding::Standard) of a closure the function
/// makes itself.
std::optional<ClosureCall>
closureCallAt(const vm::Executable &Exe, int64_t Func,
              const std::vector<CalleeBinding> &Callees, vm::InstrView I);

} // namespace vmjit::jit

#endif // VMJIT_JIT_CLOSURE_CALL_H
