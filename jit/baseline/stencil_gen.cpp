//===- stencil_gen.cpp - Stencil object file -> generated table -----------===//
//
// A build-time tool: reads the object file clang made from stencils.cpp
// with LLVM's Object library and writes a C++ header holding every
// `vmjit_stencil_<name>` function's bytes and relocations (stencil_abi.h
// describes them), with its out-of-line part `vmjit_outline_<name>` where
// stencil_layout split one off, and a StencilId enumerator per stencil. A
// trailing jump to _JIT_CONTINUE is dropped: the baseline compiler lays
// the next piece right after. Anything the patcher could not handle (a
// relocation of another kind, or against anything but a hole or the
// stencil's other part) fails the build.
//
//   vmjit-stencil-gen stencils.o stencils.inc
//
//===----------------------------------------------------------------------===//

#include "stencil_abi.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
using namespace vmjit::jit::baseline;

namespace {

constexpr StringRef kPrefix = kStencilSymbolPrefix;
constexpr StringRef kOutlinePrefix = kOutlineSymbolPrefix;

/// Bytes and relocations of one part of a stencil.
struct Part {
  std::vector<uint8_t> Bytes;
  std::vector<StencilReloc> Relocs;
};

/// A stencil: its hot part (`vmjit_stencil_<name>`) and its out-of-line
/// part (`vmjit_outline_<name>`, which stencil_layout splits off; may be
/// empty).
struct Stencil {
  std::string Name;
  Part Hot, Outline;
};

std::optional<Hole> holeNamed(StringRef Sym) {
#define VMJIT_HOLE_NAME(Name, Wide)                                            \
  if (Sym == "_JIT_" #Name)                                                    \
    return Hole::Name;
  VMJIT_BASELINE_HOLES(VMJIT_HOLE_NAME)
#undef VMJIT_HOLE_NAME
  return std::nullopt;
}

const char *holeEnumName(Hole H) {
  switch (H) {
#define VMJIT_HOLE_STR(Name, Wide)                                             \
  case Hole::Name:                                                             \
    return #Name;
    VMJIT_BASELINE_HOLES(VMJIT_HOLE_STR)
#undef VMJIT_HOLE_STR
  }
  return "?";
}

bool isJumpHole(Hole H) {
  return H == Hole::CONTINUE || H == Hole::TARGET || H == Hole::ERROR ||
         H == Hole::COLD || H == Hole::HERE || H == Hole::OUTLINE;
}

const char *kindName(RelocKind K) {
  switch (K) {
  case RelocKind::Abs64:
    return "Abs64";
  case RelocKind::Abs32:
    return "Abs32";
  case RelocKind::Abs32S:
    return "Abs32S";
  case RelocKind::Rel32:
    return "Rel32";
  }
  return "?";
}

/// `goto_back_counted` -> `GotoBackCounted`.
std::string enumName(StringRef Name) {
  std::string Out;
  bool Up = true;
  for (char C : Name) {
    if (C == '_') {
      Up = true;
      continue;
    }
    Out += Up ? static_cast<char>(std::toupper(static_cast<unsigned char>(C)))
              : C;
    Up = false;
  }
  return Out;
}

Expected<RelocKind> relocKind(uint64_t Type, Hole H, StringRef Stencil) {
  switch (Type) {
  case ELF::R_X86_64_64:
    return RelocKind::Abs64;
  case ELF::R_X86_64_32:
    return RelocKind::Abs32;
  case ELF::R_X86_64_32S:
    return RelocKind::Abs32S;
  case ELF::R_X86_64_PC32:
  case ELF::R_X86_64_PLT32:
    if (isJumpHole(H))
      return RelocKind::Rel32;
    break;
  default:
    break;
  }
  return createStringError(inconvertibleErrorCode(),
                           "stencil '%s': relocation type %u against _JIT_%s "
                           "is not supported",
                           Stencil.str().c_str(), unsigned(Type),
                           holeEnumName(H));
}

/// The hole a relocation of stencil `Name` refers to: a `_JIT_` symbol, or
/// the section of one of the stencil's two parts (a branch between them).
Expected<Hole> targetHole(const object::RelocationRef &R, StringRef Name) {
  object::symbol_iterator Target = R.getSymbol();
  StringRef TName;
  if (object::ELFSymbolRef(*Target).getELFType() == ELF::STT_SECTION) {
    Expected<object::section_iterator> Sec = Target->getSection();
    if (!Sec)
      return Sec.takeError();
    Expected<StringRef> SecName = (*Sec)->getName();
    if (!SecName)
      return SecName.takeError();
    if (*SecName == (".text." + kPrefix + Name).str())
      return Hole::HERE;
    if (*SecName == (".text." + kOutlinePrefix + Name).str())
      return Hole::OUTLINE;
    TName = *SecName;
  } else {
    Expected<StringRef> N = Target->getName();
    if (!N)
      return N.takeError();
    if (std::optional<Hole> H = holeNamed(*N))
      return *H;
    TName = *N;
  }
  return createStringError(inconvertibleErrorCode(),
                           "stencil '%s' refers to '%s', which is not a "
                           "hole (stencils may use holes only)",
                           Name.str().c_str(), TName.str().c_str());
}

/// The bytes and relocations of function symbol `Sym` (a part of stencil
/// `Name`).
Expected<Part> readPart(const object::ELF64LEObjectFile &Obj,
                        const object::SymbolRef &Sym, StringRef Name) {
  Part P;
  Expected<object::section_iterator> Sec = Sym.getSection();
  if (!Sec)
    return Sec.takeError();
  Expected<StringRef> Contents = (*Sec)->getContents();
  if (!Contents)
    return Contents.takeError();
  Expected<uint64_t> Value = Sym.getValue();
  if (!Value)
    return Value.takeError();
  uint64_t Size = object::ELFSymbolRef(Sym).getSize();
  if (*Value + Size > Contents->size())
    return createStringError(inconvertibleErrorCode(),
                             "stencil '%s' runs past its section",
                             Name.str().c_str());
  P.Bytes.assign(Contents->bytes_begin() + *Value,
                 Contents->bytes_begin() + *Value + Size);
  // ELF keeps a section's relocations in a section of their own.
  for (const object::SectionRef &RS : Obj.sections()) {
    Expected<object::section_iterator> Of = RS.getRelocatedSection();
    if (!Of)
      return Of.takeError();
    if (*Of != *Sec)
      continue;
    for (const object::RelocationRef &R : RS.relocations()) {
      uint64_t Off = R.getOffset();
      if (Off < *Value || Off >= *Value + Size)
        continue;
      Expected<Hole> H = targetHole(R, Name);
      if (!H)
        return H.takeError();
      Expected<int64_t> Addend = object::ELFRelocationRef(R).getAddend();
      if (!Addend)
        return Addend.takeError();
      Expected<RelocKind> K = relocKind(R.getType(), *H, Name);
      if (!K)
        return K.takeError();
      P.Relocs.push_back({static_cast<uint32_t>(Off - *Value), *K, *H,
                          static_cast<int32_t>(*Addend)});
    }
  }
  std::sort(P.Relocs.begin(), P.Relocs.end(),
            [](const StencilReloc &A, const StencilReloc &B) {
              return A.Offset < B.Offset;
            });
  return P;
}

/// Drops a trailing `jmp _JIT_CONTINUE` (E9 rel32): the next piece follows.
void dropTrailingContinue(Part &P) {
  if (P.Bytes.size() < 5 || P.Relocs.empty())
    return;
  const StencilReloc &Last = P.Relocs.back();
  if (Last.Target == Hole::CONTINUE && Last.Kind == RelocKind::Rel32 &&
      Last.Offset + 4 == P.Bytes.size() &&
      P.Bytes[P.Bytes.size() - 5] == 0xE9) {
    P.Bytes.resize(P.Bytes.size() - 5);
    P.Relocs.pop_back();
  }
}

Expected<std::vector<Stencil>> readStencils(StringRef Path) {
  Expected<object::OwningBinary<object::ObjectFile>> Bin =
      object::ObjectFile::createObjectFile(Path);
  if (!Bin)
    return Bin.takeError();
  const auto *Obj =
      dyn_cast<object::ELF64LEObjectFile>(Bin->getBinary());
  if (!Obj || Obj->getArch() != Triple::x86_64)
    return createStringError(inconvertibleErrorCode(),
                             "%s: not an x86-64 ELF object", Path.str().c_str());
  std::vector<Stencil> Out;
  std::map<std::string, Stencil> Parts;
  for (const object::SymbolRef &Sym : Obj->symbols()) {
    Expected<StringRef> Name = Sym.getName();
    if (!Name)
      return Name.takeError();
    Expected<object::SymbolRef::Type> Type = Sym.getType();
    if (!Type)
      return Type.takeError();
    if (*Type != object::SymbolRef::ST_Function)
      continue;
    const bool IsOutline = Name->starts_with(kOutlinePrefix);
    if (!IsOutline && !Name->starts_with(kPrefix))
      continue;
    StringRef Stem =
        Name->drop_front(IsOutline ? kOutlinePrefix.size() : kPrefix.size());
    Expected<Part> P = readPart(*Obj, Sym, Stem);
    if (!P)
      return P.takeError();
    Stencil &S = Parts[Stem.str()];
    S.Name = Stem.str();
    (IsOutline ? S.Outline : S.Hot) = std::move(*P);
  }
  for (auto &[Stem, S] : Parts) {
    if (S.Hot.Bytes.empty()) // a function is never empty: none was read
      return createStringError(inconvertibleErrorCode(),
                               "%s: out-of-line code of '%s' without a "
                               "stencil",
                               Path.str().c_str(), Stem.c_str());
    dropTrailingContinue(S.Hot);
    Out.push_back(std::move(S));
  }
  // In name order (the map's): StencilId enumerators are stable.
  if (Out.empty())
    return createStringError(inconvertibleErrorCode(), "%s: no stencils",
                             Path.str().c_str());
  return Out;
}

void writeTable(raw_ostream &OS, const std::vector<Stencil> &Stencils) {
  OS << "// Generated by vmjit-stencil-gen from the baseline tier's "
        "stencils. Do not edit.\n\n";
  OS << "enum class StencilId : uint16_t {\n";
  for (const Stencil &S : Stencils)
    OS << "  " << enumName(S.Name) << ",\n";
  OS << "};\n";
  OS << "inline constexpr size_t kNumStencils = " << Stencils.size()
     << ";\n\n";
  OS << "inline constexpr uint8_t kStencilBytes[] = {";
  size_t N = 0;
  for (const Stencil &S : Stencils)
    for (const Part *P : {&S.Hot, &S.Outline})
      for (uint8_t B : P->Bytes)
        OS << (N++ % 16 == 0 ? "\n    " : " ") << unsigned(B) << ",";
  OS << "\n    0};\n\n";
  OS << "inline constexpr StencilReloc kStencilRelocs[] = {\n";
  for (const Stencil &S : Stencils)
    for (const Part *P : {&S.Hot, &S.Outline})
      for (const StencilReloc &R : P->Relocs)
        OS << "    {" << R.Offset << ", RelocKind::" << kindName(R.Kind)
           << ", Hole::" << holeEnumName(R.Target) << ", " << R.Addend
           << "}, // " << S.Name << (P == &S.Outline ? " (outline)" : "")
           << "\n";
  OS << "    {0, RelocKind::Abs64, Hole::IMM, 0}};\n\n";
  OS << "inline constexpr StencilInfo kStencils[] = {\n";
  uint32_t Byte = 0, Reloc = 0;
  for (const Stencil &S : Stencils) {
    OS << "    {\"" << S.Name << "\"";
    for (const Part *P : {&S.Hot, &S.Outline}) {
      OS << ", {" << Byte << ", " << P->Bytes.size() << ", " << Reloc << ", "
         << P->Relocs.size() << "}";
      Byte += static_cast<uint32_t>(P->Bytes.size());
      Reloc += static_cast<uint32_t>(P->Relocs.size());
    }
    OS << "},\n";
  }
  OS << "};\n";
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc != 3) {
    errs() << "usage: vmjit-stencil-gen STENCILS.o OUT.inc\n";
    return 2;
  }
  Expected<std::vector<Stencil>> Stencils = readStencils(Argv[1]);
  if (!Stencils) {
    errs() << "vmjit-stencil-gen: " << toString(Stencils.takeError()) << "\n";
    return 1;
  }
  std::error_code EC;
  raw_fd_ostream OS(Argv[2], EC, sys::fs::OF_Text);
  if (EC) {
    errs() << "vmjit-stencil-gen: " << Argv[2] << ": " << EC.message() << "\n";
    return 1;
  }
  writeTable(OS, *Stencils);
  return 0;
}
