//===- vmjit/vm/program.h - Loading a program from a file --------*- C++ -*-===//
//
// One entry point for "a program on disk", as the `vmjit` command takes it:
// a `.vmasm` file is assembled, anything else is loaded as a binary
// executable. Either way the result is verified.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_PROGRAM_H
#define VMJIT_VM_PROGRAM_H

#include "vmjit/vm/serialize.h"

#include <memory>
#include <string>

namespace vmjit::vm {

/// True if `Path` names vmasm text (it ends in ".vmasm").
bool isVmasmPath(const std::string &Path);

/// Assembles (.vmasm) or loads (anything else) the program at `Path`.
/// Throws Error with kind IOError, ParseError, FormatError or VerifyError;
/// every message names the file.
std::shared_ptr<Executable> loadProgram(const std::string &Path,
                                        const LoadOptions &Opts = {});

} // namespace vmjit::vm

#endif // VMJIT_VM_PROGRAM_H
