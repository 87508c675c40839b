//===- TestInputs.h - The JIT tests' programs in Inputs/ --------*- C++ -*-===//
//
// The JIT tests run shared programs (Inputs/*.vmasm); this assembles one,
// and registers the hook some of them call to act in mid-program.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_TESTINPUTS_H
#define VMJIT_UNITTESTS_JIT_TESTINPUTS_H

#include "vmjit/builtins/builtins.h"
#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/text/assembler.h"

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

namespace vmjit::jittest {

/// The text of Inputs/<Name>.
inline std::string inputText(const std::string &Name) {
  std::ifstream In(std::string(VMJIT_JIT_TEST_INPUTS) + "/" + Name);
  std::stringstream S;
  S << In.rdbuf();
  return S.str();
}

/// Inputs/<Name> assembled, the VM's builtins registered first (register
/// a test's own functions before: the assembler links against them).
inline std::shared_ptr<vm::Executable> assembleInput(const std::string &Name) {
  vm::registerVMBuiltins();
  return vm::assemble(inputText(Name), Name);
}

/// Registers `Name`(n), which runs `Hook` when it is set: what a test does
/// in the middle of a program (Hook must outlive the registration).
inline void registerHook(const char *Name, std::function<void()> &Hook) {
  Registry::global().addTyped(
      Name,
      [&Hook](int64_t) {
        if (Hook)
          Hook();
      },
      /*AllowOverride=*/true);
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_TESTINPUTS_H
