//===- run_args.h - Arguments of `vmjit run` from their text ---------------===//
//
// The forms of the contract: `42` (int), `1.5` (float), `true`/`false`,
// `PATH.npy` (a tensor read from the file), `float32[2,2]=1,2,3,4` (a
// tensor; `float32[]=3` is a scalar), `shape:2,3` (`shape:` is rank 0),
// `str:text`, `null`. Anything else is a UsageError naming the argument.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TOOLS_VMJIT_RUN_ARGS_H
#define VMJIT_TOOLS_VMJIT_RUN_ARGS_H

#include "vmjit/runtime/any.h"

#include <string>

namespace vmjit::tool {

/// Parses argument number `Index` (from 1, for messages).
Any parseRunArgument(const std::string &Text, size_t Index);

} // namespace vmjit::tool

#endif // VMJIT_TOOLS_VMJIT_RUN_ARGS_H
