//===- vmjit/bytecode/executable.h - A loaded program -----------*- C++ -*-===//
//
// An Executable is what the assembler, the builder and the binary loader
// produce and what VMs run: a function table, a constant pool and the
// instruction stream with its offset table (instruction index -> word).
// It is immutable once built and shared (std::shared_ptr) by every VM and
// the JIT. Tensor constants may point into a memory-mapped file, which
// each such tensor keeps alive.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_BYTECODE_EXECUTABLE_H
#define VMJIT_BYTECODE_EXECUTABLE_H

#include "vmjit/bytecode/bytecode.h"
#include "vmjit/runtime/any.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vmjit::vm {

enum class FunctionKind : uint8_t {
  /// Resolved by name from the registry or a kernel library when a VM is
  /// created, and called through the safe-call ABI.
  Packed = 0,
  /// A bytecode function, run by the interpreter (or its JIT code).
  Bytecode = 1,
  /// Code compiled ahead of time from a VM function (TVM's "VM TIR
  /// function"): resolved and called like a packed function.
  Native = 2,
};

/// "packed", "bytecode", "native".
std::string_view functionKindName(FunctionKind K) noexcept;

struct FunctionInfo {
  FunctionKind Kind = FunctionKind::Packed;
  std::string Name;
  /// Bytecode functions: instructions [StartInstr, EndInstr).
  int64_t StartInstr = 0;
  int64_t EndInstr = 0;
  int64_t NumParams = 0;
  int64_t RegisterFileSize = 0;
  std::vector<std::string> ParamNames;

  int64_t numInstrs() const noexcept { return EndInstr - StartInstr; }
  bool operator==(const FunctionInfo &O) const = default;
};

/// Names a bytecode function's vmasm text gave beyond its parameters, kept
/// (in the binary format's optional NAME section) so that `vmjit dis`
/// writes them back. Executables from the builder or TVM have none.
struct DebugNames {
  /// (register, name), by increasing register: every register the text
  /// refers to by name (a parameter only where the text uses its name).
  std::vector<std::pair<int64_t, std::string>> Registers;
  /// (instruction within the function, label), by increasing instruction.
  std::vector<std::pair<int64_t, std::string>> Labels;
  bool empty() const noexcept { return Registers.empty() && Labels.empty(); }
  bool operator==(const DebugNames &O) const = default;
};

/// Where the text of an instruction begins: a 1-based line and column, 0
/// for unknown (a column of 0 with a known line: the line only).
struct SourcePos {
  uint32_t Line = 0;
  uint32_t Col = 0;
  bool operator==(const SourcePos &O) const = default;
};

/// The source positions of a program assembled from vmasm text, kept (in
/// the binary format's optional LINE section) so that runtime errors name
/// the line of each frame. Executables from the builder or TVM have none.
struct SourceMap {
  /// The name the text was assembled under, as verifier errors give it.
  std::string File;
  /// One position per instruction, in the global instruction numbering.
  std::vector<SourcePos> Instrs;
  bool empty() const noexcept { return Instrs.empty(); }
  bool operator==(const SourceMap &O) const = default;
};

class Executable {
public:
  Executable() = default;
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const std::vector<FunctionInfo> &functions() const noexcept {
    return Functions;
  }
  const FunctionInfo &function(int64_t Index) const noexcept {
    return Functions[static_cast<size_t>(Index)];
  }
  /// Index of the function named `Name`, if any.
  std::optional<int64_t> findFunction(std::string_view Name) const;

  const std::vector<Any> &constants() const noexcept { return Constants; }
  const std::vector<Word> &code() const noexcept { return Code; }
  const std::vector<int64_t> &instrOffsets() const noexcept {
    return InstrOffsets;
  }
  int64_t numInstrs() const noexcept {
    return static_cast<int64_t>(InstrOffsets.size());
  }
  /// Instruction `Index` (global numbering), decoded in place.
  InstrView instr(int64_t Index) const noexcept {
    return InstrView(Code.data() + InstrOffsets[static_cast<size_t>(Index)]);
  }

