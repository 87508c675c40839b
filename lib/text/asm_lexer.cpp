//===- asm_lexer.cpp - Tokens of one vmasm line ----------------------------===//

#include "vmjit/text/asm_lexer.h"
#include "vmjit/text/literals.h"

#include <fmt/format.h>
#include <unordered_map>

namespace vmjit::vm::asmtext {
namespace {

bool isIdentStart(char C) {
  return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') || C == '_';
}
bool isDigit(char C) { return C >= '0' && C <= '9'; }
bool isIdentChar(char C) { return isIdentStart(C) || isDigit(C) || C == '.'; }
bool isSpace(char C) {
  return C == ' ' || C == '\t' || C == '\r' || C == '\f' || C == '\v';
}
bool isAllDigits(std::string_view S) {
  if (S.empty())
    return false;
  for (char C : S)
    if (!isDigit(C))
      return false;
  return true;
}
/// A byte as it is shown in messages.
std::string showChar(char C) {
  auto U = static_cast<unsigned char>(C);
  if (U >= 0x20 && U < 0x7f)
    return fmt::format("'{}'", C);
  return fmt::format("byte 0x{:02x}", U);
}

} // namespace

bool isIdentifier(std::string_view S) {
  if (S.empty() || !isIdentStart(S[0]))
    return false;
  for (char C : S)
    if (!isIdentChar(C))
      return false;
  return true;
}

bool isLabelName(std::string_view S) {
  if (!isIdentifier(S) || isSpecialRegisterName(S))
    return false;
  for (std::string_view K : {"call", "ret", "goto", "if", "else"})
    if (S == K)
      return false;
  return true;
}

void failAt(Pos P, std::string Msg) { throw TextError{P, std::move(Msg)}; }

std::string describe(const Token &T) {
  switch (T.Kind) {
  case Tok::End:
    return "end of line";
  case Tok::String:
    return "a string";
  default:
    return fmt::format("'{}'", T.Text);
  }
}

void Lexer::lexString(Token &T) {
  size_t Start = I++;
  while (true) {
    if (I >= Line.size())
      failAt(posAt(Start), "unterminated string");
    char C = Line[I];
    if (C == '"') {
      ++I;
      break;
    }
    if (C != '\\') {
      T.Str.push_back(C);
      ++I;
      continue;
    }
    size_t EscPos = I;
    if (I + 1 >= Line.size())
      failAt(posAt(Start), "unterminated string");
    char Escape = Line[I + 1];
    I += 2;
    switch (Escape) {
    case 'n':
      T.Str.push_back('\n');
      break;
    case 't':
      T.Str.push_back('\t');
      break;
    case '\\':
      T.Str.push_back('\\');
      break;
    case '"':
      T.Str.push_back('"');
      break;
    case 'x': {
      int Hi = I < Line.size() ? hexDigitValue(Line[I]) : -1;
      int Lo = I + 1 < Line.size() ? hexDigitValue(Line[I + 1]) : -1;
      if (Hi < 0 || Lo < 0)
        failAt(posAt(EscPos), "'\\x' must be followed by two hex digits");
      T.Str.push_back(static_cast<char>(Hi * 16 + Lo));
      I += 2;
      break;
    }
    default:
      failAt(posAt(EscPos),
             fmt::format("unknown escape sequence {} in a string (the "
                         "escapes are \\n \\t \\\\ \\\" \\xHH)",
                         showChar(Escape) == "'" + std::string(1, Escape) + "'"
                             ? "'\\" + std::string(1, Escape) + "'"
                             : "\\ and " + showChar(Escape)));
    }
  }
  T.Kind = Tok::String;
  T.Text = Line.substr(Start, I - Start);
}

Token Lexer::lex() {
  while (I < Line.size() && isSpace(Line[I]))
    ++I;
  Token T;
  T.P = posAt(I);
  if (I >= Line.size() || Line[I] == ';' || Line[I] == '#') {
    T.Kind = Tok::End;
    return T;
  }
  const size_t Start = I;
  const char C = Line[I];
  auto Next = [&](size_t K) { return I + K < Line.size() ? Line[I + K] : '\0'; };
  auto Finish = [&](Tok K) {
    T.Kind = K;
    T.Text = Line.substr(Start, I - Start);
    return T;
  };
  if (isIdentStart(C)) {
    while (I < Line.size() && isIdentChar(Line[I]))
      ++I;
    return Finish(Tok::Ident);
  }
  bool SignedNumber = (C == '+' || C == '-') &&
                      (isDigit(Next(1)) || isIdentStart(Next(1)) ||
                       (Next(1) == '.' && isDigit(Next(2))));
  if (isDigit(C) || SignedNumber || (C == '.' && isDigit(Next(1)))) {
    if (C == '+' || C == '-')
      ++I;
    size_t BodyStart = I;
    bool Hex = Next(0) == '0' && (Next(1) == 'x' || Next(1) == 'X');
    while (I < Line.size()) {
      char D = Line[I];
      if (isIdentChar(D)) {
        ++I;
        continue;
      }
      char Prev = I > BodyStart ? Line[I - 1] : '\0';
      bool ExpSign = (D == '+' || D == '-') &&
                     (Hex ? (Prev == 'p' || Prev == 'P')
                          : (Prev == 'e' || Prev == 'E'));
      if (!ExpSign)
        break;
      ++I;
    }
    return Finish(Tok::Number);
  }
  if (C == '.' && isIdentStart(Next(1))) {
    ++I;
    while (I < Line.size() && isIdentChar(Line[I]))
      ++I;
    return Finish(Tok::Directive);
  }
  if (C == '@' && Next(1) == '"') {
    // @"NAME": a function whose name is not an identifier.
    ++I;
    lexString(T);
    T.Kind = Tok::FuncRef;
    T.Text = Line.substr(Start, I - Start);
    return T;
  }
  if (C == '%' || C == '$' || C == '@') {
    ++I;
    while (I < Line.size() && isIdentChar(Line[I]))
      ++I;
    std::string_view Body = Line.substr(Start + 1, I - Start - 1);
    const char *What = C == '%'   ? "a register name or number"
                       : C == '$' ? "a constant name or index"
                                  : "a function name";
    bool Numeric = !Body.empty() && isDigit(Body[0]);
    bool Name = !Body.empty() && isIdentStart(Body[0]);
    if (Numeric ? (C == '@' || !isAllDigits(Body)) : !Name)
      failAt(T.P, fmt::format("expected {} after '{}'", What, C));
    if (C == '@')
      T.Str = std::string(Body);
    return Finish(C == '%' ? Tok::Reg : C == '$' ? Tok::Const : Tok::FuncRef);
  }
  if (C == '"') {
    lexString(T);
    return T;
  }
  ++I;
  switch (C) {
  case '(':
    return Finish(Tok::LParen);
  case ')':
    return Finish(Tok::RParen);
  case '[':
    return Finish(Tok::LBracket);
  case ']':
    return Finish(Tok::RBracket);
  case ',':
    return Finish(Tok::Comma);
  case '=':
    return Finish(Tok::Equal);
  case ':':
    return Finish(Tok::Colon);
  default:
    failAt(T.P, fmt::format("unexpected character {}", showChar(C)));
  }
}

std::vector<bool> bareParams(const std::vector<std::string> &Params) {
  std::unordered_map<std::string_view, size_t> Count;
  for (const std::string &N : Params)
    ++Count[N];
  std::vector<bool> Bare(Params.size());
  for (size_t P = 0; P < Params.size(); ++P)
    Bare[P] = isIdentifier(Params[P]) && !isSpecialRegisterName(Params[P]) &&
              Count[Params[P]] == 1;
  return Bare;
}

namespace {
/// `Prefix` followed by one or more digits.
bool isPrefixAndNumber(std::string_view S, char Prefix) {
  if (S.size() < 2 || S[0] != Prefix)
    return false;
  for (char C : S.substr(1))
    if (!isDigit(C))
      return false;
  return true;
}
} // namespace

bool isGeneratedLabel(std::string_view S) { return isPrefixAndNumber(S, 'L'); }

bool isGeneratedConstantName(std::string_view S) {
  return isPrefixAndNumber(S, 'c');
}

} // namespace vmjit::vm::asmtext
