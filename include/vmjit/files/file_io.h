//===- vmjit/files/file_io.h - Reading and writing whole files ------------===//

#ifndef VMJIT_FILES_FILE_IO_H
#define VMJIT_FILES_FILE_IO_H

#include <string>
#include <string_view>

namespace vmjit::vm {

/// The bytes of the file at `Path`; throws Error("IOError") naming the
/// file and the reason if it cannot be opened or read.
std::string readWholeFile(const std::string &Path);

/// Writes `Bytes` as the whole file at `Path`; throws Error("IOError")
/// naming the file and the reason if it cannot be written.
void writeWholeFile(const std::string &Path, std::string_view Bytes);

} // namespace vmjit::vm

#endif // VMJIT_FILES_FILE_IO_H
