//===- stencil_layout.cpp - Stencil assembly whose hot paths fall through -===//
//
// A build-time pass over the assembly clang makes of stencils.cpp, before
// it is assembled (as CPython 3.14's JIT build does): the hot path of a
// stencil should end the stencil with `jmp _JIT_CONTINUE`, which
// stencil_gen drops, so that it falls into the next piece of code. Clang
// leaves a block that only tail-calls a hole after it, which the hot path
// jumps over. Per stencil function:
//  - threading: a branch to a block that only jumps to a hole (`jmp
//    _JIT_X`) branches to the hole itself (a conditional tail call);
//  - inversion: `jCC _JIT_CONTINUE` followed by `jmp X` becomes `jNCC X`
//    followed by `jmp _JIT_CONTINUE`;
//  - blocks nothing branches to and nothing falls into are dropped;
//  - hot/cold splitting: the blocks after the fallthrough chain from the
//    entry (those clang placed after the hot path: error exits, releases
//    of the last reference, slow calls) move to a function of their own,
//    `vmjit_outline_<name>` in its own section, which the baseline
//    compiler lays out after the function's code; branches between the
//    two parts become relocations that stencil_gen turns into the holes
//    OUTLINE and HERE;
//  - CFI directives and alignment inside functions are dropped: stencils
//    are copied to unaligned places and carry no unwind information.
// Anything it does not recognise it leaves as it is.
//
//   vmjit-stencil-layout IN.s OUT.s
//
//===----------------------------------------------------------------------===//

#include "stencil_abi.h"

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using vmjit::jit::baseline::kHoleSymbolPrefix;
using vmjit::jit::baseline::kOutlineSymbolPrefix;
constexpr std::string_view kStencilPrefix =
    vmjit::jit::baseline::kStencilSymbolPrefix;
constexpr std::string_view kContinue = "_JIT_CONTINUE";

std::string_view trim(std::string_view S) {
  size_t B = S.find_first_not_of(" \t");
  if (B == std::string_view::npos)
    return {};
  size_t E = S.find_last_not_of(" \t");
  return S.substr(B, E - B + 1);
}

bool startsWith(std::string_view S, std::string_view P) {
  return S.substr(0, P.size()) == P;
}

/// An instruction line: mnemonic and operand text (no comment).
struct Insn {
  std::string_view Op, Arg;
  bool Valid = false;
};

Insn parse(std::string_view Line) {
  std::string_view T = trim(Line.substr(0, Line.find('#')));
  Insn I;
  if (T.empty() || T[0] == '.' || T.back() == ':')
    return I;
  size_t Sp = T.find_first_of(" \t");
  I.Op = T.substr(0, Sp);
  I.Arg =
      Sp == std::string_view::npos ? std::string_view{} : trim(T.substr(Sp));
  I.Valid = true;
  return I;
}

bool isCondJump(const Insn &I) {
  return I.Valid && I.Op.size() >= 2 && I.Op[0] == 'j' && I.Op != "jmp";
}
bool isJmp(const Insn &I) { return I.Valid && I.Op == "jmp"; }
bool endsFlow(const Insn &I) {
  return I.Valid &&
         (I.Op == "jmp" || I.Op == "ret" || I.Op == "retq" || I.Op == "ud2");
}

/// The opposite condition's mnemonic, or empty.
std::string invert(std::string_view Op) {
  static const std::map<std::string_view, std::string_view> Pairs = {
      {"je", "jne"}, {"jl", "jge"}, {"jle", "jg"},  {"jb", "jae"},
      {"jbe", "ja"}, {"js", "jns"}, {"jo", "jno"},  {"jp", "jnp"},
      {"jz", "jnz"}, {"jc", "jnc"}, {"jnae", "jnb"}};
  for (const auto &[A, B] : Pairs) {
    if (Op == A)
      return std::string(B);
    if (Op == B)
      return std::string(A);
  }
  return {};
}

struct Block {
  std::string Label; ///< empty for the entry block
  std::vector<std::string> Lines;

  std::vector<size_t> insns() const {
    std::vector<size_t> Out;
    for (size_t K = 0; K < Lines.size(); ++K)
      if (parse(Lines[K]).Valid)
        Out.push_back(K);
    return Out;
  }
  Insn last() const {
    std::vector<size_t> Is = insns();
    return Is.empty() ? Insn{} : parse(Lines[Is.back()]);
  }
};

std::string insnLine(std::string_view Op, std::string_view Arg) {
  return "\t" + std::string(Op) + "\t" + std::string(Arg);
}

/// Branches to blocks that only jump to a hole go to the hole.
void threadJumps(std::vector<Block> &Blocks) {
  std::map<std::string, std::string> To;
  for (const Block &B : Blocks) {
    std::vector<size_t> Is = B.insns();
    if (B.Label.empty() || Is.size() != 1)
      continue;
    Insn I = parse(B.Lines[Is[0]]);
    if (isJmp(I) && startsWith(I.Arg, kHoleSymbolPrefix))
      To[B.Label] = std::string(I.Arg);
  }
  for (Block &B : Blocks)
    for (std::string &L : B.Lines) {
      Insn I = parse(L);
      if (!(isJmp(I) || isCondJump(I)))
        continue;
      auto It = To.find(std::string(I.Arg));
      if (It != To.end())
        L = insnLine(I.Op, It->second);
    }
}

