//===- builtins_debug.cpp - vm.builtin.invoke_debug_func ------------------===//
//
// vm.builtin.invoke_debug_func(io effect, name, line info, args...): what
// TVM's nn.debug_func (and op.print_) lowers to. It calls the global
// function `name` with (line info, args...) and returns the io effect,
// which must already be None (TVM lowers the effect to None).
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/string.h"

#include <fmt/format.h>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

void invokeDebugFunc(PackedArgs A, Any * /*Rv: stays None*/) {
  const char *Fn = "vm.builtin.invoke_debug_func";
  needArgs(Fn, A, 3, INT32_MAX);
  if (!A[0].isNone()) {
    if (A[0].typeIndex() < kVMJITStaticObjectBegin)
      detail::throwArgTypeError(Fn, 1, "None (the io effect)", A[0]);
    fail(Fn, fmt::format("the io effect must be lowered to None, but it is "
                         "{}",
                         A[0].typeName()));
  }
  const std::string Name = arg<std::string>(Fn, A, 1);
  const std::string Line = arg<std::string>(Fn, A, 2);
  std::optional<Function> Debug = Registry::global().find(Name);
  if (!Debug)
    fail(Fn, fmt::format("the debug function '{}' is not found; register "
                         "it as a global function first (vmjit.register_func "
                         "in Python)",
                         Name));
  std::vector<AnyView> Args(static_cast<size_t>(A.size() - 2));
  Args[0] = A[2];
  for (int32_t I = 3; I < A.size(); ++I)
    Args[static_cast<size_t>(I - 2)] = A[I];
  Debug->callPacked(Args.data(), static_cast<int32_t>(Args.size()));
}

} // namespace

void registerDebugBuiltins(GlobalDef &D) {
  D.defPacked("vm.builtin.invoke_debug_func", invokeDebugFunc);
}

} // namespace vmjit::vm::builtin
