//===- codegen.h - Codegen pieces the engine and vmjit compile share --------===//
//
// Private to jit/: engine.cpp (JIT units) and aot.cpp (ahead-of-time
// libraries) make object files the same way.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_CODEGEN_H
#define VMJIT_JIT_CODEGEN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace vmjit::jit {

/// The codegen level of optimization level 0..3.
llvm::CodeGenOptLevel codeGenOptLevel(int Level);

/// Codegen of `M` into an ELF relocatable object.
llvm::Expected<llvm::SmallVector<char, 0>> emitObjectFile(llvm::Module &M,
                                                          llvm::TargetMachine &TM);

} // namespace vmjit::jit

#endif // VMJIT_JIT_CODEGEN_H
