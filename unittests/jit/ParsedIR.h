//===- ParsedIR.h - LLVM IR text parsed for the JIT's passes ----*- C++ -*-===//
//
// The tests of jit/'s IR rewrites parse modules from text in a context of
// their own, which the engine can take to compile. The text must hold no
// floating-point literal: the test's LLVM would make it, and the JIT
// library's own copy of LLVM could not read it.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_PARSEDIR_H
#define VMJIT_UNITTESTS_JIT_PARSEDIR_H

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>

namespace vmjit::jittest {

/// A module and the context it lives in.
struct Parsed {
  std::unique_ptr<llvm::LLVMContext> Ctx;
  std::unique_ptr<llvm::Module> M;
};

/// `IR` parsed (M null, and a test failure naming the line, when it is
/// not valid IR).
inline Parsed parse(const std::string &IR) {
  Parsed P{std::make_unique<llvm::LLVMContext>(), nullptr};
  llvm::SMDiagnostic Diag;
  P.M = llvm::parseAssemblyString(IR, Diag, *P.Ctx);
  if (!P.M)
    ADD_FAILURE() << Diag.getMessage().str() << " at line " << Diag.getLineNo()
                  << "\n"
                  << IR;
  return P;
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_PARSEDIR_H
