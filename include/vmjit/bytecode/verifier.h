//===- vmjit/bytecode/verifier.h - Checking executables ---------*- C++ -*-===//
//
// Nothing runs before the verifier has accepted an executable. It checks
// every rule of the vmasm contract: register, constant, function and jump
// indices in range; bytecode calls with the right number of arguments;
// functions ending in `ret` or `goto`; and definite assignment (a register
// is read only where every path from the entry has written it; parameters
// count as written), by a dataflow pass over the basic blocks of each
// function. It also enforces size limits so that a hostile file cannot
// make the VM allocate without bound.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_BYTECODE_VERIFIER_H
#define VMJIT_BYTECODE_VERIFIER_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/error.h"

#include <cstdint>

namespace vmjit::vm {

/// Size limits on an executable (docs/security.md lists the defaults and
/// why). Loading, assembling and building all enforce the defaults;
/// LoadOptions::Limits and loadProgram can tighten them.
struct VerifierLimits {
  /// Entries in the function table.
  int64_t MaxFunctions = int64_t(1) << 20;
  /// Entries in the constant pool.
  int64_t MaxConstants = int64_t(1) << 24;
  /// Instructions in all functions together.
  int64_t MaxInstructions = int64_t(1) << 26;
  /// Bytes of one tensor constant.
  int64_t MaxTensorConstantBytes = int64_t(16) << 30;
  /// Registers in one function's register file.
  int64_t MaxRegisters = int64_t(1) << 16;
  /// Bytes of bitsets the definite-assignment pass may use for one
  /// function (blocks x registers / 8).
  int64_t MaxDataflowBytes = int64_t(256) << 20;
};

/// Where a rule was broken, for tools that map it back to source text.
struct VerifyLocation {
  int64_t Func = -1;  ///< function index; -1: the executable as a whole
  int64_t Instr = -1; ///< instruction within the function; -1: its header
  int64_t Reg = -1;   ///< the register the rule is about; -1: none
};

/// What verifyExecutable throws: an Error of kind "VerifyError" that also
/// carries its location (catch it as Error and that is all there is).
class VerifyFailure : public Error {
public:
  VerifyFailure(std::string Message, VerifyLocation Where)
      : Error("VerifyError", std::move(Message)), Where(Where) {}
  VerifyLocation Where;
};

/// Throws VerifyFailure ("function 'F', instruction N (call G): ...") for
/// the first rule the executable breaks.
void verifyExecutable(const Executable &Exe, const VerifierLimits &Limits = {});

} // namespace vmjit::vm

#endif // VMJIT_BYTECODE_VERIFIER_H
