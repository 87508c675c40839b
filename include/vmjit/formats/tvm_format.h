//===- vmjit/formats/tvm_format.h - TVM's VMExecutable format ---*- C++ -*-===//
//
// Reading and writing the file Apache TVM's Relax VM writes with
// `ex.mod.write_to_file(path)` (`VMExecutable::SaveToBytes`): a u64 magic,
// the version string "0.14", the function table, the memory scopes (only
// after the newer magic), the constant pool, the instruction offsets and
// the instruction words; little-endian, no alignment, no checksums
// (docs/tvm.md, docs/binary-format.md). The byte layout is TVM's exactly,
// so TVM loads what the writer produces and a file TVM wrote saves back to
// the same bytes.
//
// The reader bounds-checks every read and every count before allocating,
// copies tensor constants into aligned memory, and runs the verifier (under
// LoadOptions::Limits) before returning: a bad file gives one Error
// ("FormatError" naming the file, the byte offset and the field, or
// "VerifyError"), never a crash. loadExecutable and loadExecutableFromBytes
// (serialize.h), hence loadProgram and every `vmjit` command, recognise the
// format by its magic.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_FORMATS_TVM_FORMAT_H
#define VMJIT_FORMATS_TVM_FORMAT_H

#include "vmjit/formats/serialize.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace vmjit::vm {

/// The constants of TVM's format, declared here once for the reader, the
/// writer, the program loader's format detection and the tests.
namespace tvmfmt {
/// The magic TVM writes: a memory-scope section follows the function table.
inline constexpr uint64_t kMagic = 0xD225DE2F4214151EULL;
/// The older magic TVM still reads: no memory-scope section.
inline constexpr uint64_t kMagicNoMemoryScopes = 0xD225DE2F4214151DULL;
/// The only version string TVM reads and writes (its VM_VERSION).
inline constexpr std::string_view kVersion = "0.14";
/// The magic in front of each tensor constant (TVM's kTVMTensorMagic).
inline constexpr uint64_t kTensorMagic = 0xDD5E40F096B4A13FULL;

/// Function kinds as TVM stores them (an i32).
enum FuncKind : int32_t {
  kPackedFunc = 0,
  kVMFunc = 1,
  kVMTIRFunc = 2,
};

/// A VMTIR function NAME (TVM's compiled mode) is the library symbol
/// `__vmtir__NAME`, called as (ctx_ptr, registers, constants, functions).
inline constexpr std::string_view kVMTIRPrefix = "__vmtir__";

/// Constant tags: tvm-ffi type indices (an i32), the same numbers as
/// vmjit's own type indices (c_api.h).
enum ConstType : int32_t {
  kInt = 1,
  kFloat = 3,
  kDataType = 5,
  kString = 65,
  kShape = 69,
  kTensor = 70,
};
} // namespace tvmfmt

/// True if `Bytes` starts with either of TVM's executable magics.
bool hasTvmMagic(std::span<const char> Bytes) noexcept;

/// The bytes TVM's `SaveToBytes` would write for `Exe` (newer magic, no
/// memory scopes). Throws Error("ValueError") naming the constant for what
/// TVM's format cannot hold: null and bool constants (TVM's own writer
/// fails on both), tensors that are not compact CPU tensors of one lane of
/// bool, int8..int64, uint8..uint64, float16, bfloat16, float32 or float64,
/// and values of any other type.
std::string serializeTvmExecutable(const Executable &Exe);

/// Writes serializeTvmExecutable(Exe) to `Path`; throws Error("IOError") if
/// it cannot, and serializeTvmExecutable's errors.
void saveTvmExecutable(const Executable &Exe, const std::string &Path);

/// Parses and verifies a TVM executable image. `Name` is used in messages.
/// What the loaded executable holds, beyond the bytes (docs/tvm.md):
///  - packed entries keep only their name (TVM ignores their other fields,
///    and its compiler leaves num_args at -2);
///  - VMTIR entries become FunctionKind::Native with their parameter count,
///    names and register file size, and no code range;
///  - a VM or VMTIR function saved without parameter names (TVM's Python
///    ExecBuilder allows it) gets the names arg0, arg1, ...;
///  - VM functions' code is laid out in function-table order (what TVM's
///    compiler writes in the usual case; a file laid out otherwise loads
///    with its code reordered, which changes nothing it does);
///  - memory scopes are checked (their constant index must exist) and
///    dropped: vmjit runs on the CPU, where every scope is "global".
std::shared_ptr<Executable>
loadTvmExecutableFromBytes(std::span<const char> Bytes, const std::string &Name,
                           const LoadOptions &Opts = {});

} // namespace vmjit::vm

#endif // VMJIT_FORMATS_TVM_FORMAT_H
