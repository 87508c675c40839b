//===- vmjit/formats/serialize.h - The binary executable format -*- C++ -*-===//
//
// Saving and loading executables in vmjit's binary format (see
// docs/binary-format.md): a versioned, little-endian, sectioned file with an
// xxHash (XXH3-64) checksum per section, tensor data aligned to 64 bytes so
// that a loaded file is memory-mapped and its tensor constants used in
// place. Every load is bounds-checked and verified (verifier.h) before the
// executable is returned: a bad file gives one Error ("FormatError" or
// "VerifyError") naming the file and what is wrong, never a crash or a
// huge allocation.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_FORMATS_SERIALIZE_H
#define VMJIT_FORMATS_SERIALIZE_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/bytecode/verifier.h"

#include <memory>
#include <span>
#include <string>

namespace vmjit::vm {

/// The current format version written by saveExecutable.
inline constexpr uint32_t kFormatVersion = 1;

struct LoadOptions {
  /// Check the tensor-data section's checksum too. It touches every page
  /// of the weights (for 1 GiB, most of the load time); metadata sections
  /// are always checked.
  bool VerifyTensorData = true;
  /// Largest file (binary or vmasm) accepted, in bytes.
  int64_t MaxFileBytes = int64_t(64) << 30;
  VerifierLimits Limits;
};

/// The file image of `Exe`.
std::string serializeExecutable(const Executable &Exe);
/// Writes `Exe` to `Path`; throws Error("IOError") if it cannot.
void saveExecutable(const Executable &Exe, const std::string &Path);

/// Maps and loads the file at `Path`. Tensor constants point into the
/// mapping (copy-on-write), which they keep alive. A file with TVM's
/// executable magic is read as TVM's format instead (tvm_format.h).
std::shared_ptr<Executable> loadExecutable(const std::string &Path,
                                           const LoadOptions &Opts = {});
/// Loads from memory (copied once into an aligned buffer). `Name` is used
/// in error messages. TVM's format is recognised by its magic, as above.
std::shared_ptr<Executable> loadExecutableFromBytes(std::span<const char> Bytes,
                                                    const std::string &Name,
                                                    const LoadOptions &Opts = {});

/// True if `Bytes` starts with the binary format's magic.
bool hasBinaryMagic(std::span<const char> Bytes) noexcept;

} // namespace vmjit::vm

#endif // VMJIT_FORMATS_SERIALIZE_H
