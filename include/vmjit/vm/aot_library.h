//===- vmjit/vm/aot_library.h - Ahead-of-time compiled libraries -*- C++ -*-===//
//
// `vmjit compile PROG -o OUT.so` writes a shared library holding the
// executable and tier-2 native code for every bytecode function. It
// exports one symbol, the manifest below (its layout is the contract
// between the writer, jit/aot.cpp, and this loader). Loading it needs no
// LLVM: the loader fills the library's import table with the VM's native
// helpers (native_helpers.h), loads the embedded executable through the
// verifier, and attaches the code to a VM as a TierController whose slots
// are full from the start, so nothing is compiled at run time.
//
// The code calls every callee through the VM's function pool (its
// addresses are not known ahead of time), except the standard builtins it
// inlines; a VM in which one of those resolves to another function (one
// registered in its place) runs the interpreter instead.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_AOT_LIBRARY_H
#define VMJIT_VM_AOT_LIBRARY_H

#include "vmjit/formats/serialize.h"
#include "vmjit/runtime/kernel_effects.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/native_code.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::vm {

/// The symbol of the manifest, the one symbol such a library exports.
inline constexpr const char *kAotManifestSymbol = "vmjit_aot_manifest";
/// "VMJITAOT", little-endian.
inline constexpr uint64_t kAotMagic = 0x544f4154494a4d56ULL;
/// Version 2 adds KernelLibraries, version 3 the compiled kernels' fields,
/// version 4 KernelEffects; libraries of versions 1 to 3 still load.
inline constexpr uint32_t kAotVersion = 4;

/// What a `vmjit compile` library exports as kAotManifestSymbol.
struct AotManifest {
  uint64_t Magic;
  uint32_t Version;
  /// Entries of Functions: the size of the executable's function table.
  uint32_t NumFunctions;
  /// Entries of Imports and ImportNames.
  uint32_t NumImports;
  /// Entries of Inlined.
  uint32_t NumInlined;
  uint64_t ProgramSize;
  /// The executable in vmjit's binary format (serialize.h).
  const char *Program;
  /// Per function-table entry: its native code, or null (packed).
  const NativeFn *Functions;
  /// Slots the loader fills before any code runs: the address of the
  /// native helper named by the same entry of ImportNames.
  void **Imports;
  const char *const *ImportNames;
  /// Function-table entries (packed) whose standard form the code inlines.
  const uint32_t *Inlined;
  /// What wrote it: "vmjit VERSION, LLVM VERSION, TRIPLE".
  const char *Producer;
  /// (Version 2.) The kernel libraries the program was compiled with, one
  /// path a line, relative to this library's directory where `vmjit
  /// compile` could make it so; "" for none.
  const char *KernelLibraries;
  /// (Version 3.) With kernels compiled in (`vmjit compile --kernels`;
  /// the library then exports their `__tvm_ffi_NAME` entries and context
  /// slots): the bitcode they came from (as recorded, for messages), the
  /// CPU they were compiled for and its LLVM features ("+avx2,+fma,...");
  /// all null without kernels.
  const char *KernelBitcode;
  const char *KernelCPU;
  const char *KernelFeatures;
  /// (Version 4.) With kernels compiled in: what each kernel's IR proves it
  /// does with its arguments (vm/kernel_effects_json.h), for binding
  /// parameters (vm/bind_params.h); null without kernels or where the
  /// bitcode could not be analyzed.
  const char *KernelEffects;
};
static_assert(offsetof(AotManifest, Magic) == 0);
static_assert(offsetof(AotManifest, Version) == 8);
static_assert(offsetof(AotManifest, NumFunctions) == 12);
static_assert(offsetof(AotManifest, NumImports) == 16);
static_assert(offsetof(AotManifest, NumInlined) == 20);
static_assert(offsetof(AotManifest, ProgramSize) == 24);
static_assert(offsetof(AotManifest, Program) == 32);
static_assert(offsetof(AotManifest, Functions) == 40);
static_assert(offsetof(AotManifest, Imports) == 48);
static_assert(offsetof(AotManifest, ImportNames) == 56);
static_assert(offsetof(AotManifest, Inlined) == 64);
static_assert(offsetof(AotManifest, Producer) == 72);
static_assert(offsetof(AotManifest, KernelLibraries) == 80);
static_assert(offsetof(AotManifest, KernelBitcode) == 88);
static_assert(offsetof(AotManifest, KernelCPU) == 96);
static_assert(offsetof(AotManifest, KernelFeatures) == 104);
static_assert(offsetof(AotManifest, KernelEffects) == 112);
static_assert(sizeof(AotManifest) == 120);

