//===- type_error_hint.h - What a TypeError adds ----------------*- C++ -*-===//
//
// The TypeErrors for a value of the wrong type ("expected Shape but got
// Array": casts, typed functions' arguments, vm.builtin.check_shape_info)
// add how to make the expected one where the mistake is a common one: a
// tuple or list passed where a Shape is expected.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_TYPE_ERROR_HINT_H
#define VMJIT_RUNTIME_TYPE_ERROR_HINT_H

#include <string_view>

namespace vmjit::detail {

/// The text to append to "expected `Expected` but got `Got`" (type names),
/// or "" when there is nothing to add.
inline std::string_view typeErrorHint(std::string_view Expected,
                                      std::string_view Got) {
  if (Expected == "Shape" && Got == "Array")
    return " (a tuple or list is an Array: make a Shape with "
           "vmjit.Shape([...]) in Python, vmjit::Shape({...}) in C++)";
  return "";
}

} // namespace vmjit::detail

#endif // VMJIT_RUNTIME_TYPE_ERROR_HINT_H
