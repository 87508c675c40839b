//===- vmjit/bytecode/bytecode.h - Instruction encoding ---------*- C++ -*-===//
//
// The instruction encoding, which is TVM's Relax VM encoding: an instruction
// is a run of 64-bit words,
//   Call [1, dst, func_idx, num_args, arg...]
//   Ret  [2, reg]
//   Goto [3, offset]
//   If   [4, cond_reg, false_offset]
// Jump offsets count instructions from the jump itself (`goto +1` is the
// next instruction). An argument word has its kind in bits 63..56 and a
// sign-extended 56-bit value below. Two special registers exist: void
// (a Call's result is dropped) and vm (reads as the VM context pointer).
//
// InstrView decodes in place, without copying; instrWords and measureInstr
// are the one rule of how many words an instruction takes, which every
// loader checks code by.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_BYTECODE_BYTECODE_H
#define VMJIT_BYTECODE_BYTECODE_H

#include <cstdint>
#include <span>
#include <string_view>

namespace vmjit::vm {

/// One instruction word.
using Word = int64_t;
/// A register number as stored in instructions.
using RegName = int64_t;

enum class Opcode : int64_t { Call = 1, Ret = 2, Goto = 3, If = 4 };

/// Name of an opcode ("call", "ret", "goto", "if"), or "?".
std::string_view opcodeName(Opcode Op) noexcept;

/// The register that drops a Call's result.
inline constexpr RegName kVoidRegister = int64_t(1) << 54;
/// The register that reads as the VM context pointer.
inline constexpr RegName kVMRegister = (int64_t(1) << 54) + 1;
inline constexpr bool isSpecialRegister(RegName R) noexcept {
  return R == kVoidRegister || R == kVMRegister;
}

/// Kinds of a Call argument.
enum class ArgKind : uint8_t {
  Register = 0,
  Immediate = 1,
  ConstIdx = 2,
  FuncIdx = 3,
};

/// An encoded Call argument: kind in bits 63..56, value in 55..0.
class Arg {
public:
  static constexpr int kValueBits = 56;
  static constexpr int64_t kMaxValue = (int64_t(1) << (kValueBits - 1)) - 1;
  static constexpr int64_t kMinValue = -(int64_t(1) << (kValueBits - 1));

  constexpr Arg() = default;
  /// Encodes; `Value` must lie in [kMinValue, kMaxValue].
  constexpr Arg(ArgKind Kind, int64_t Value) noexcept
      : Bits((static_cast<uint64_t>(Kind) << kValueBits) |
             (static_cast<uint64_t>(Value) &
              ((uint64_t(1) << kValueBits) - 1))) {}
  static constexpr Arg fromWord(Word W) noexcept {
    Arg A;
    A.Bits = static_cast<uint64_t>(W);
    return A;
  }
  static constexpr Arg reg(RegName R) noexcept {
    return Arg(ArgKind::Register, R);
  }
  static constexpr Arg vm() noexcept { return reg(kVMRegister); }
  static constexpr Arg imm(int64_t V) noexcept {
    return Arg(ArgKind::Immediate, V);
  }
  static constexpr Arg constant(int64_t Index) noexcept {
    return Arg(ArgKind::ConstIdx, Index);
  }
  static constexpr Arg func(int64_t Index) noexcept {
    return Arg(ArgKind::FuncIdx, Index);
  }
  static constexpr bool fitsValue(int64_t V) noexcept {
    return V >= kMinValue && V <= kMaxValue;
  }

  /// The raw kind byte (may be out of the ArgKind range in a bad file).
  constexpr uint8_t kindByte() const noexcept { return Bits >> kValueBits; }
  constexpr ArgKind kind() const noexcept {
    return static_cast<ArgKind>(kindByte());
  }
  /// The sign-extended 56-bit value.
  constexpr int64_t value() const noexcept {
    return static_cast<int64_t>(Bits << (64 - kValueBits)) >>
           (64 - kValueBits);
  }
  constexpr Word word() const noexcept { return static_cast<Word>(Bits); }
  constexpr bool operator==(const Arg &O) const noexcept {
    return Bits == O.Bits;
  }

private:
  uint64_t Bits = 0;
};

/// Number of words of each fixed-size instruction, and of a Call header.
inline constexpr int64_t kCallHeaderWords = 4;
inline constexpr int64_t kRetWords = 2;
inline constexpr int64_t kGotoWords = 2;
inline constexpr int64_t kIfWords = 3;
/// The word of a Call that holds its argument count.
inline constexpr int64_t kCallNumArgsWord = 3;

/// Words an instruction of opcode `Op` takes (a Call with `NumCallArgs`
/// arguments); 0 for a word that is no opcode.
constexpr int64_t instrWords(Opcode Op, int64_t NumCallArgs) noexcept {
  switch (Op) {
  case Opcode::Call:
    return kCallHeaderWords + NumCallArgs;
  case Opcode::Ret:
    return kRetWords;
  case Opcode::Goto:
    return kGotoWords;
  case Opcode::If:
    return kIfWords;
  }
  return 0;
}

/// What measuring an instruction against the words left found.
enum class InstrLengthStatus : uint8_t {
  Ok,
  /// The first word is no opcode.
  UnknownOpcode,
  /// A call without its whole header.
  CallHeaderTruncated,
  /// A call whose argument count is negative or more than the words left.
  CallArgsTooMany,
  /// A fixed-size instruction longer than the words left.
  Truncated,
};

/// An instruction's length, or why it has none.
struct InstrLength {
  InstrLengthStatus Status = InstrLengthStatus::Ok;
  /// The words the instruction takes, when Status is Ok.
  int64_t Words = 0;
};

/// The one check of an instruction's length against its code: measures
/// (by instrWords) the instruction at word `Pos` of `Code` (Pos < its size)
/// and checks it against the words from there on. Loaders report a bad
/// status in their own words and places.
InstrLength measureInstr(std::span<const Word> Code, int64_t Pos) noexcept;

/// A decoded view of one instruction in place. Only meaningful for
/// instructions the loader has checked for length.
class InstrView {
public:
  explicit InstrView(const Word *Start) noexcept : Start(Start) {}
  Opcode opcode() const noexcept { return static_cast<Opcode>(Start[0]); }
  // Call
  RegName callDst() const noexcept { return Start[1]; }
  int64_t callFunc() const noexcept { return Start[2]; }
  int64_t callNumArgs() const noexcept { return Start[kCallNumArgsWord]; }
  Arg callArg(int64_t I) const noexcept {
    return Arg::fromWord(Start[kCallHeaderWords + I]);
  }
  const Word *callArgWords() const noexcept { return Start + kCallHeaderWords; }
  // Ret
  RegName retReg() const noexcept { return Start[1]; }
  // Goto
  int64_t gotoOffset() const noexcept { return Start[1]; }
  // If
  RegName ifCond() const noexcept { return Start[1]; }
  int64_t ifFalseOffset() const noexcept { return Start[2]; }

  /// Words this instruction takes (1 for a word that is no opcode).
  int64_t numWords() const noexcept {
    const bool IsCall = opcode() == Opcode::Call;
    const int64_t N = instrWords(opcode(), IsCall ? callNumArgs() : 0);
    return N ? N : 1;
  }
  const Word *words() const noexcept { return Start; }

private:
  const Word *Start;
};

} // namespace vmjit::vm

#endif // VMJIT_BYTECODE_BYTECODE_H
