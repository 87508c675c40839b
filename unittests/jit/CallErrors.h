//===- CallErrors.h - What a VM call raised, for the JIT tests --*- C++ -*-===//
//
// The JIT tests compare the errors of the same call in several modes; these
// helpers turn "the call raised" into text that EXPECT_EQ can compare.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_CALLERRORS_H
#define VMJIT_UNITTESTS_JIT_CALLERRORS_H

#include "vmjit/runtime/error.h"
#include "vmjit/vm/virtual_machine.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vmjit::jittest {

/// The Error that VM.call(F, Args...) raises, or nothing if it returns.
template <typename... A>
std::optional<Error> raisedBy(vm::VirtualMachine &VM, std::string_view F,
                              A &&...Args) {
  try {
    VM.call(F, std::forward<A>(Args)...);
  } catch (const Error &E) {
    return E;
  }
  return std::nullopt;
}

/// The raised error formatted (kind, message, frames), or "no error".
template <typename... A>
std::string errorOf(vm::VirtualMachine &VM, std::string_view F, A &&...Args) {
  auto E = raisedBy(VM, F, std::forward<A>(Args)...);
  return E ? E->format() : "no error";
}

/// The raised error's kind, or "no error".
template <typename... A>
std::string kindOf(vm::VirtualMachine &VM, std::string_view F, A &&...Args) {
  auto E = raisedBy(VM, F, std::forward<A>(Args)...);
  return E ? E->kind() : "no error";
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_CALLERRORS_H
