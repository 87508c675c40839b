//===- run_output.h - Where `vmjit run --output` saves a result ------------===//
//
// A tensor result goes to PATH as a .npy file; a tuple's tensors go to one
// file each, named by their index path: for out.npy, out.0.npy holds the
// first element and out.1.0.npy the first element of the second (a nested
// tuple). The directory is checked before the program runs.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TOOLS_VMJIT_RUN_OUTPUT_H
#define VMJIT_TOOLS_VMJIT_RUN_OUTPUT_H

#include "vmjit/runtime/any.h"

#include <string>
#include <vector>

namespace vmjit::tool {

/// Throws UsageError if `Path`'s directory does not exist or cannot be
/// written (so that a long run does not end in an unsavable result).
void checkOutputPath(const std::string &Path);

/// Saves `Result` as above; returns the files written. A result that is
/// not a tensor or a tuple of tensors (at any depth) is a UsageError that
/// names the first element that is not, and nothing is written.
std::vector<std::string> saveOutput(const AnyView &Result,
                                    const std::string &Path);

} // namespace vmjit::tool

#endif // VMJIT_TOOLS_VMJIT_RUN_OUTPUT_H