  /// Deep equality: function table, constants (tensors by dtype, shape and
  /// bytes) and instruction words. Debug names and source positions are
  /// not compared: they change nothing a program does.
  bool equals(const Executable &O) const;

  /// The debug names of function `Func`, or null when it has none.
  const DebugNames *debugNames(int64_t Func) const noexcept {
    auto I = static_cast<size_t>(Func);
    return I < Names.size() && !Names[I].empty() ? &Names[I] : nullptr;
  }
  /// Sets the debug names: empty, or one entry per function (empty for a
  /// function without names). The reader and the assembler check them.
  void setDebugNames(std::vector<DebugNames> N) { Names = std::move(N); }

  /// The name vmasm text gave constant `Const` (`.const $NAME`), or null:
  /// `vmjit dis` writes it back. Names change nothing a program does.
  const std::string *constantName(size_t Const) const noexcept {
    return Const < ConstNames.size() && !ConstNames[Const].empty()
               ? &ConstNames[Const]
               : nullptr;
  }
  /// Sets the constant names: empty, or one per constant ("" for one
  /// without a name). The reader and the assembler check them.
  void setConstantNames(std::vector<std::string> N) {
    ConstNames = std::move(N);
  }

  /// The source positions of the instructions, or null when the program
  /// has none (it did not come from vmasm text, or they were stripped).
  const SourceMap *sourceMap() const noexcept {
    return Sources.empty() ? nullptr : &Sources;
  }
  /// The position of instruction `Index` (global numbering), or null when
  /// it is unknown.
  const SourcePos *sourcePos(int64_t Index) const noexcept {
    auto I = static_cast<size_t>(Index);
    return Index >= 0 && I < Sources.Instrs.size() && Sources.Instrs[I].Line
               ? &Sources.Instrs[I]
               : nullptr;
  }
  /// Sets the source positions: empty, or one per instruction. The reader
  /// and the assembler check them.
  void setSourceMap(SourceMap M) { Sources = std::move(M); }

  /// The bytes TVM's format held after the data of tensor constant `Const`
  /// (TVM's writer records Elems * ((bits + 7) / 8) bytes for a packed
  /// sub-byte tensor, reading past its data), or null when there were none.
  /// They change nothing a program does; the TVM-format writer writes them
  /// back so that a TVM file converts to itself byte for byte.
  const std::string *tvmTensorTail(size_t Const) const noexcept {
    auto It = TvmTails.find(Const);
    return It == TvmTails.end() ? nullptr : &It->second;
  }
  /// Sets the bytes tvmTensorTail gives (the TVM-format reader does).
  void setTvmTensorTails(std::map<size_t, std::string> Tails) {
    TvmTails = std::move(Tails);
  }

  /// Builds an executable from its parts: computes the offset table and
  /// the name index. Throws Error("FormatError") if the words do not split
  /// into whole instructions or a name repeats. Does not verify: see
  /// verifier.h.
  static std::shared_ptr<Executable>
  create(std::vector<FunctionInfo> Functions, std::vector<Any> Constants,
         std::vector<Word> Code);

private:
  std::vector<FunctionInfo> Functions;
  std::vector<Any> Constants;
  std::vector<Word> Code;
  std::vector<int64_t> InstrOffsets;
  /// Looked up by string_view, without building a std::string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view S) const noexcept {
      return std::hash<std::string_view>{}(S);
    }
  };
  std::unordered_map<std::string, int64_t, NameHash, std::equal_to<>>
      NameIndex;
  std::vector<DebugNames> Names;
  std::vector<std::string> ConstNames;
  SourceMap Sources;
  std::map<size_t, std::string> TvmTails;
};

} // namespace vmjit::vm

#endif // VMJIT_BYTECODE_EXECUTABLE_H
