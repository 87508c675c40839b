//===- CallErrors.h - What a VM call raised, for the JIT tests --*- C++ -*-===//
//
// The JIT tests compare the values and errors of the same call in several
// modes; these helpers turn "the call returned/raised" into text that
// EXPECT_EQ can compare.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_CALLERRORS_H
#define VMJIT_UNITTESTS_JIT_CALLERRORS_H

#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/string.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>

#include <functional>
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

/// "Kind: message" of the Error `F` raises, or "no error".
inline std::string errorText(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "no error";
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

/// A value as text: ints, floats (exactly), bools, strings, tuples
/// (recursively), functions by name, anything else by its type.
inline std::string describe(const Any &V) {
  if (auto I = V.as<int64_t>(); I && V.typeIndex() == kVMJITInt)
    return fmt::format("int {}", *I);
  if (V.typeIndex() == kVMJITBool)
    return fmt::format("bool {}", V.cast<bool>());
  if (V.typeIndex() == kVMJITFloat)
    return fmt::format("float {:.17g}", V.cast<double>());
  if (V.typeIndex() == kVMJITNone)
    return "null";
  if (auto S = V.as<String>())
    return fmt::format("str '{}'", S->view());
  if (auto A = V.as<Array>()) {
    std::string Out = "(";
    for (size_t K = 0; K < A->size(); ++K)
      Out += (K ? ", " : "") + describe((*A)[K]);
    return Out + ")";
  }
  if (auto F = V.as<Function>())
    return "function " + F->get()->name();
  return std::string(valueTypeName(V.raw()));
}

/// What a call did, as text: its value (describe) or the error it raised
/// (formatted), then the steps the VM has taken so far.
template <typename... A>
std::string outcome(vm::VirtualMachine &VM, std::string_view F, A &&...Args) {
  std::string Out;
  try {
    Out = describe(VM.call(F, std::forward<A>(Args)...));
  } catch (const Error &E) {
    Out = E.format();
  }
  return Out + fmt::format(" / {} steps", VM.stepsTaken());
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_CALLERRORS_H
