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
#include <vector>

namespace vmjit::tool {

/// Parses argument number `Index` (from 1, for messages).
Any parseRunArgument(const std::string &Text, size_t Index);

/// CLI11 reads "-inf", "-nan" and "-.5" as clusters of short options. In
/// the command line `Args` (without the program name), each such word
/// after `run` is marked so that CLI11 takes it as a positional value;
/// parseRunArgument and unmarkRunValue drop the mark.
void protectRunValues(std::vector<std::string> &Args);

/// `Text` without the mark protectRunValues may have put on it.
std::string unmarkRunValue(const std::string &Text);

} // namespace vmjit::tool

#endif // VMJIT_TOOLS_VMJIT_RUN_ARGS_H