/// `jCC _JIT_CONTINUE; jmp X` -> `jNCC X; jmp _JIT_CONTINUE`.
void invertBranches(std::vector<Block> &Blocks) {
  for (Block &B : Blocks) {
    std::vector<size_t> Is = B.insns();
    if (Is.size() < 2)
      continue;
    std::string &CondLine = B.Lines[Is[Is.size() - 2]];
    std::string &JmpLine = B.Lines[Is.back()];
    Insn C = parse(CondLine), J = parse(JmpLine);
    if (!isCondJump(C) || C.Arg != kContinue || !isJmp(J) || J.Arg == kContinue)
      continue;
    std::string Inv = invert(C.Op);
    if (Inv.empty())
      continue;
    std::string Target(J.Arg);
    CondLine = insnLine(Inv, Target);
    JmpLine = insnLine("jmp", kContinue);
  }
}

bool referenced(const std::vector<Block> &Blocks, const std::string &Label) {
  for (const Block &B : Blocks)
    for (const std::string &L : B.Lines) {
      Insn I = parse(L);
      if ((isJmp(I) || isCondJump(I)) && I.Arg == Label)
        return true;
    }
  return false;
}

/// Drops labelled blocks that nothing branches to and nothing falls into.
void dropDeadBlocks(std::vector<Block> &Blocks) {
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (size_t K = 1; K < Blocks.size(); ++K) {
      if (!endsFlow(Blocks[K - 1].last()) ||
          referenced(Blocks, Blocks[K].Label))
        continue;
      Blocks.erase(Blocks.begin() + static_cast<std::ptrdiff_t>(K));
      Changed = true;
      break;
    }
  }
}

bool isBlockLabel(std::string_view Line) {
  return startsWith(Line, ".LBB") && !Line.empty() && Line.back() == ':';
}

/// Reads one stencil function's body (after its label line) up to its
/// end marker, which is left in `Lines` at `Pos`.
std::vector<Block> readBody(const std::vector<std::string> &Lines,
                            size_t &Pos) {
  std::vector<Block> Blocks(1);
  for (; Pos < Lines.size() && !startsWith(Lines[Pos], ".Lfunc_end"); ++Pos) {
    std::string_view T = trim(Lines[Pos]);
    if (startsWith(T, ".cfi_") || startsWith(T, ".p2align"))
      continue;
    if (isBlockLabel(Lines[Pos])) {
      Blocks.push_back(Block{Lines[Pos].substr(0, Lines[Pos].size() - 1), {}});
      continue;
    }
    Blocks.back().Lines.push_back(Lines[Pos]);
  }
  return Blocks;
}

void writeBlocks(std::ostream &OS, const Block *Begin, const Block *End) {
  for (const Block *B = Begin; B != End; ++B) {
    if (!B->Label.empty())
      OS << B->Label << ":\n";
    for (const std::string &L : B->Lines)
      OS << L << "\n";
  }
}

/// The blocks of the hot path: from the entry along fallthroughs to the
/// first block that ends with a jump or a return.
size_t hotBlocks(const std::vector<Block> &Blocks) {
  for (size_t K = 0; K < Blocks.size(); ++K)
    if (endsFlow(Blocks[K].last()))
      return K + 1;
  return Blocks.size();
}

/// Writes stencil `Name`'s hot blocks in place and the others, if any, as
/// function vmjit_outline_<Name> in a section of its own.
void writeBody(std::ostream &OS, std::string_view Name,
               const std::vector<Block> &Blocks) {
  const size_t Hot = hotBlocks(Blocks);
  const Block *Begin = Blocks.data(), *End = Begin + Blocks.size();
  writeBlocks(OS, Begin, Begin + Hot);
  if (Hot == Blocks.size())
    return;
  const std::string Out = std::string(kOutlineSymbolPrefix) + std::string(Name);
  OS << "\t.pushsection\t.text." << Out << ",\"ax\",@progbits\n"
     << "\t.type\t" << Out << ",@function\n"
     << Out << ":\n";
  writeBlocks(OS, Begin + Hot, End);
  OS << ".L" << Out << "_end:\n"
     << "\t.size\t" << Out << ", .L" << Out << "_end-" << Out << "\n"
     << "\t.popsection\n";
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc != 3) {
    std::cerr << "usage: vmjit-stencil-layout IN.s OUT.s\n";
    return 2;
  }
  std::ifstream In(Argv[1]);
  if (!In) {
    std::cerr << "vmjit-stencil-layout: cannot read " << Argv[1] << "\n";
    return 1;
  }
  std::vector<std::string> Lines;
  for (std::string L; std::getline(In, L);)
    Lines.push_back(L);
  std::ostringstream OS;
  size_t Functions = 0;
  for (size_t Pos = 0; Pos < Lines.size();) {
    const std::string &L = Lines[Pos++];
    if (startsWith(trim(L), ".cfi_"))
      continue;
    OS << L << "\n";
    const size_t Colon = L.find(':');
    if (!startsWith(L, kStencilPrefix) || Colon == std::string::npos)
      continue;
    std::vector<Block> Blocks = readBody(Lines, Pos);
    threadJumps(Blocks);
    invertBranches(Blocks);
    dropDeadBlocks(Blocks);
    writeBody(OS,
              std::string_view(L).substr(kStencilPrefix.size(),
                                         Colon - kStencilPrefix.size()),
              Blocks);
    ++Functions;
  }
  if (Functions == 0) {
    std::cerr << "vmjit-stencil-layout: " << Argv[1]
              << ": no stencil functions\n";
    return 1;
  }
  std::ofstream Out(Argv[2]);
  Out << OS.str();
  if (!Out.flush()) {
    std::cerr << "vmjit-stencil-layout: cannot write " << Argv[2] << "\n";
    return 1;
  }
  return 0;
}
