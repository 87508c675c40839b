//===- vmjit/files/npy.h - NumPy .npy files ---------------------*- C++ -*-===//
//
// Reading and writing tensors as NumPy .npy files (format versions 1.0, 2.0
// and 3.0; little-endian bool, int8..64, uint8..64, float16/32/64; C order).
// Used for `npy` constants in vmasm, tensor arguments and `--output` of
// `vmjit run`. Errors name the file and what is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_FILES_NPY_H
#define VMJIT_FILES_NPY_H

#include "vmjit/runtime/tensor.h"

#include <span>
#include <string>

namespace vmjit::vm {

/// Reads a tensor from `Path`. Throws Error("IOError") if the file cannot
/// be read, Error("FormatError") if it is not a supported .npy file.
Tensor readNpy(const std::string &Path);
/// Parses an .npy image; `Name` is used in messages.
Tensor parseNpy(std::span<const char> Bytes, const std::string &Name);

/// The .npy image of a compact CPU tensor (format 1.0, or 2.0 when the
/// header needs it). Throws ValueError for a dtype NumPy cannot hold.
std::string serializeNpy(const Tensor &T);
/// Writes `T` to `Path`; throws Error("IOError") if it cannot.
void writeNpy(const Tensor &T, const std::string &Path);

} // namespace vmjit::vm

#endif // VMJIT_FILES_NPY_H
