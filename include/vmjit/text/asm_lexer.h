//===- vmjit/text/asm_lexer.h - Tokens of one vmasm line --------*- C++ -*-===//
//
// The vmasm lexer (internal to vmjit's libraries: the assembler, and the
// binary loader's check of debug names). vmasm has one statement per
// line, so a Lexer works on one line and hands out tokens on demand (a
// tensor's values may be millions of tokens, none of which is kept).
// Lexical errors are thrown as TextError, which the assembler catches per
// line; it never leaves the library.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TEXT_ASM_LEXER_H
#define VMJIT_TEXT_ASM_LEXER_H

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::vm::asmtext {

/// A 1-based line and column (in bytes).
struct Pos {
  int Line = 0;
  int Col = 0;
};
inline bool operator<(Pos A, Pos B) {
  return A.Line != B.Line ? A.Line < B.Line : A.Col < B.Col;
}

/// An error at a place in the text. Internal to the assembler.
struct TextError {
  Pos P;
  std::string Msg;
};

[[noreturn]] void failAt(Pos P, std::string Msg);

enum class Tok {
  Ident,     // [A-Za-z_][A-Za-z0-9_.]*
  Directive, // .func
  Reg,       // %x, %3, %vm
  Const,     // $w, $3
  FuncRef,   // @f, @"any name" (the name in Token::Str)
  Number,    // 42, -7, 0x1F, 1.5e-3, -inf: parsed in context
  String,    // "..." (decoded into Token::Str)
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Equal,
  Colon,
  End, // end of line or start of a comment
};

struct Token {
  Tok Kind = Tok::End;
  /// The token as written (sigils included; for a string, with quotes).
  std::string_view Text;
  /// A string's value, escapes decoded; a FuncRef's function name.
  std::string Str;
  Pos P;

  /// Text without the sigil of a Reg, Const, FuncRef or Directive.
  std::string_view body() const { return Text.substr(1); }
  bool is(Tok K) const { return Kind == K; }
  bool isIdent(std::string_view S) const {
    return Kind == Tok::Ident && Text == S;
  }
};

/// How a token is named in messages: 'x', "end of line", "a string".
std::string describe(const Token &T);

/// True if the lexer reads all of `S` as one identifier token (what the
/// disassembler may write as a name).
bool isIdentifier(std::string_view S);

/// True for `vm` and `void`: `%vm` and `%void` are the special registers,
/// so no parameter or register is named so.
inline bool isSpecialRegisterName(std::string_view S) {
  return S == "vm" || S == "void";
}

/// Which parameters of a list vmasm writes bare (and so reads as register
/// names): identifiers other than `vm` and `void` that the list does not
/// repeat. The
/// others are written quoted and name no register. Linear in the list.
std::vector<bool> bareParams(const std::vector<std::string> &Params);

/// True for a name a label may have: an identifier that is neither an
/// instruction keyword (call, ret, goto, if, else) nor `vm` or `void`. The
/// one rule for labels: the assembler refuses any other at its definition
/// and the binary loader in a file's debug names, so that whatever one
/// accepts the other loads.
bool isLabelName(std::string_view S);

/// True for L0, L1, ...: the labels the disassembler makes up for jump
/// targets that have no name. The assembler does not keep them as debug
/// names (so that a round trip through `dis` stays byte-exact).
bool isGeneratedLabel(std::string_view S);

/// True for c0, c1, ...: the names the disassembler gives constants the
/// text did not name; the assembler does not keep them either.
bool isGeneratedConstantName(std::string_view S);

class Lexer {
public:
  Lexer(std::string_view Line, int LineNo) : Line(Line), LineNo(LineNo) {}

  const Token &peek() {
    if (!HasPeeked) {
      Peeked = lex();
      HasPeeked = true;
    }
    return Peeked;
  }
  Token next() {
    peek();
    HasPeeked = false;
    return std::move(Peeked);
  }

private:
  Token lex();
  Pos posAt(size_t I) const { return Pos{LineNo, static_cast<int>(I) + 1}; }
  void lexString(Token &T);

  std::string_view Line;
  int LineNo;
  size_t I = 0;
  Token Peeked;
  bool HasPeeked = false;
};

} // namespace vmjit::vm::asmtext

#endif // VMJIT_TEXT_ASM_LEXER_H
