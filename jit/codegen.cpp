//===- codegen.cpp - Codegen pieces the engine and Polly share ------------===//
//
// See codegen.h. Compiled into libvmjit_jit (its static LLVM) and into
// libvmjit_polly (the shared libLLVM): one text, two copies of LLVM.
//
//===----------------------------------------------------------------------===//

#include "codegen.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace vmjit::jit {

OptimizationLevel irOptLevel(int Level) {
  switch (Level) {
  case 1:
    return OptimizationLevel::O1;
  case 2:
    return OptimizationLevel::O2;
  default:
    return OptimizationLevel::O3;
  }
}

CodeGenOptLevel codeGenOptLevel(int Level) {
  switch (Level) {
  case 0:
    return CodeGenOptLevel::None;
  case 1:
    return CodeGenOptLevel::Less;
  case 2:
    return CodeGenOptLevel::Default;
  default:
    return CodeGenOptLevel::Aggressive;
  }
}

Expected<SmallVector<char, 0>> emitObjectFile(Module &M, TargetMachine &TM) {
  SmallVector<char, 0> Object;
  raw_svector_ostream OS(Object);
  legacy::PassManager PM;
  if (TM.addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::ObjectFile))
    return make_error<StringError>("the target cannot emit object files",
                                   inconvertibleErrorCode());
  PM.run(M);
  return Object;
}

} // namespace vmjit::jit
