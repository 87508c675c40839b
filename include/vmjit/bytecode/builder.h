//===- vmjit/bytecode/builder.h - Building executables from C++ -*- C++ -*-===//
//
// ExecutableBuilder makes executables from code: declare functions, emit
// Call / Ret / Goto / If with labels, add constants (de-duplicated), and
// finish into a verified Executable. The assembler, the tests and the
// benchmarks (which generate large programs) all build through it.
//
//   ExecutableBuilder B;
//   int64_t Add = B.declarePacked("scalar.add");
//   FunctionBuilder &F = B.beginFunction("main", {"x"});
//   F.emitCall(1, Add, {Arg::reg(0), Arg::imm(1)});
//   F.emitRet(1);
//   B.endFunction();
//   std::shared_ptr<Executable> Exe = B.finish();
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_BYTECODE_BUILDER_H
#define VMJIT_BYTECODE_BUILDER_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/bytecode/verifier.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::vm {

/// A jump target inside one function.
struct Label {
  int64_t Id = -1;
};

/// Emits the body of one bytecode function. Registers used grow the
/// register file (highest register + 1, at least the parameter count).
class FunctionBuilder {
public:
  Label newLabel();
  /// Binds `L` to the next instruction emitted. Throws ValueError if bound
  /// twice.
  void bind(Label L);

  /// dst = Func(Args...). `Dst` may be kVoidRegister.
  void emitCall(RegName Dst, int64_t Func, std::vector<Arg> Args);
  void emitRet(RegName Reg);
  void emitGoto(Label Target);
  /// Falls through if `Cond` is true, else jumps to `Else`.
  void emitIf(RegName Cond, Label Else);
  /// Jumps by raw instruction offsets (as the text format allows).
  void emitGotoOffset(int64_t Offset);
  void emitIfOffset(RegName Cond, int64_t FalseOffset);

  /// Raises the register file size to at least `Size`.
  void reserveRegisters(int64_t Size);
  int64_t numInstrs() const noexcept {
    return static_cast<int64_t>(Instrs.size());
  }
  int64_t registerFileSize() const noexcept { return RegisterFileSize; }

private:
  friend class ExecutableBuilder;
  struct PendingJump {
    size_t Instr;    // index into Instrs
    size_t WordSlot; // index of the offset word inside that instruction
    int64_t LabelId;
  };
  explicit FunctionBuilder(int64_t NumParams) : RegisterFileSize(NumParams) {}
  void useRegister(RegName R);
  std::vector<std::vector<Word>> Instrs;
  std::vector<int64_t> LabelTargets; // -1 while unbound
  std::vector<PendingJump> Pending;
  int64_t RegisterFileSize;
};

class ExecutableBuilder {
public:
  ExecutableBuilder();
  ~ExecutableBuilder();

  /// Declares (or finds) a packed function; returns its index.
  int64_t declarePacked(const std::string &Name);
  /// Declares a native function (resolved like a packed one).
  int64_t declareNative(const std::string &Name);
  /// Declares a native function with parameters and a register file (TVM's
  /// VMTIR functions have both). Throws ValueError if `RegisterFileSize` is
  /// smaller than the parameter count, or if `Name` is already declared
  /// with another kind or parameter list.
  int64_t declareNative(const std::string &Name,
                        const std::vector<std::string> &Params,
                        int64_t RegisterFileSize);
  /// Declares a bytecode function to be defined later; returns its index.
  /// Throws ValueError if `Name` is already declared with another kind or
  /// parameter list.
  int64_t declareFunction(const std::string &Name,
                          const std::vector<std::string> &Params);
  /// Index of `Name` if declared.
  std::optional<int64_t> lookup(const std::string &Name) const;

  /// Starts the body of bytecode function `Name` (declaring it if needed).
  FunctionBuilder &beginFunction(const std::string &Name,
                                 const std::vector<std::string> &Params);
  /// Ends the current function: resolves its labels. Throws ValueError for
  /// a label that was used but never bound.
  void endFunction();

  /// Adds a constant and returns its pool index. With `Dedupe` an equal
  /// scalar, string, dtype or shape (or the same tensor object) already in
  /// the pool is reused.
  int64_t addConstant(Any Value, bool Dedupe = true);

  /// Produces the executable and verifies it under `Limits` (throws the
  /// verifier's Error).
  std::shared_ptr<Executable> finish(const VerifierLimits &Limits = {});

private:
  int64_t declare(const std::string &Name, FunctionKind Kind,
                  const std::vector<std::string> *Params);
  std::vector<FunctionInfo> Functions;
  std::vector<std::vector<Word>> Bodies; // per function, resolved words
  std::vector<int64_t> InstrCounts;      // per function
  std::vector<bool> Defined;
  std::map<std::string, int64_t> Index;
  std::vector<Any> Constants;
  std::map<std::string, int64_t> ConstantKeys;
  std::unique_ptr<FunctionBuilder> Current;
  int64_t CurrentIndex = -1;
};

} // namespace vmjit::vm

#endif // VMJIT_BYTECODE_BUILDER_H
