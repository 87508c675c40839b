//===- vmjit/vm/program.h - Loading a program from a file --------*- C++ -*-===//
//
// One entry point for "a program on disk", as the `vmjit` command takes it,
// recognised by its content, not its name: a vmjit binary or a TVM
// VMExecutable file by its magic, vmasm text by looking like text that
// starts with a directive. Whatever the format, the result is verified.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_PROGRAM_H
#define VMJIT_VM_PROGRAM_H

#include "vmjit/formats/serialize.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/aot_library.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::vm {

/// The formats loadProgram reads.
enum class ProgramFormat {
  /// vmasm text (assembler.h).
  Vmasm,
  /// vmjit's binary format (serialize.h).
  Binary,
  /// Apache TVM's VMExecutable serialization (tvm_format.h).
  Tvm,
  /// A shared library TVM's `export_library` wrote (its
  /// `__tvm_ffi__library_bin` blob holds the VMExecutable, and the library
  /// itself the compiled kernels), or one `vmjit compile` wrote (its
  /// manifest holds the executable and its native code; aot_library.h).
  Library,
  /// None of the above: loading it is a FormatError saying what was
  /// looked for.
  Unknown,
};

/// "vmasm", "binary", "tvm", "library", "unknown".
std::string_view programFormatName(ProgramFormat F) noexcept;

/// "vmasm text", "a vmjit binary executable", "a TVM VMExecutable file",
/// ...: what a message says was recognised.
std::string_view describeProgramFormat(ProgramFormat F) noexcept;

/// True if `Path` names vmasm text (it ends in ".vmasm").
bool isVmasmPath(const std::string &Path);

/// The format of a file whose first bytes are `Head` (up to 4 KiB is
/// enough): the vmjit or TVM magic decides; otherwise text with no NUL
/// byte whose first statement (after blank and comment lines) is a
/// directive is vmasm; otherwise a name ending in ".vmasm" (any case) says
/// vmasm (so that a broken .vmasm file gets the assembler's message);
/// anything else is Unknown.
ProgramFormat detectProgramFormat(std::span<const char> Head,
                                  const std::string &Path);

/// Reads the start of the file at `Path` and detects its format as above.
/// Throws Error("IOError") if the file cannot be read.
ProgramFormat detectProgramFormat(const std::string &Path);

/// A program and the kernel libraries it came with.
struct OpenedProgram {
  std::shared_ptr<Executable> Exe;
  /// For a model library: the library itself, whose `__tvm_ffi_NAME`
  /// exports the executable's packed functions resolve to first.
  std::vector<std::shared_ptr<KernelLibrary>> Libraries;
  /// For a `vmjit compile` library: its native code, for VMs of Exe in a
  /// mode that runs it (AotCode::attach, modeRunsAotCode).
  std::shared_ptr<AotCode> Aot;
  /// Where Libraries came from when nobody named them, one line each for
  /// `--stats` and `-v` ("kernels: mlp/model.so (beside
  /// mlp/model.tvmexec)").
  std::vector<std::string> KernelNotes;
  /// Kernel libraries the program names but that are not there (a `vmjit
  /// compile` library moved without its kernels): one line each saying
  /// which, for a warning.
  std::vector<std::string> MissingKernels;
  /// For a `vmjit compile --kernels` library: how many of the first
  /// Libraries serve its compiled kernels (their slots and the library),
  /// the first of KernelNotes saying so; 0 otherwise.
  size_t CompiledKernelLibraries = 0;
};

/// Takes a `vmjit compile --kernels` library's compiled kernels out of `P`
/// (its first CompiledKernelLibraries libraries and their note): the
/// kernel libraries it recorded (TVM's machine code) serve the kernels, as
/// `vmjit run --no-kernels` asks. Nothing for any other program.
void dropCompiledKernels(OpenedProgram &P);

/// loadProgram, keeping the libraries a model library brings (pass them
/// to VMOptions::Libraries ahead of any others), and finding the kernels
/// of a program that does not hold them: for a program file (TVM's
/// `.tvmexec`, a vmjit binary, vmasm) the `STEM.so` beside it that TVM's
/// `export_library` wrote (model.so beside model.tvmexec); for a `vmjit
/// compile` library, the kernel libraries it was compiled with (recorded
/// in it, relative to it). "-" reads standard input (nothing is looked
/// for beside it).
OpenedProgram openProgram(const std::string &Path,
                          const LoadOptions &Opts = {});

/// The one way to run any program vmjit reads, with its kernels: opens
/// `Path` (openProgram: vmasm, a vmjit binary, TVM's `.tvmexec` with the
/// model.so beside it, a TVM model library, a `vmjit compile` library with
/// the kernels it recorded) and makes a VM of it, the program's libraries
/// searched ahead of `Opts.Libraries`. A `vmjit compile` library's native
/// code is attached where it can run (every function native from its
/// first call). Throws what openProgram and VirtualMachine::create throw;
/// a LinkError also names the recorded kernel libraries that are missing.
std::unique_ptr<VirtualMachine> openVM(const std::string &Path,
                                       VMOptions Opts = {});

/// True if `Path` is "-" (standard input) or names something that is
/// neither a regular file nor a directory: a pipe, a process substitution
/// (`<(...)`), a character device such as /dev/null. Such inputs are read
/// whole, without seeking, and recognised by their content.
bool isStreamPath(const std::string &Path);

/// The name messages use for `Path`: "<stdin>" for "-".
std::string inputName(const std::string &Path);

/// The bytes of a file or stream (isStreamPath; "-" is standard input),
/// at most `MaxBytes`. Throws IOError if it cannot be read, FormatError
/// if it is larger.
std::string readInput(const std::string &Path, int64_t MaxBytes);

/// openProgram for a program already in memory, of any format: vmasm
/// text, a vmjit binary, a TVM executable or a TVM model library (held in
/// an anonymous in-memory file for dlopen). `Name` is used in messages;
/// vmasm `npy "path"` constants resolve against the current directory.
OpenedProgram openProgramBytes(const std::string &Bytes,
                               const std::string &Name,
                               const LoadOptions &Opts = {});

/// Reads the VMExecutable out of an exported library's module blob
/// (`KernelLibrary::libraryBin`): u64 size, the import tree (u64 vectors
/// of row pointers and child indices), then per module a kind string and,
/// except for "_lib", its bytes. Throws FormatError naming `Name`, the
/// offset and the field for a malformed blob.
std::shared_ptr<Executable> loadLibraryBin(std::span<const char> Bin,
                                           const std::string &Name,
                                           const LoadOptions &Opts = {});

/// Assembles or loads the program at `Path`, whichever its format is.
/// Throws Error with kind IOError, ParseError, FormatError or VerifyError;
/// every message names the file.
std::shared_ptr<Executable> loadProgram(const std::string &Path,
                                        const LoadOptions &Opts = {});

/// The format writeProgram writes to `Path` when none is named: "vmasm"
/// for a name ending in .vmasm, "tvm" for .tvmexec (any case), else
/// "vmjit".
std::string formatForPath(const std::string &Path);

/// Writes `Exe` to `Path` as `Format`: "vmjit" (the binary format), "tvm"
/// (TVM's VMExecutable format) or "vmasm". What the format cannot hold is
/// an error naming `Input` (where the program came from); a file that
/// cannot be written is an IOError; another format a ValueError.
void writeProgram(const Executable &Exe, const std::string &Format,
                  const std::string &Input, const std::string &Path);

} // namespace vmjit::vm

#endif // VMJIT_VM_PROGRAM_H
