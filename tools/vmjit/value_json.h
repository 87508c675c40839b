//===- value_json.h - Values as the JSON of `vmjit run --json` -------------===//
//
// The encoding of the contract: null, numbers (non-finite floats as "inf",
// "-inf", "nan"), booleans, strings, {"shape": [...]}, tensors as
// {"dtype", "shape", "data"} with nested row-major lists (a scalar's data
// is a bare number), tuples as arrays, functions and closures as
// {"function": NAME}, anything else as {"object": TYPE}.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TOOLS_VMJIT_VALUE_JSON_H
#define VMJIT_TOOLS_VMJIT_VALUE_JSON_H

#include "vmjit/runtime/any.h"

#include <nlohmann/json.hpp>

namespace vmjit::tool {

/// `V` in the contract's encoding. `Summarize` (the text output, not
/// `--json`): a tensor of over 1000 elements shows 3 items at each end of
/// every axis with the string "..." between, as NumPy prints one.
nlohmann::ordered_json valueToJson(const AnyView &V, bool Summarize = false);

} // namespace vmjit::tool

#endif // VMJIT_TOOLS_VMJIT_VALUE_JSON_H