/// The native code of a loaded `vmjit compile` library and its executable.
/// Any number of VMs may run it at once.
class AotCode : public std::enable_shared_from_this<AotCode> {
public:
  /// The code of `Lib` if it has a manifest, else null. Throws
  /// FormatError (naming `Name` and the field) for a manifest this vmjit
  /// cannot use, LibraryError (naming `Name` and the features) for
  /// compiled kernels that need CPU features this CPU lacks
  /// (cpu_features.h), and the loader's errors for its executable.
  static std::shared_ptr<AotCode> open(std::shared_ptr<KernelLibrary> Lib,
                                       const std::string &Name,
                                       const LoadOptions &Opts = {});

  const std::shared_ptr<Executable> &executable() const noexcept {
    return Exe;
  }
  /// The native code of function-table entry `Func`, or null.
  NativeFn code(int64_t Func) const noexcept;
  /// Whether the code inlines function-table entry `Func` (a standard
  /// builtin).
  bool inlines(int64_t Func) const noexcept;
  const std::string &producer() const noexcept { return Producer; }
  /// The kernel libraries the program was compiled with, as recorded
  /// (AotManifest::KernelLibraries; openProgram loads them).
  const std::vector<std::string> &kernelLibraries() const noexcept {
    return KernelLibraries;
  }

  /// Whether the library holds kernels compiled for this CPU (`vmjit
  /// compile --kernels`): its `__tvm_ffi_NAME` entries then go ahead of
  /// the kernel libraries (openProgram puts library() first).
  bool hasKernels() const noexcept { return !KernelCPU.empty(); }
  /// The kernels' bitcode and CPU, as recorded; "" without kernels.
  const std::string &kernelBitcode() const noexcept { return KernelBitcode; }
  const std::string &kernelCPU() const noexcept { return KernelCPU; }
  /// What the compiled kernels' IR proves they do with their arguments, as
  /// recorded (empty: nothing recorded; binding then folds no call).
  const std::map<std::string, KernelEffects> &kernelEffects() const noexcept {
    return KernelEffectsRecorded;
  }
  /// The library itself.
  const std::shared_ptr<KernelLibrary> &library() const noexcept { return Lib; }

  /// Makes `VM` (of executable()) run this code: every bytecode function
  /// is native before the call returns, and stays so (no tier-up, no
  /// compile). Returns an empty string, or why the code cannot run in
  /// this VM (it is then left as it was).
  std::string attach(VirtualMachine &VM) const;

private:
  AotCode() = default;
  std::shared_ptr<KernelLibrary> Lib;
  const AotManifest *Manifest = nullptr;
  std::shared_ptr<Executable> Exe;
  std::string Producer;
  std::vector<std::string> KernelLibraries;
  std::string KernelBitcode;
  std::string KernelCPU;
  std::map<std::string, KernelEffects> KernelEffectsRecorded;
};

/// Whether `Mode` runs ahead-of-time code when a program has it: compiled
/// and tiered do (there is nothing left to compile); bytecode runs the
/// interpreter and baseline the baseline tier, as for any program.
bool modeRunsAotCode(ExecMode Mode) noexcept;

} // namespace vmjit::vm

#endif // VMJIT_VM_AOT_LIBRARY_H
