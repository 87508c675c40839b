//===- engine_edge.cpp - The engine's public edge -------------------------===//
//
// Engine::create and Engine::compile: the one conversion of the engine's
// llvm::Error (tryCreate, tryCompile) into a thrown vmjit::Error, inside
// the JIT library, where LLVM's error classes can be read (engine.h).
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/engine.h"
#include "vmjit/runtime/error.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

namespace vmjit::jit {

std::unique_ptr<Engine> Engine::create(const EngineOptions &Opts) {
  llvm::Expected<std::unique_ptr<Engine>> E = tryCreate(Opts);
  if (!E)
    throwError("JITError", llvm::toString(E.takeError()));
  return std::move(*E);
}

std::unique_ptr<CompiledUnit>
Engine::compile(std::unique_ptr<llvm::LLVMContext> Ctx,
                std::unique_ptr<llvm::Module> M,
                const std::map<std::string, uint64_t> &Absolute,
                const std::vector<std::string> &Exports,
                const std::string &CacheKey, const std::atomic<bool> *Cancel) {
  llvm::Expected<std::unique_ptr<CompiledUnit>> U = tryCompile(
      std::move(Ctx), std::move(M), Absolute, Exports, CacheKey, Cancel);
  if (!U)
    throwError("JITError", llvm::toString(U.takeError()));
  return std::move(*U);
}

} // namespace vmjit::jit
