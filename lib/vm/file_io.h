//===- file_io.h - Reading whole files (lib/vm internal) -------------------===//

#ifndef VMJIT_LIB_VM_FILE_IO_H
#define VMJIT_LIB_VM_FILE_IO_H

#include <string>

namespace vmjit::vm {

/// The bytes of the file at `Path`; throws Error("IOError") naming the
/// file and the reason if it cannot be opened or read.
std::string readWholeFile(const std::string &Path);

} // namespace vmjit::vm

#endif // VMJIT_LIB_VM_FILE_IO_H
