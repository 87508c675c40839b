//===- codegen.h - Codegen pieces the engine and vmjit compile share --------===//
//
// Private to jit/: engine.cpp (JIT units), aot.cpp (ahead-of-time
// libraries) and the Polly back end (polly/, against the shared libLLVM)
// make object files the same way. codegen.cpp is compiled into both
// libraries, each against its own LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CODEGEN_H
#define VMJIT_JIT_CODEGEN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace vmjit::jit {

/// The IR pipeline level of optimization level 1..3 (0 runs no pipeline).
llvm::OptimizationLevel irOptLevel(int Level);

/// The codegen level of optimization level 0..3.
llvm::CodeGenOptLevel codeGenOptLevel(int Level);

/// Codegen of `M` into an ELF relocatable object.
llvm::Expected<llvm::SmallVector<char, 0>> emitObjectFile(llvm::Module &M,
                                                          llvm::TargetMachine &TM);

} // namespace vmjit::jit

#endif // VMJIT_JIT_CODEGEN_H
