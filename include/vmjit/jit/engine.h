//===- vmjit/jit/engine.h - LLVM ORC engine for JIT units -------*- C++ -*-===//
//
// The code generator and linker behind the JIT tier: one ORC LLJIT
// (JITLink on x86-64 ELF) per Engine; each compiled unit is one LLVM module
// in its own JITDylib-level ResourceTracker, so it can be removed again.
// Modules reference host functions only through external symbols that the
// unit binds to absolute addresses at link time, so the object code does
// not depend on where things live in this process: it can be cached on
// disk and reused by a later run (the object cache).
//
// Errors are llvm::Error / Expected (llvm/Support/Error.h, the one LLVM
// header here); other LLVM types appear only as opaque pointers. Internal
// to the JIT library: the tier manager's header does not include it.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_ENGINE_H
#define VMJIT_JIT_ENGINE_H

#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Module;
class LLVMContext;
} // namespace llvm

namespace vmjit::jit {

struct EngineOptions {
  /// LLVM optimization level for the IR pipeline and codegen: 0..3.
  int OptLevel = 1;
  /// At levels above 0: a textual new-PM pipeline (`opt -passes=` syntax)
  /// to run instead of the default per-module pipeline of OptLevel.
  std::string Pipeline;
  /// Codegen optimization level, 0..3; -1: the same as OptLevel.
  int CodegenOptLevel = -1;
  /// Directory of the on-disk object cache; empty disables it.
  std::string CacheDir;
  /// Register JIT code with perf (perf map / jitdump) and with GDB.
  bool PerfSupport = false;
  bool DebuggerSupport = false;
  /// At levels above 0, the default pipeline with Polly registered in it
  /// (polyhedral loop optimization, `-polly-vectorizer=stripmine`), run by
  /// libvmjit_polly.so beside the JIT library (jit/polly/polly_abi.h):
  /// the kernel tier's pipeline. Creating the engine fails when that
  /// module cannot be loaded. Ignores Pipeline.
  bool Polly = false;
  /// Floating point: by default strict (FPOpFusion::Strict: llvm.fmuladd
  /// stays a multiply and an add, never an FMA; no fast-math flag added),
  /// so code computes the bits its IR says. FastMath, opt-in: FMA fusion
  /// and reassociation (every FP operation gets `reassoc contract`).
  bool FastMath = false;
};

/// What one compile did, for --stats and benchmarks.
struct CompileStats {
  double OptimizeMs = 0; ///< IR pipeline (0 on a cache hit)
  double CodegenMs = 0;  ///< codegen + link (link only on a cache hit)
  bool CacheHit = false;
  size_t ObjectBytes = 0;
};

/// A compiled unit: the addresses of its requested symbols. Destroying it
/// removes the code (its ResourceTracker) from the engine.
class CompiledUnit {
public:
  virtual ~CompiledUnit() = default;
  /// Address of a function defined by the unit's module.
  virtual uint64_t address(const std::string &Symbol) const = 0;
  virtual const CompileStats &stats() const = 0;
};

/// The error of a compile (lowering or code generation) stopped through
/// its cancellation flag: callers tell it from a failure by its type
/// (llvm::ErrorInfo), never by its text.
class CompileAbandoned : public llvm::ErrorInfo<CompileAbandoned> {
public:
  static char ID;
  void log(llvm::raw_ostream &OS) const override;
  std::error_code convertToErrorCode() const override;
};

/// Errors: inside the JIT library llvm::Error / Expected (tryCreate,
/// tryCompile); at its public edge a thrown vmjit::Error ("JITError":
/// create, compile). An llvm::Error does not cross the library's boundary:
/// its error classes belong to the library's own copy of LLVM, which a
/// caller's LLVM cannot tell apart.
class Engine {
public:
  /// Creates an engine for the host; throws JITError if LLVM cannot
  /// target it.
  static std::unique_ptr<Engine> create(const EngineOptions &Opts);
  /// create, for code inside the JIT library.
  static llvm::Expected<std::unique_ptr<Engine>>
  tryCreate(const EngineOptions &Opts);
  virtual ~Engine() = default;

  /// tryCompile, throwing JITError on failure (the message says when the
  /// compile was abandoned).
  std::unique_ptr<CompiledUnit>
  compile(std::unique_ptr<llvm::LLVMContext> Ctx,
          std::unique_ptr<llvm::Module> M,
          const std::map<std::string, uint64_t> &Absolute,
          const std::vector<std::string> &Exports, const std::string &CacheKey,
          const std::atomic<bool> *Cancel = nullptr);

  /// Optimizes (at the engine's level), compiles and links `M`, whose
  /// external symbols are bound by `Absolute` (name -> address), and
  /// returns the unit with the addresses of `Exports`. `CacheKey`
  /// non-empty: look the object up in / store it into the object cache
  /// under that key (the caller makes the key cover everything the code
  /// depends on). Thread-safe. `M` must live in `Ctx`; the engine takes
  /// both. `Cancel`, when given, is checked between the compile's phases
  /// and between the IR passes: once it is set the compile stops there
  /// with a CompileAbandoned error (a single function's code generation,
  /// once begun, runs to its end).
  /// For code inside the JIT library.
  virtual llvm::Expected<std::unique_ptr<CompiledUnit>> tryCompile(
      std::unique_ptr<llvm::LLVMContext> Ctx, std::unique_ptr<llvm::Module> M,
      const std::map<std::string, uint64_t> &Absolute,
      const std::vector<std::string> &Exports, const std::string &CacheKey,
      const std::atomic<bool> *Cancel = nullptr) = 0;

  /// Runs the engine's IR optimization pipeline on `M` in place (for
  /// `vmjit ir --opt`).
  virtual void optimize(llvm::Module &M) = 0;

  /// Optimizes and compiles `M` as tryCompile does (the same pipeline,
  /// target, relocation model and floating-point contract) into an ELF
  /// relocatable object, returned instead of linked: for code the system
  /// linker puts into a shared library (`vmjit compile --kernels`). Its
  /// undefined symbols stay undefined. With the engine's object cache and a
  /// `CacheKey` (what the object depends on beyond the engine's options),
  /// the object is loaded from the cache (`CacheHit` set) or stored in it.
  virtual llvm::Expected<std::string>
  tryEmitObject(llvm::Module &M, const std::string &CacheKey = {},
                bool *CacheHit = nullptr) = 0;

  virtual const EngineOptions &options() const = 0;
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_ENGINE_H
