//===- lib/vm/function_code.h - A function's code to rewrite ----*- C++ -*-===//
//
// Private to lib/vm (bind_params.cpp, fold_constant_calls.cpp): one bytecode
// function's instructions decoded into a list that can be edited (arguments
// replaced, instructions removed, a prologue added), its basic blocks and
// the reads and writes of each register, and the executable with the
// function replaced by the edited list.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_VM_FUNCTION_CODE_H
#define VMJIT_LIB_VM_FUNCTION_CODE_H

#include "vmjit/bytecode/executable.h"

#include <cstdint>
#include <vector>

namespace vmjit::vm {

/// One decoded instruction.
struct CodeInstr {
  Opcode Op = Opcode::Ret;
  /// Call: the destination and the callee.
  RegName Dst = kVoidRegister;
  int64_t Callee = 0;
  std::vector<Arg> Args;
  /// Ret: the register returned; If: the condition.
  RegName Reg = 0;
  /// Goto, If: the instruction jumped to (the list's numbering).
  int64_t Target = 0;
  /// The instruction's number in the function it was decoded from.
  int64_t Origin = 0;
  bool Dead = false;

  /// Whether the instruction reads register `R` (a Call argument, the
  /// returned register, the condition).
  bool reads(RegName R) const;
  bool isCall() const { return Op == Opcode::Call; }
};

/// A function's instructions, editable.
struct FunctionCode {
  std::vector<CodeInstr> Instrs;
  /// Instructions run before the first one (they are not jump targets).
  std::vector<CodeInstr> Prologue;

  static FunctionCode decode(const Executable &Exe, int64_t Func);
  /// The words of the live instructions (prologue first); jumps to a
  /// removed instruction go to the next live one.
  std::vector<Word> encode() const;
};

/// The basic blocks of a function's live instructions and, per register,
/// where it is read and written. Recomputed after every edit.
class CodeFacts {
public:
  CodeFacts(const FunctionCode &Code, int64_t NumRegs);

  int64_t block(int64_t Instr) const { return BlockOf[size_t(Instr)]; }
  /// Live instructions reading / writing register R, in order.
  const std::vector<int64_t> &readers(RegName R) const {
    return Readers[size_t(R)];
  }
  const std::vector<int64_t> &writers(RegName R) const {
    return Writers[size_t(R)];
  }
  /// The first live instruction writing R after `Instr` in its block, or
  /// -1 when none does.
  int64_t nextWrite(RegName R, int64_t Instr) const;
  /// Whether every read of R other than at `Except` is in `Instr`'s block
  /// after `Instr` and before R's next write there.
  bool readsConfinedAfter(RegName R, int64_t Instr, int64_t Except) const;
  /// Whether a write of R (other than its value at entry) may reach the
  /// read at `Instr`.
  bool mayBeRedefinedAt(RegName R, int64_t Instr) const;

private:
  std::vector<int64_t> BlockOf;
  std::vector<std::vector<int64_t>> Preds;
  std::vector<std::vector<int64_t>> Readers;
  std::vector<std::vector<int64_t>> Writers;
};

/// `Exe` with function table `Table` (its own, with entries appended and
/// function `Func`'s signature changed; instruction ranges are recomputed),
/// bytecode function `Func`'s code replaced by `Code`, and `NewConstants`
/// appended to the constant pool. The replaced function's debug names are
/// dropped and its source positions kept by origin.
std::shared_ptr<Executable> replaceFunction(const Executable &Exe,
                                            std::vector<FunctionInfo> Table,
                                            int64_t Func,
                                            const FunctionCode &Code,
                                            std::vector<Any> NewConstants);

} // namespace vmjit::vm

#endif // VMJIT_LIB_VM_FUNCTION_CODE_H
