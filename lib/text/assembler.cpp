//===- assembler.cpp - The vmasm assembler ---------------------------------===//
//
// Three steps. Every line is lexed and parsed on its own into a Stmt; a bad
// line is reported and kept only for what it defines (a label, a constant
// name, the start or the end of a function), so that it causes no second,
// misleading error. A pass over the statements then checks the structure
// and resolves labels, register names and constants. Every error found is
// a candidate and the first one in the text is thrown. Only a file without
// errors reaches ExecutableBuilder.
//
//===----------------------------------------------------------------------===//

#include "vmjit/text/assembler.h"
#include "vmjit/bytecode/builder.h"
#include "vmjit/bytecode/verifier.h"
#include "vmjit/files/file_io.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/asm_lexer.h"
#include "vmjit/text/literals.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace vmjit::vm {
namespace {

using namespace asmtext;

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

/// Parses `Tok` as an int64; nullopt if it is no integer literal, throws if
/// it is one that does not fit.
std::optional<int64_t> tokenInt64(const Token &T) {
  if (!T.is(Tok::Number))
    return std::nullopt;
  bool TooLarge = false;
  auto L = parseIntLit(T.Text, TooLarge);
  if (!L)
    return std::nullopt;
  auto V = TooLarge ? std::nullopt : toInt64(*L);
  if (!V)
    failAt(T.P, fmt::format("integer {} does not fit in 64 bits", T.Text));
  return V;
}

/// Parses a float literal (already taken from `Lx` as `T`) into the bits of
/// format `F`: C syntax (decimal or hex), inf, infinity, nan and
/// nan(MANTISSA), optionally signed. `What` completes "expected ...".
uint64_t parseFloatBits(Lexer &Lx, const Token &T, const FloatFormat &F,
                        std::string_view What) {
  if (!T.is(Tok::Number) && !T.is(Tok::Ident))
    failAt(T.P, fmt::format("expected {}", What));
  LiteralBits L = parseFloatLiteral(T.Text, F);
  if (L.Status == LiteralStatus::Invalid)
    failAt(T.P, T.is(Tok::Ident)
                    ? fmt::format("expected {}", What)
                    : fmt::format("invalid number '{}'", T.Text));
  if (L.Status == LiteralStatus::OutOfRange)
    failAt(T.P, fmt::format("{} is out of range for {}", T.Text, F.Name));
  const uint64_t Mag = L.Bits & ~F.signBit();
  if (Mag <= F.expMask() || !Lx.peek().is(Tok::LParen))
    return L.Bits;
  // nan(MANTISSA): a NaN with the given payload.
  Lx.next();
  Token M = Lx.next();
  const uint64_t Max = (uint64_t(1) << F.MantBits) - 1;
  bool TooLarge = false;
  auto Lit = M.is(Tok::Number) ? parseIntLit(M.Text, TooLarge) : std::nullopt;
  if (!Lit || Lit->Neg || TooLarge || Lit->Mag == 0 || Lit->Mag > Max)
    failAt(M.P, fmt::format("expected a NaN mantissa between 0x1 and {:#x} "
                            "for {}",
                            Max, F.Name));
  Token Close = Lx.next();
  if (!Close.is(Tok::RParen))
    failAt(Close.P, "expected ')' after the NaN mantissa");
  return (L.Bits & (F.signBit() | F.expMask())) | Lit->Mag;
}

/// Appends the low `Bytes` bytes of `V`, little-endian (the host order).
void appendLE(std::string &Out, uint64_t V, size_t Bytes) {
  for (size_t I = 0; I < Bytes; ++I)
    Out.push_back(static_cast<char>(V >> (8 * I)));
}


//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

enum class StmtKind : uint8_t {
  Func,
  End,
  Extern,
  Native,
  Regs,
  Const,
  Label,
  // Instructions.
  Call,
  Ret,
  Goto,
  If,
};

bool isInstr(StmtKind K) { return K >= StmtKind::Call; }

struct RegRef {
  Pos P;
  /// `%vm` or `%void` (Num is kVMRegister or kVoidRegister).
  bool IsSpecial = false;
  /// `%name`; empty for `%N`.
  std::string Name;
  /// `%N`, or the number given to the name.
  int64_t Num = 0;
};

struct Operand {
  ArgKind Kind = ArgKind::Immediate;
  Pos P;
  RegRef Reg;        // Register
  int64_t Value = 0; // Immediate; ConstIdx (by index, or once resolved)
  std::string Name;  // ConstIdx by name; FuncIdx
};

/// One parsed line. Only the fields of its kind are set.
struct Stmt {
  StmtKind Kind = StmtKind::Func;
  Pos P;
  /// The line had an error: only what it defines is used.
  bool Broken = false;
  /// Func, Extern, Native, Const, Label: the name; Call: the callee.
  std::string Name;
  Pos NamePos;
  bool HasName = false;
  bool NameIsIndex = false; // `.const $3 = ...`
  int64_t NameIndex = 0;
  std::vector<std::string> Params; // Func, Native
  /// Per parameter: written as a string (a name only, not a register name).
  std::vector<char> ParamQuoted;
  bool HasParamList = false; // Native: `(...)` was written
  Any Value;                 // Const
  int64_t Count = 0;         // Regs; Native with HasRegs
  bool HasRegs = false;      // Native: `.regs N` was written
  bool HasDst = false;             // Call
  RegRef Dst;
  std::vector<Operand> Args;
  RegRef Reg; // Ret, If
  // Goto, If: a label or an offset (labels are resolved into Offset).
  bool TargetIsOffset = false;
  std::string Target;
  Pos TargetPos;
  int64_t Offset = 0;
  /// Instructions: index inside the function.
  int64_t LocalIndex = 0;
};

struct FuncDecl {
  std::string Name;
  FunctionKind Kind;
  std::vector<std::string> Params;
  Pos P;
  /// Native: the register file size (`.regs N`, else the parameter count).
  int64_t Regs = 0;
};

/// The statements between `.func` and `.end`.
struct Body {
  std::string Name;
  std::vector<std::string> Params;
  std::vector<char> ParamQuoted;
  Pos P;
  std::vector<size_t> Items; // labels and instructions
  bool HasRegs = false;
  int64_t Regs = 0;
  Pos RegsPos;
};

/// Calls `F` on each register an instruction statement names, in the order
/// the assembler numbers them: the destination, then the register
/// arguments (not %vm or %void); or the register of a ret or an if.
template <typename StmtT, typename Fn> void forEachRegRef(StmtT &S, Fn F) {
  if (S.Kind == StmtKind::Call) {
    if (S.HasDst)
      F(S.Dst);
    for (auto &O : S.Args)
      if (O.Kind == ArgKind::Register && !O.Reg.IsSpecial)
        F(O.Reg);
  } else if ((S.Kind == StmtKind::Ret || S.Kind == StmtKind::If) &&
             !S.Reg.IsSpecial) {
    F(S.Reg);
  }
}

std::string_view directiveOf(FunctionKind K) {
  switch (K) {
  case FunctionKind::Packed:
    return ".extern";
  case FunctionKind::Bytecode:
    return ".func";
  case FunctionKind::Native:
    return ".native";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// The assembler
//===----------------------------------------------------------------------===//

class Assembler {
public:
  Assembler(std::string_view Text, const std::string &FileName,
            const VerifierLimits &Limits)
      : Text(Text), FileName(FileName), Limits(Limits),
        BaseDir(std::filesystem::path(FileName).parent_path()) {}

  std::shared_ptr<Executable> run();

private:
  void report(Pos P, std::string Msg) {
    if (!First || P < First->P)
      First = TextError{P, std::move(Msg)};
  }

  // Parsing.
  void parseLine(std::string_view Line, int LineNo);
  void parseStmt(Lexer &Lx, Stmt &S, bool &HasKind);
  void parseFuncHeader(Lexer &Lx, Stmt &S);
  void parseParams(Lexer &Lx, Stmt &S);
  void parseNative(Lexer &Lx, Stmt &S);
  void parseCall(Lexer &Lx, Stmt &S);
  Operand parseArg(const Token &T);
  RegRef parseReg(const Token &T, std::string_view Expected,
                  const char *VMError);
  void parseTarget(Lexer &Lx, Stmt &S, std::string_view After);
  void parseConst(Lexer &Lx, Stmt &S);
  Any parseValue(Lexer &Lx);
  std::vector<int64_t> parseDims(Lexer &Lx, bool ForTensor);
  Any parseTensor(Lexer &Lx);
  void appendElement(Lexer &Lx, const Token &T, DLDataType DT,
                     std::string &Out);
  Any loadNpy(const Token &Path, DLDataType DT,
              const std::vector<int64_t> &Dims);
  static void expectEnd(Lexer &Lx,
                        std::string_view Msg = "expected end of line");
  static void takeFunctionName(Lexer &Lx, Stmt &S, std::string_view Expected);

  // Checking and resolving.
  void analyze();
  void declareFunctions();
  void defineConst(Stmt &S);
  void finishBody(Body &B, Pos EndPos);

  std::shared_ptr<Executable> build();
  /// A verifier error at its line and column, with register names.
  [[noreturn]] void throwVerifyAtSource(const VerifyFailure &V,
                                        const ExecutableBuilder &B);
  std::string registerName(const Body &Bd, int64_t Reg) const;
  /// One name per constant ("" for an unnamed one), or none at all.
  std::vector<std::string> constantNames() const;
  /// The register and label names of every function's text.
  std::vector<DebugNames> debugNames(const Executable &Exe,
                                     const ExecutableBuilder &B) const;
  /// Where the text of each instruction begins.
  SourceMap sourceMap(const Executable &Exe, const ExecutableBuilder &B) const;
  static const RegRef *readOf(const Stmt &S, int64_t Reg);
  bool isWrittenIn(const Body &Bd, int64_t Reg) const;

  std::string_view Text;
  const std::string &FileName;
  const VerifierLimits &Limits;
  std::filesystem::path BaseDir;
  std::optional<TextError> First;
  Pos EndOfFile;

  std::vector<Stmt> Stmts;
  std::vector<FuncDecl> Decls;
  std::vector<Body> Bodies;
  struct ConstName {
    int64_t Index;
    int Line;
  };
  std::unordered_map<std::string, ConstName> ConstNames;
  int64_t NumConsts = 0;
};

std::shared_ptr<Executable> Assembler::run() {
  int LineNo = 0;
  size_t Start = 0;
  while (true) {
    ++LineNo;
    size_t NL = Text.find('\n', Start);
    std::string_view Line =
        Text.substr(Start, NL == std::string_view::npos ? std::string_view::npos
                                                        : NL - Start);
    parseLine(Line, LineNo);
    if (NL == std::string_view::npos) {
      EndOfFile = Pos{LineNo, static_cast<int>(Line.size()) + 1};
      break;
    }
    Start = NL + 1;
  }
  analyze();
  if (First)
    throwError("ParseError",
               fmt::format("{}:{}:{}: error: {}", FileName, First->P.Line,
                           First->P.Col, First->Msg));
  return build();
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

void Assembler::parseLine(std::string_view Line, int LineNo) {
  Lexer Lx(Line, LineNo);
  Stmt S;
  bool HasKind = false;
  try {
    if (Lx.peek().is(Tok::End))
      return;
    parseStmt(Lx, S, HasKind);
    Stmts.push_back(std::move(S));
  } catch (TextError &E) {
    report(E.P, std::move(E.Msg));
    if (HasKind) {
      S.Broken = true;
      Stmts.push_back(std::move(S));
    }
  } catch (const Error &E) {
    // From the runtime while making a value (e.g. a tensor too large).
    report(S.P, E.message());
    if (HasKind) {
      S.Broken = true;
      Stmts.push_back(std::move(S));
    }
  }
}

void Assembler::expectEnd(Lexer &Lx, std::string_view Msg) {
  Token T = Lx.next();
  if (!T.is(Tok::End))
    failAt(T.P, std::string(Msg));
}

void Assembler::parseStmt(Lexer &Lx, Stmt &S, bool &HasKind) {
  Token T = Lx.next();
  S.P = T.P;
  auto Begin = [&](StmtKind K) {
    S.Kind = K;
    HasKind = true;
  };

  switch (T.Kind) {
  case Tok::Directive: {
    std::string_view D = T.Text;
    if (D == ".func") {
      Begin(StmtKind::Func);
      parseFuncHeader(Lx, S);
    } else if (D == ".end") {
      Begin(StmtKind::End);
    } else if (D == ".extern") {
      Begin(StmtKind::Extern);
      takeFunctionName(Lx, S, "expected a function name after '.extern'");
    } else if (D == ".native") {
      Begin(StmtKind::Native);
      parseNative(Lx, S);
    } else if (D == ".regs") {
      Begin(StmtKind::Regs);
      Token N = Lx.next();
      auto V = tokenInt64(N);
      if (!V || *V < 0)
        failAt(N.P, "expected a register count after '.regs'");
      S.Count = *V;
    } else if (D == ".const") {
      Begin(StmtKind::Const);
      parseConst(Lx, S);
    } else {
      failAt(T.P, fmt::format("unknown directive '{}'", D));
    }
    break;
  }
  case Tok::Ident:
    if (Lx.peek().is(Tok::Colon)) {
      if (!isLabelName(T.Text))
        failAt(T.P, fmt::format("'{}' cannot name a label (call, ret, goto, "
                                "if, else, vm and void are reserved)",
                                T.Text));
      Begin(StmtKind::Label);
      S.Name = std::string(T.Text);
      S.NamePos = T.P;
      S.HasName = true;
      Lx.next();
      expectEnd(Lx, "expected end of line after the label (a label stands "
                    "on its own line)");
      return;
    }
    if (T.Text == "call") {
      Begin(StmtKind::Call);
      parseCall(Lx, S);
    } else if (T.Text == "ret") {
      Begin(StmtKind::Ret);
      S.Reg = parseReg(Lx.next(), "expected a register after 'ret'",
                       "'ret' cannot return %vm");
    } else if (T.Text == "goto") {
      Begin(StmtKind::Goto);
      parseTarget(Lx, S, "'goto'");
    } else if (T.Text == "if") {
      Begin(StmtKind::If);
      S.Reg = parseReg(Lx.next(), "expected a condition register after 'if'",
                       "'if' cannot test %vm");
      Token Else = Lx.next();
      if (!Else.isIdent("else"))
        failAt(Else.P, "expected 'else' after the condition register");
      parseTarget(Lx, S, "'else'");
    } else {
      Begin(StmtKind::Call); // a broken instruction, still counted as one
      failAt(T.P, fmt::format("unknown instruction '{}'", T.Text));
    }
    break;
  case Tok::Reg: {
    Begin(StmtKind::Call);
    S.Dst = parseReg(T, "", "%vm cannot be the destination of a call");
    // `%void = call F(...)` drops the result, as `call F(...)` does.
    S.HasDst = !S.Dst.IsSpecial;
    Token Eq = Lx.next();
    if (!Eq.is(Tok::Equal))
      failAt(Eq.P, "expected '=' after the destination register");
    Token Call = Lx.next();
    if (!Call.isIdent("call"))
      failAt(Call.P, "expected 'call' after '='");
    parseCall(Lx, S);
    break;
  }
  default:
    Begin(StmtKind::Call); // a broken instruction, still counted as one
    failAt(T.P, "expected a directive, a label or an instruction");
  }
  expectEnd(Lx);
}

/// A function name: an identifier, or a string for any other name.
void Assembler::takeFunctionName(Lexer &Lx, Stmt &S,
                                 std::string_view Expected) {
  Token N = Lx.next();
  if (N.is(Tok::Ident)) {
    S.Name = std::string(N.Text);
  } else if (N.is(Tok::String)) {
    if (N.Str.empty())
      failAt(N.P, "a function name cannot be empty");
    S.Name = N.Str;
  } else {
    failAt(N.P, std::string(Expected));
  }
  S.NamePos = N.P;
  S.HasName = true;
}

void Assembler::parseFuncHeader(Lexer &Lx, Stmt &S) {
  takeFunctionName(Lx, S, "expected a function name after '.func'");
  parseParams(Lx, S);
}

/// `(p, "q", ...)`: an identifier names the parameter's register; a string
/// is only the parameter's name in the function table.
void Assembler::parseParams(Lexer &Lx, Stmt &S) {
  Token L = Lx.next();
  if (!L.is(Tok::LParen))
    failAt(L.P, "expected '(' after the function name");
  S.HasParamList = true;
  if (Lx.peek().is(Tok::RParen)) {
    Lx.next();
    return;
  }
  // Names seen so far: a linear scan per parameter made a long list
  // quadratic (the loader's fuzzer found one that took seconds).
  std::unordered_set<std::string_view> Unquoted;
  while (true) {
    Token P = Lx.next();
    if (P.is(Tok::String)) {
      S.Params.push_back(P.Str);
      S.ParamQuoted.push_back(1);
    } else if (P.is(Tok::Ident)) {
      if (asmtext::isSpecialRegisterName(P.Text))
        failAt(P.P, fmt::format("a parameter cannot be named '{0}' (%{0} is "
                                "the {1} register; a quoted \"{0}\" is a "
                                "name only)",
                                P.Text, P.Text == "vm" ? "VM" : "void"));
      if (!Unquoted.insert(P.Text).second)
        failAt(P.P, fmt::format("duplicate parameter '{}' (a quoted "
                                "\"{}\" may repeat: it is a name only)",
                                P.Text, P.Text));
      S.Params.emplace_back(P.Text);
      S.ParamQuoted.push_back(0);
    } else {
      failAt(P.P, "expected a parameter name (an identifier or a string)");
    }
    Token Sep = Lx.next();
    if (Sep.is(Tok::Comma))
      continue;
    if (Sep.is(Tok::RParen))
      return;
    failAt(Sep.P, "expected ',' or ')' after a parameter");
  }
}

/// `.native NAME`, optionally with `(PARAMS)` and then `.regs N`.
void Assembler::parseNative(Lexer &Lx, Stmt &S) {
  takeFunctionName(Lx, S, "expected a function name after '.native'");
  if (Lx.peek().is(Tok::LParen))
    parseParams(Lx, S);
  if (Lx.peek().is(Tok::Directive) && Lx.peek().Text == ".regs") {
    Lx.next();
    Token N = Lx.next();
    auto V = tokenInt64(N);
    if (!V || *V < 0)
      failAt(N.P, "expected a register count after '.regs'");
    if (*V < static_cast<int64_t>(S.Params.size()))
      failAt(N.P, fmt::format("'.regs {}' is smaller than the {} parameters "
                              "of native function '{}'",
                              *V, S.Params.size(), S.Name));
    S.HasRegs = true;
    S.Count = *V;
  }
}

RegRef Assembler::parseReg(const Token &T, std::string_view Expected,
                           const char *VMError) {
  if (!T.is(Tok::Reg))
    failAt(T.P, std::string(Expected));
  RegRef R;
  R.P = T.P;
  std::string_view Body = T.body();
  if (Body == "void") {
    // Reads as None (TVM's compiler passes R.null_value() this way).
    R.IsSpecial = true;
    R.Num = kVoidRegister;
    return R;
  }
  if (Body == "vm") {
    if (VMError)
      failAt(T.P, VMError);
    R.IsSpecial = true;
    R.Num = kVMRegister;
    return R;
  }
  if (Body[0] >= '0' && Body[0] <= '9') {
    uint64_t N = 0;
    auto [Ptr, Ec] = std::from_chars(Body.data(), Body.data() + Body.size(), N);
    if (Ec != std::errc() || N >= static_cast<uint64_t>(kVoidRegister))
      failAt(T.P, fmt::format("register number {} is too large", Body));
    R.Num = static_cast<int64_t>(N);
    return R;
  }
  R.Name = std::string(Body);
  return R;
}

void Assembler::parseCall(Lexer &Lx, Stmt &S) {
  takeFunctionName(Lx, S, "expected a function name after 'call'");
  Token L = Lx.next();
  if (!L.is(Tok::LParen))
    failAt(L.P, "expected '(' after the function name");
  if (Lx.peek().is(Tok::RParen)) {
    Lx.next();
    return;
  }
  while (true) {
    S.Args.push_back(parseArg(Lx.next()));
    Token Sep = Lx.next();
    if (Sep.is(Tok::Comma))
      continue;
    if (Sep.is(Tok::RParen))
      return;
    failAt(Sep.P, "expected ')' after the call arguments");
  }
}

Operand Assembler::parseArg(const Token &T) {
  Operand O;
  O.P = T.P;
  switch (T.Kind) {
  case Tok::Reg:
    O.Kind = ArgKind::Register;
    O.Reg = parseReg(T, "", nullptr);
    return O;
  case Tok::Number: {
    bool TooLarge = false;
    auto L = parseIntLit(T.Text, TooLarge);
    if (!L)
      failAt(T.P, fmt::format("invalid immediate '{}': immediates are "
                              "integers (other values go in a .const)",
                              T.Text));
    auto V = TooLarge ? std::nullopt : toInt64(*L);
    if (!V || !Arg::fitsValue(*V))
      failAt(T.P, fmt::format("immediate {} does not fit in 56 signed bits",
                              T.Text));
    O.Kind = ArgKind::Immediate;
    O.Value = *V;
    return O;
  }
  case Tok::Const: {
    O.Kind = ArgKind::ConstIdx;
    std::string_view Body = T.body();
    if (Body[0] >= '0' && Body[0] <= '9') {
      auto [Ptr, Ec] =
          std::from_chars(Body.data(), Body.data() + Body.size(), O.Value);
      if (Ec != std::errc())
        failAt(T.P, fmt::format("constant index {} is too large", Body));
    } else {
      O.Name = std::string(Body);
    }
    return O;
  }
  case Tok::FuncRef:
    if (T.Str.empty())
      failAt(T.P, "a function name cannot be empty");
    O.Kind = ArgKind::FuncIdx;
    O.Name = T.Str;
    return O;
  case Tok::String:
    failAt(T.P, "a string cannot be an argument: define it with "
                "'.const $NAME = str \"...\"' and pass $NAME");
  default:
    failAt(T.P, "expected an argument (%reg, an integer, $const, @func or "
                "%vm)");
  }
}

void Assembler::parseTarget(Lexer &Lx, Stmt &S, std::string_view After) {
  Token T = Lx.next();
  S.TargetPos = T.P;
  if (T.is(Tok::Ident)) {
    S.Target = std::string(T.Text);
    return;
  }
  if (T.is(Tok::Number)) {
    auto V = tokenInt64(T);
    if (!V)
      failAt(T.P, fmt::format("invalid jump offset '{}'", T.Text));
    S.TargetIsOffset = true;
    S.Offset = *V;
    return;
  }
  failAt(T.P, fmt::format("expected a label or a relative offset after {}",
                          After));
}

void Assembler::parseConst(Lexer &Lx, Stmt &S) {
  Token N = Lx.next();
  if (!N.is(Tok::Const))
    failAt(N.P, "expected '$NAME' after '.const'");
  std::string_view Body = N.body();
  S.NamePos = N.P;
  if (Body[0] >= '0' && Body[0] <= '9') {
    auto [Ptr, Ec] =
        std::from_chars(Body.data(), Body.data() + Body.size(), S.NameIndex);
    if (Ec != std::errc())
      failAt(N.P, fmt::format("constant index {} is too large", Body));
    S.NameIsIndex = true;
  } else {
    S.Name = std::string(Body);
  }
  S.HasName = true;
  Token Eq = Lx.next();
  if (!Eq.is(Tok::Equal))
    failAt(Eq.P, "expected '=' after the constant name");
  S.Value = parseValue(Lx);
}

Any Assembler::parseValue(Lexer &Lx) {
  Token K = Lx.next();
  const char *Kinds = "expected a constant value: int, float, bool, str, "
                      "dtype, shape, tensor or null";
  if (!K.is(Tok::Ident))
    failAt(K.P, Kinds);
  if (K.Text == "int") {
    Token V = Lx.next();
    auto I = tokenInt64(V);
    if (!I)
      failAt(V.P, "expected an integer after 'int'");
    return Any(*I);
  }
  if (K.Text == "float") {
    Token V = Lx.next();
    return Any(std::bit_cast<double>(
        parseFloatBits(Lx, V, kFloat64, "a number after 'float'")));
  }
  if (K.Text == "bool") {
    Token V = Lx.next();
    if (!V.isIdent("true") && !V.isIdent("false"))
      failAt(V.P, "expected 'true' or 'false' after 'bool'");
    return Any(V.Text == "true");
  }
  if (K.Text == "str") {
    Token V = Lx.next();
    if (!V.is(Tok::String))
      failAt(V.P, "expected a string after 'str'");
    return Any(V.Str);
  }
  if (K.Text == "dtype") {
    Token V = Lx.next();
    if (!V.is(Tok::Ident))
      failAt(V.P, "expected a dtype name after 'dtype'");
    auto DT = parseDType(V.Text);
    if (!DT)
      failAt(V.P, fmt::format("unknown dtype '{}'", V.Text));
    return Any(*DT);
  }
  if (K.Text == "shape")
    return Any(Shape(parseDims(Lx, /*ForTensor=*/false)));
  if (K.Text == "tensor")
    return parseTensor(Lx);
  if (K.Text == "null")
    return Any();
  failAt(K.P, Kinds);
}

std::vector<int64_t> Assembler::parseDims(Lexer &Lx, bool ForTensor) {
  Token L = Lx.next();
  if (!L.is(Tok::LBracket))
    failAt(L.P, ForTensor ? "expected '[' and the tensor's shape"
                          : "expected '[' after 'shape'");
  std::vector<int64_t> Dims;
  if (Lx.peek().is(Tok::RBracket)) {
    Lx.next();
    return Dims;
  }
  while (true) {
    Token D = Lx.next();
    auto V = tokenInt64(D);
    if (!V)
      failAt(D.P, "expected a dimension (an integer)");
    if (ForTensor && *V < 0)
      failAt(D.P, fmt::format("tensor dimension {} is negative", *V));
    Dims.push_back(*V);
    Token Sep = Lx.next();
    if (Sep.is(Tok::Comma))
      continue;
    if (Sep.is(Tok::RBracket))
      return Dims;
    failAt(Sep.P, "expected ',' or ']' in the shape");
  }
}

Any Assembler::parseTensor(Lexer &Lx) {
  Token DTok = Lx.next();
  if (!DTok.is(Tok::Ident))
    failAt(DTok.P, "expected a dtype after 'tensor'");
  auto DT = parseDType(DTok.Text);
  if (!DT)
    failAt(DTok.P, fmt::format("unknown dtype '{}'", DTok.Text));
  if (!isTensorElementDType(*DT))
    failAt(DTok.P, fmt::format("a tensor cannot have elements of dtype {}",
                               DTok.Text));
  const Pos ShapeAt = Lx.peek().P;
  std::vector<int64_t> Dims = parseDims(Lx, /*ForTensor=*/true);
  const std::optional<uint64_t> Elems = tensorElementCount(Dims, *DT);
  if (!Elems)
    failAt(ShapeAt, fmt::format("tensor shape {} has too many elements",
                                shapeString(Dims)));

  Token V = Lx.next();
  if (V.isIdent("hex")) {
    Token Hex = Lx.next();
    if (!Hex.is(Tok::String))
      failAt(Hex.P, "expected the tensor's bytes (a string of hex digits) "
                    "after 'hex'");
    std::string Error;
    Tensor Out = tensorFromHex(Hex.Str, *DT, Dims, Error);
    if (!Error.empty())
      failAt(Hex.P, Error);
    return Any(std::move(Out));
  }
  if (!isVmasmTensorDType(*DT))
    failAt(V.P, fmt::format("a {} tensor is written as hex \"...\" (its "
                            "bytes); values and npy files are for {}",
                            dtypeName(*DT), vmasmTensorDTypeList(" and ")));
  if (V.isIdent("npy")) {
    Token Path = Lx.next();
    if (!Path.is(Tok::String))
      failAt(Path.P, "expected a file name (a string) after 'npy'");
    return loadNpy(Path, *DT, Dims);
  }
  if (!V.is(Tok::LBracket))
    failAt(V.P, "expected '[' and the tensor's values, or 'npy \"FILE\"'");
  std::string Bytes;
  int64_t Count = 0;
  if (Lx.peek().is(Tok::RBracket)) {
    Lx.next();
  } else {
    while (true) {
      appendElement(Lx, Lx.next(), *DT, Bytes);
      ++Count;
      Token Sep = Lx.next();
      if (Sep.is(Tok::Comma))
        continue;
      if (Sep.is(Tok::RBracket))
        break;
      failAt(Sep.P, "expected ',' or ']' after a tensor value");
    }
  }
  const auto Need = static_cast<int64_t>(*Elems);
  if (Count != Need)
    failAt(V.P, fmt::format("tensor of shape {} needs {} value{}, got {}",
                            shapeString(Dims), Need, Need == 1 ? "" : "s",
                            Count));
  Tensor Out = Tensor::empty(Dims, *DT);
  if (!Bytes.empty())
    std::memcpy(Out.data(), Bytes.data(), Bytes.size());
  return Any(std::move(Out));
}

void Assembler::appendElement(Lexer &Lx, const Token &T, DLDataType DT,
                              std::string &Out) {
  const std::string Name = dtypeName(DT);
  const DTypeTraits *R = findDType(DT);
  if (!R)
    failAt(T.P,
           fmt::format("tensor constants of dtype {} are not supported", Name));
  if (R->Literal == LiteralKind::Float) {
    appendLE(Out,
             parseFloatBits(Lx, T, R->Float,
                            fmt::format("a number (the tensor is {})", Name)),
             R->bytes());
    return;
  }
  LiteralBits L = T.is(Tok::Number) || T.isIdent("true") || T.isIdent("false")
                      ? parseElementLiteral(T.Text, DT)
                      : LiteralBits{};
  if (R->Literal == LiteralKind::Bool && L.Status != LiteralStatus::Ok)
    failAt(T.P, "expected true, false or an integer 0..255 (the tensor "
                "is bool)");
  if (L.Status == LiteralStatus::Invalid)
    failAt(T.P, fmt::format("expected an integer (the tensor is {})", Name));
  if (L.Status == LiteralStatus::OutOfRange)
    failAt(T.P, fmt::format("{} is out of range for {}", T.Text, Name));
  appendLE(Out, L.Bits, R->bytes());
}

Any Assembler::loadNpy(const Token &PathTok, DLDataType DT,
                       const std::vector<int64_t> &Dims) {
  std::filesystem::path Path(PathTok.Str);
  if (Path.is_relative())
    Path = BaseDir / Path;
  Tensor T;
  try {
    T = readNpy(Path.string());
  } catch (const Error &E) {
    failAt(PathTok.P, fmt::format("cannot load npy file \"{}\": {}",
                                  PathTok.Str, E.message()));
  }
  std::span<const int64_t> Shape = T.shape();
  if (T.dtype() != DT ||
      !std::equal(Shape.begin(), Shape.end(), Dims.begin(), Dims.end()))
    failAt(PathTok.P,
           fmt::format("npy file \"{}\" holds a {} {} tensor, but the "
                       "constant says {} {}",
                       PathTok.Str, dtypeName(T.dtype()), shapeString(Shape),
                       dtypeName(DT), shapeString(Dims)));
  return Any(std::move(T));
}

//===----------------------------------------------------------------------===//
// Checking and resolving
//===----------------------------------------------------------------------===//

void Assembler::declareFunctions() {
  std::unordered_map<std::string, size_t> Index;
  for (const Stmt &S : Stmts) {
    FunctionKind K;
    if (S.Kind == StmtKind::Func)
      K = FunctionKind::Bytecode;
    else if (S.Kind == StmtKind::Extern)
      K = FunctionKind::Packed;
    else if (S.Kind == StmtKind::Native)
      K = FunctionKind::Native;
    else
      continue;
    if (S.Broken)
      continue;
    int64_t Regs = S.HasRegs ? S.Count : static_cast<int64_t>(S.Params.size());
    auto [It, New] = Index.emplace(S.Name, Decls.size());
    if (New) {
      Decls.push_back({S.Name, K, S.Params, S.P, Regs});
      continue;
    }
    const FuncDecl &D = Decls[It->second];
    if (D.Kind == K && K == FunctionKind::Native &&
        (D.Params != S.Params || D.Regs != Regs)) {
      report(S.NamePos, fmt::format("native function '{}' is declared with "
                                    "other parameters or registers at line {}",
                                    S.Name, D.P.Line));
      continue;
    }
    if (D.Kind == K && K != FunctionKind::Bytecode)
      continue; // a repeated .extern or .native
    if (D.Kind == K)
      report(S.NamePos, fmt::format("function '{}' is defined twice (first "
                                    "at line {})",
                                    S.Name, D.P.Line));
    else
      report(S.NamePos,
             fmt::format("function '{}' is already declared with {} at line "
                         "{}",
                         S.Name, directiveOf(D.Kind), D.P.Line));
  }
}

void Assembler::defineConst(Stmt &S) {
  int64_t Index = NumConsts++;
  if (!S.HasName)
    return;
  if (S.NameIsIndex) {
    if (S.NameIndex != Index)
      report(S.NamePos,
             fmt::format("'.const ${}' defines constant {}: a numeric name "
                         "must be the constant's index",
                         S.NameIndex, Index));
    return;
  }
  auto [It, New] = ConstNames.emplace(S.Name, ConstName{Index, S.P.Line});
  if (!New)
    report(S.NamePos,
           fmt::format("duplicate constant '${}' (first defined at line {})",
                       S.Name, It->second.Line));
}

void Assembler::finishBody(Body &B, Pos EndPos) {
  struct LabelDef {
    int64_t Instr;
    int Line;
  };
  std::unordered_map<std::string, LabelDef> Labels;
  std::vector<const Stmt *> Waiting; // labels not yet followed by an instr
  int64_t N = 0;
  for (size_t Idx : B.Items) {
    Stmt &S = Stmts[Idx];
    if (S.Kind == StmtKind::Label) {
      auto [It, New] = Labels.emplace(S.Name, LabelDef{N, S.P.Line});
      if (!New)
        report(S.NamePos,
               fmt::format("duplicate label '{}' (first defined at line {})",
                           S.Name, It->second.Line));
      Waiting.push_back(&S);
      continue;
    }
    S.LocalIndex = N++;
    Waiting.clear();
  }
  for (const Stmt *L : Waiting)
    report(L->P, fmt::format("label '{}' is not followed by an instruction "
                             "in function '{}'",
                             L->Name, B.Name));
  if (N == 0)
    report(EndPos, fmt::format("function '{}' has no instructions", B.Name));

  // Jumps to labels become offsets.
  for (size_t Idx : B.Items) {
    Stmt &S = Stmts[Idx];
    if (S.Broken || (S.Kind != StmtKind::Goto && S.Kind != StmtKind::If) ||
        S.TargetIsOffset)
      continue;
    auto It = Labels.find(S.Target);
    if (It == Labels.end()) {
      report(S.TargetPos, fmt::format("unknown label '{}'", S.Target));
      continue;
    }
    S.Offset = It->second.Instr - S.LocalIndex;
  }

  // Registers: named ones take the free numbers in order of appearance.
  std::vector<RegRef *> Refs;
  for (size_t Idx : B.Items) {
    Stmt &S = Stmts[Idx];
    if (S.Broken || !isInstr(S.Kind))
      continue;
    forEachRegRef(S, [&](RegRef &R) { Refs.push_back(&R); });
  }
  std::unordered_set<int64_t> Explicit;
  for (const RegRef *R : Refs)
    if (R->Name.empty())
      Explicit.insert(R->Num);
  // Unquoted parameters name their registers; quoted ones name nothing.
  std::unordered_map<std::string, int64_t> Names;
  std::unordered_map<std::string, int64_t> QuotedOnly;
  for (size_t I = 0; I < B.Params.size(); ++I)
    if (I >= B.ParamQuoted.size() || !B.ParamQuoted[I])
      Names.emplace(B.Params[I], static_cast<int64_t>(I));
  for (size_t I = 0; I < B.Params.size() && I < B.ParamQuoted.size(); ++I)
    if (B.ParamQuoted[I] && !Names.count(B.Params[I]))
      QuotedOnly.emplace(B.Params[I], static_cast<int64_t>(I));
  int64_t NextFree = static_cast<int64_t>(B.Params.size());
  int64_t Needed = NextFree;
  for (RegRef *R : Refs) {
    if (!R->Name.empty()) {
      auto It = Names.find(R->Name);
      if (It == Names.end()) {
        if (auto Q = QuotedOnly.find(R->Name); Q != QuotedOnly.end()) {
          report(R->P, fmt::format("'%{}' is not a register name: parameter "
                                   "{} is written quoted, which names no "
                                   "register (write %{})",
                                   R->Name, Q->second, Q->second));
          R->Num = Q->second;
          continue;
        }
        while (Explicit.count(NextFree))
          ++NextFree;
        It = Names.emplace(R->Name, NextFree++).first;
      }
      R->Num = It->second;
    }
    Needed = std::max(Needed, R->Num + 1);
  }
  if (B.HasRegs && B.Regs < Needed)
    report(B.RegsPos, fmt::format("'.regs {}' is smaller than the {} "
                                  "registers function '{}' uses",
                                  B.Regs, Needed, B.Name));
}

void Assembler::analyze() {
  declareFunctions();

  constexpr size_t kNone = ~size_t(0);
  size_t Open = kNone; // index into Bodies
  auto Close = [&](Pos EndPos) {
    finishBody(Bodies[Open], EndPos);
    Open = kNone;
  };
  for (size_t I = 0; I < Stmts.size(); ++I) {
    Stmt &S = Stmts[I];
    switch (S.Kind) {
    case StmtKind::Func:
      if (Open != kNone) {
        report(S.P, fmt::format("'.func' inside function '{}' (missing "
                                "'.end'?)",
                                Bodies[Open].Name));
        Close(S.P);
      }
      Bodies.push_back(
          Body{S.Name, S.Params, S.ParamQuoted, S.P, {}, false, 0, {}});
      Open = Bodies.size() - 1;
      break;
    case StmtKind::End:
      if (Open == kNone)
        report(S.P, "'.end' without '.func'");
      else
        Close(S.P);
      break;
    case StmtKind::Extern:
    case StmtKind::Native:
      break;
    case StmtKind::Const:
      defineConst(S);
      break;
    case StmtKind::Regs:
      if (Open == kNone) {
        report(S.P, "'.regs' outside a function");
      } else if (!S.Broken) {
        Body &B = Bodies[Open];
        if (B.HasRegs)
          report(S.P, fmt::format("duplicate '.regs' in function '{}'",
                                  B.Name));
        B.HasRegs = true;
        B.Regs = S.Count;
        B.RegsPos = S.P;
      }
      break;
    case StmtKind::Label:
      if (Open == kNone)
        report(S.P, "label outside a function");
      else
        Bodies[Open].Items.push_back(I);
      break;
    default:
      if (Open == kNone)
        report(S.P, "instruction outside a function");
      else
        Bodies[Open].Items.push_back(I);
      break;
    }
  }
  if (Open != kNone) {
    report(EndOfFile,
           fmt::format("missing '.end' for function '{}' (begun at line {})",
                       Bodies[Open].Name, Bodies[Open].P.Line));
    Close(EndOfFile);
  }

  // Constant references (forward references are allowed).
  for (Stmt &S : Stmts) {
    if (S.Broken || S.Kind != StmtKind::Call)
      continue;
    for (Operand &O : S.Args) {
      if (O.Kind != ArgKind::ConstIdx)
        continue;
      if (!O.Name.empty()) {
        auto It = ConstNames.find(O.Name);
        if (It == ConstNames.end())
          report(O.P, fmt::format("unknown constant '${}'", O.Name));
        else
          O.Value = It->second.Index;
      } else if (O.Value >= NumConsts) {
        report(O.P, fmt::format("constant ${} is out of range (the file "
                                "defines {} constant{})",
                                O.Value, NumConsts, NumConsts == 1 ? "" : "s"));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

std::shared_ptr<Executable> Assembler::build() {
  ExecutableBuilder B;
  try {
    for (const FuncDecl &D : Decls) {
      switch (D.Kind) {
      case FunctionKind::Bytecode:
        B.declareFunction(D.Name, D.Params);
        break;
      case FunctionKind::Packed:
        B.declarePacked(D.Name);
        break;
      case FunctionKind::Native:
        B.declareNative(D.Name, D.Params, D.Regs);
        break;
      }
    }
    auto FuncIndex = [&](const std::string &Name) {
      if (auto I = B.lookup(Name))
        return *I;
      return B.declarePacked(Name);
    };
    // Undeclared callees and @F become packed, in order of first use.
    for (const Body &Bd : Bodies)
      for (size_t Idx : Bd.Items) {
        const Stmt &S = Stmts[Idx];
        if (S.Kind != StmtKind::Call)
          continue;
        FuncIndex(S.Name);
        for (const Operand &O : S.Args)
          if (O.Kind == ArgKind::FuncIdx)
            FuncIndex(O.Name);
      }
    for (Stmt &S : Stmts)
      if (S.Kind == StmtKind::Const)
        B.addConstant(std::move(S.Value), /*Dedupe=*/false);

    for (const Body &Bd : Bodies) {
      FunctionBuilder &FB = B.beginFunction(Bd.Name, Bd.Params);
      for (size_t Idx : Bd.Items) {
        const Stmt &S = Stmts[Idx];
        switch (S.Kind) {
        case StmtKind::Call: {
          std::vector<Arg> Args;
          Args.reserve(S.Args.size());
          for (const Operand &O : S.Args) {
            switch (O.Kind) {
            case ArgKind::Register:
              Args.push_back(Arg::reg(O.Reg.Num));
              break;
            case ArgKind::Immediate:
              Args.push_back(Arg::imm(O.Value));
              break;
            case ArgKind::ConstIdx:
              Args.push_back(Arg::constant(O.Value));
              break;
            case ArgKind::FuncIdx:
              Args.push_back(Arg::func(*B.lookup(O.Name)));
              break;
            }
          }
          FB.emitCall(S.HasDst ? S.Dst.Num : kVoidRegister, *B.lookup(S.Name),
                      std::move(Args));
          break;
        }
        case StmtKind::Ret:
          FB.emitRet(S.Reg.Num);
          break;
        case StmtKind::Goto:
          FB.emitGotoOffset(S.Offset);
          break;
        case StmtKind::If:
          FB.emitIfOffset(S.Reg.Num, S.Offset);
          break;
        default:
          break;
        }
      }
      if (Bd.HasRegs)
        FB.reserveRegisters(Bd.Regs);
      B.endFunction();
    }
    auto Exe = B.finish(Limits);
    Exe->setDebugNames(debugNames(*Exe, B));
    Exe->setConstantNames(constantNames());
    Exe->setSourceMap(sourceMap(*Exe, B));
    return Exe;
  } catch (const VerifyFailure &V) {
    throwVerifyAtSource(V, B);
  } catch (const Error &E) {
    throwError(E.kind(), fmt::format("{}: {}", FileName, E.message()));
  }
}

std::vector<std::string> Assembler::constantNames() const {
  std::vector<std::string> Out;
  if (ConstNames.empty())
    return Out;
  Out.resize(static_cast<size_t>(NumConsts));
  // (c0, c1, ... are the disassembler's own names: not kept, so that a
  // round trip through `dis` stays byte-exact.)
  for (const auto &[Name, C] : ConstNames)
    if (!isGeneratedConstantName(Name))
      Out[static_cast<size_t>(C.Index)] = Name;
  if (std::all_of(Out.begin(), Out.end(),
                  [](const std::string &N) { return N.empty(); }))
    Out.clear();
  return Out;
}

std::vector<DebugNames> Assembler::debugNames(const Executable &Exe,
                                             const ExecutableBuilder &B) const {
  std::vector<DebugNames> Out(Exe.functions().size());
  bool Any = false;
  for (const Body &Bd : Bodies) {
    DebugNames &N = Out[static_cast<size_t>(*B.lookup(Bd.Name))];
    std::map<int64_t, std::string> Regs;
    int64_t Instr = 0;
    for (size_t Idx : Bd.Items) {
      const Stmt &S = Stmts[Idx];
      if (S.Kind == StmtKind::Label) {
        // One name per instruction (the binary format's list is strictly
        // increasing): the first the text gives, as `vmjit dis` prints.
        if (!isGeneratedLabel(S.Name) &&
            (N.Labels.empty() || N.Labels.back().first != Instr))
          N.Labels.emplace_back(Instr, S.Name);
        continue;
      }
      if (!isInstr(S.Kind))
        continue;
      ++Instr;
      // Every register the text names (parameters too, when the text
      // reads them by name rather than as %N).
      forEachRegRef(S, [&](const RegRef &R) {
        if (!R.Name.empty())
          Regs.emplace(R.Num, R.Name);
      });
    }
    N.Registers.assign(Regs.begin(), Regs.end());
    Any |= !N.empty();
  }
  if (!Any)
    Out.clear();
  return Out;
}

SourceMap Assembler::sourceMap(const Executable &Exe,
                               const ExecutableBuilder &B) const {
  SourceMap Out;
  Out.File = FileName;
  Out.Instrs.resize(static_cast<size_t>(Exe.numInstrs()));
  for (const Body &Bd : Bodies) {
    int64_t Instr = Exe.function(*B.lookup(Bd.Name)).StartInstr;
    for (size_t Idx : Bd.Items)
      if (const Stmt &S = Stmts[Idx]; isInstr(S.Kind))
        Out.Instrs[static_cast<size_t>(Instr++)] = {
            static_cast<uint32_t>(S.P.Line), static_cast<uint32_t>(S.P.Col)};
  }
  if (Out.Instrs.empty())
    Out = SourceMap();
  return Out;
}

void Assembler::throwVerifyAtSource(const VerifyFailure &V,
                                    const ExecutableBuilder &B) {
  std::string Message = V.message();
  const Body *Bd = nullptr;
  for (const Body &X : Bodies)
    if (auto I = B.lookup(X.Name); I && *I == V.Where.Func)
      Bd = &X;
  if (!Bd)
    throwError("VerifyError", fmt::format("{}: {}", FileName, Message));
  // The statement of instruction Instr (instructions are the body's items
  // that are not labels), and the register's name and place in it.
  Pos At = Bd->P;
  const Stmt *Instr = nullptr;
  int64_t N = 0;
  for (size_t Idx : Bd->Items)
    if (isInstr(Stmts[Idx].Kind) && N++ == V.Where.Instr)
      Instr = &Stmts[Idx];
  if (Instr)
    At = Instr->P;
  if (V.Where.Reg >= 0) {
    std::string Name = registerName(*Bd, V.Where.Reg);
    if (const RegRef *R = Instr ? readOf(*Instr, V.Where.Reg) : nullptr)
      At = R->P;
    if (!Name.empty()) {
      const std::string Num = fmt::format("register %{}", V.Where.Reg);
      if (size_t P = Message.find(Num); P != std::string::npos)
        Message.replace(P, Num.size(), "register %" + Name);
      if (!isWrittenIn(*Bd, V.Where.Reg))
        Message += fmt::format(" (%{} is never written in '{}')", Name,
                               Bd->Name);
    }
  }
  throwError("VerifyError", fmt::format("{}:{}:{}: {}", FileName, At.Line,
                                        At.Col, Message));
}

std::string Assembler::registerName(const Body &Bd, int64_t Reg) const {
  if (Reg < static_cast<int64_t>(Bd.Params.size()) &&
      !(static_cast<size_t>(Reg) < Bd.ParamQuoted.size() &&
        Bd.ParamQuoted[static_cast<size_t>(Reg)]))
    return Bd.Params[static_cast<size_t>(Reg)];
  std::string Name;
  for (size_t Idx : Bd.Items)
    forEachRegRef(Stmts[Idx], [&](const RegRef &R) {
      if (Name.empty() && R.Num == Reg)
        Name = R.Name;
    });
  return Name;
}

const RegRef *Assembler::readOf(const Stmt &S, int64_t Reg) {
  const RegRef *Found = nullptr;
  forEachRegRef(S, [&](const RegRef &R) {
    if (!Found && &R != &S.Dst && R.Num == Reg)
      Found = &R;
  });
  return Found;
}

bool Assembler::isWrittenIn(const Body &Bd, int64_t Reg) const {
  if (Reg < static_cast<int64_t>(Bd.Params.size()))
    return true;
  for (size_t Idx : Bd.Items) {
    const Stmt &S = Stmts[Idx];
    if (S.Kind == StmtKind::Call && S.HasDst && S.Dst.Num == Reg)
      return true;
  }
  return false;
}

} // namespace

std::shared_ptr<Executable> assemble(std::string_view Text,
                                     const std::string &FileName,
                                     const VerifierLimits &Limits) {
  return Assembler(Text, FileName, Limits).run();
}

std::shared_ptr<Executable> assembleFile(const std::string &Path,
                                         const VerifierLimits &Limits) {
  return assemble(readWholeFile(Path), Path, Limits);
}

} // namespace vmjit::vm
