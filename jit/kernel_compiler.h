//===- kernel_compiler.h - TVM's kernels from their bitcode -----*- C++ -*-===//
//
// Private to jit/: the kernel tier's compiler (kernel_tier.cpp is its
// public edge). Reads the LLVM bitcode TVM writes beside a model library
// (`model.bc`), checks that it defines the same `__tvm_ffi_*` entries as
// the library it replaces, each with the safe-call signature, replaces
// TVM's target attributes with the host's and compiles it through an
// Engine (the caller's options: O3, Polly, strict FP), cached under the
// bitcode's hash. Errors are llvm::Error; the caller turns them into one
// warning, and TVM's machine code stays.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_COMPILER_H
#define VMJIT_JIT_KERNEL_COMPILER_H

#include "kernel_inline.h"
#include "vmjit/jit/engine.h"
#include "vmjit/runtime/kernel_effects.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::jit {

/// The compiled kernels of one bitcode file.
struct CompiledKernels {
  std::unique_ptr<CompiledUnit> Unit;
  /// Packed function NAME (without `__tvm_ffi_`) -> its entry, which checks
  /// its tensors' alignment (kernel_entries.h).
  std::map<std::string, uint64_t> Entries;
  /// Context slot symbol (`__TVMBackendAllocWorkspace`, ...) -> the
  /// address of the slot, still to be filled (fillKernelSlots).
  std::map<std::string, uint64_t> Slots;
  /// Transpose loop nests rewritten as blocks (transpose_nests.h).
  unsigned Transposes = 0;
  /// What each kernel's IR proves it does with its arguments (as
  /// kernelEffectsOfFile gives them), analyzed before the pipeline.
  std::map<std::string, KernelEffects> Effects;
  /// The small kernels' IR, for tier 2 to inline (kernel_inline.h), its
  /// slots bound to Slots' addresses; null when no kernel is small.
  std::shared_ptr<InlineKernels> Inline;
  /// Reading, checking and compiling, in milliseconds.
  double TotalMs = 0;
};

/// Compiles the kernels of the bitcode file `Path` with `E`.
/// `LibraryNames` are the packed functions of the library the kernels
/// replace (KernelLibrary::functionNames): the bitcode must define exactly
/// these `__tvm_ffi_` entries, each `i32 (ptr, ptr, i32, ptr)`. `Cancel`
/// as Engine::tryCompile takes it (a CompileAbandoned error once set).
llvm::Expected<CompiledKernels>
compileKernels(Engine &E, const std::string &Path,
               const std::vector<std::string> &LibraryNames,
               const std::atomic<bool> *Cancel = nullptr);

/// The kernels of one bitcode file as an object file for the system
/// linker (`vmjit compile --kernels`).
struct KernelObject {
  /// An ELF relocatable object of position-independent code: the
  /// `__tvm_ffi_*` entries and the context slots are its exported
  /// definitions; TVM's C API functions stay undefined, for the dynamic
  /// loader to bind to vmjit's runtime (as in a dlopen'ed model.so).
  std::string Object;
  /// Packed function NAME (without `__tvm_ffi_`), sorted.
  std::vector<std::string> Entries;
  /// The CPU and features the code was compiled for (HostInfo's).
  std::string CPU;
  std::string Features;
  /// What each kernel's IR proves it does with its arguments (as
  /// kernelEffectsOfFile gives them), for the library to record.
  std::map<std::string, KernelEffects> Effects;
  /// Transpose loop nests rewritten as blocks (transpose_nests.h).
  unsigned Transposes = 0;
  /// Reading, checking and compiling, in milliseconds.
  double TotalMs = 0;
  /// The object came from the engine's object cache.
  bool CacheHit = false;
};

/// Compiles the kernels of the bitcode file `Path` with `E` exactly as
/// compileKernels does (the same checks against `LibraryNames`, TVM's
/// target attributes replaced by the host's, the engine's pipeline and
/// FP contract), into an object file instead of JIT memory; nothing is
/// bound to this process's addresses. Cached in the engine's object cache
/// (under a key of its own: the object is not a linked unit's).
llvm::Expected<KernelObject>
compileKernelObject(Engine &E, const std::string &Path,
                    const std::vector<std::string> &LibraryNames);

/// The effects of the kernels of the bitcode file `Path`, read and checked
/// against `LibraryNames` exactly as compileKernels reads it
/// (analyzeKernelEffects, kernel_effects.h); `Reasons` as that takes it.
llvm::Expected<std::map<std::string, KernelEffects>>
kernelEffectsOfFile(const std::string &Path,
                    const std::vector<std::string> &LibraryNames,
                    std::map<std::string, std::string> *Reasons = nullptr);

/// Fills the context slots of `K` as KernelLibrary::load fills those of a
/// dlopen'ed library: each served host function's address
/// (tvm::contextSymbols()), and `LibraryCtx` in `__tvm_ffi__library_ctx`.
void fillKernelSlots(const CompiledKernels &K, void *LibraryCtx);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_COMPILER_H
