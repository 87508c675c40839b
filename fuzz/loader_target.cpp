//===- loader_target.cpp - The binary loader fuzz target ------------------===//
//
// runLoaderInput: the binary format reader and the verifier on arbitrary
// bytes. Mutated files rarely keep valid checksums, so every input with
// the magic is also loaded with its file size and checksums recomputed;
// that variant is what reaches the section parsers and the verifier.
// What loads must survive serialize -> load (equal executable, same bytes)
// and the disassembler, which must refuse (ValueError) names that are not
// vmasm identifiers; when its layout is the builder's (the disassembler's
// documented limit), the disassembly must reassemble to an equal
// executable.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/disassembler.h"
#include "vmjit/vm/npy.h"
#include "vmjit/vm/serialize.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <xxhash.h>

namespace vmjit::fuzz {
namespace {

using vm::Executable;

constexpr char kMagic[8] = {'V', 'M', 'J', 'I', 'T', 'E', 'X', 'E'};
constexpr size_t kHeader = 64, kEntry = 32;

uint64_t readU64(const std::string &S, size_t At) {
  uint64_t V;
  std::memcpy(&V, S.data() + At, 8);
  return V;
}
void writeU64(std::string &S, size_t At, uint64_t V) {
  std::memcpy(S.data() + At, &V, 8);
}

/// The image with its file size, section checksums and header checksum
/// made consistent with its bytes (docs/binary-format.md), or nothing if
/// that changes nothing or the image has no header.
std::optional<std::string> withFixedChecksums(const std::string &In) {
  if (In.size() < kHeader || std::memcmp(In.data(), kMagic, 8) != 0)
    return std::nullopt;
  std::string S = In;
  writeU64(S, 16, S.size());
  uint32_t Count;
  std::memcpy(&Count, S.data() + 12, 4);
  uint64_t TableEnd = kHeader + uint64_t(Count) * kEntry;
  if (Count > 64 || TableEnd > S.size())
    return std::nullopt;
  for (uint32_t I = 0; I < Count; ++I) {
    size_t E = kHeader + size_t(I) * kEntry;
    uint64_t Off = readU64(S, E + 8), Len = readU64(S, E + 16);
    if (Off <= S.size() && Len <= S.size() - Off)
      writeU64(S, E + 24, XXH3_64bits(S.data() + Off, Len));
  }
  writeU64(S, 24, 0);
  writeU64(S, 24, XXH3_64bits(S.data(), TableEnd));
  if (S == In)
    return std::nullopt;
  return S;
}

/// Bytecode functions' code in table order, back to back, and packed or
/// native entries with no parameters, registers or code: the layout the
/// builder (hence the assembler) makes, which reassembly reproduces.
bool hasBuilderLayout(const Executable &Exe) {
  int64_t Next = 0;
  for (const vm::FunctionInfo &F : Exe.functions()) {
    if (F.Kind == vm::FunctionKind::Bytecode) {
      if (F.StartInstr != Next)
        return false;
      Next = F.EndInstr;
    } else if (F.StartInstr != 0 || F.EndInstr != 0 || F.NumParams != 0 ||
               F.RegisterFileSize != 0 || !F.ParamNames.empty()) {
      return false;
    }
  }
  return Next == Exe.numInstrs();
}

bool isVmasmIdentifier(const std::string &S) {
  auto Start = [](char C) {
    return (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') || C == '_';
  };
  if (S.empty() || !Start(S[0]))
    return false;
  for (char C : S)
    if (!Start(C) && !(C >= '0' && C <= '9') && C != '.')
      return false;
  return true;
}

/// Every function and parameter name is one vmasm can write (the
/// disassembler writes names as they are: "f;x" would reassemble as "f").
bool hasVmasmNames(const Executable &Exe) {
  for (const vm::FunctionInfo &F : Exe.functions()) {
    if (!isVmasmIdentifier(F.Name))
      return false;
    for (const std::string &P : F.ParamNames)
      if (!isVmasmIdentifier(P) || P == "vm")
        return false;
  }
  return true;
}

std::string functionText(const vm::FunctionInfo &F) {
  std::string Params;
  for (const std::string &P : F.ParamNames)
    Params += " '" + P + "'";
  return "kind " + std::to_string(int(F.Kind)) + " '" + F.Name + "' [" +
         std::to_string(F.StartInstr) + ", " + std::to_string(F.EndInstr) +
         ") params " + std::to_string(F.NumParams) + Params + " registers " +
         std::to_string(F.RegisterFileSize);
}

/// Where two executables differ first (for the failure message).
std::string firstDifference(const Executable &A, const Executable &B) {
  size_t NF = std::min(A.functions().size(), B.functions().size());
  for (size_t I = 0; I < NF; ++I)
    if (!(A.functions()[I] == B.functions()[I]))
      return "function " + std::to_string(I) + ": " +
             functionText(A.functions()[I]) + " became " +
             functionText(B.functions()[I]);
  if (A.functions().size() != B.functions().size())
    return "the number of functions";
  if (A.code() != B.code())
    return "the code";
  size_t NC = std::min(A.constants().size(), B.constants().size());
  for (size_t I = 0; I < NC; ++I)
    if (A.constants()[I].typeIndex() != B.constants()[I].typeIndex())
      return "the type of constant " + std::to_string(I);
  return "the constants";
}

void checkRoundTrips(const Executable &Exe) {
  std::string Image;
  std::shared_ptr<Executable> Reloaded;
  try {
    Image = vm::serializeExecutable(Exe);
    Reloaded = vm::loadExecutableFromBytes(Image, "reserialized");
  } catch (const Error &E) {
    fail("a loaded executable does not serialize and load again: " +
         E.format());
  }
  if (!Reloaded->equals(Exe))
    fail("serialize -> load changed the executable (" +
         firstDifference(Exe, *Reloaded) + ")");
  if (vm::serializeExecutable(*Reloaded) != Image)
    fail("serializing the reloaded executable gave other bytes");

  std::string Text;
  try {
    Text = vm::disassemble(Exe);
  } catch (const Error &E) {
    // Constants vmasm cannot write (e.g. a float8 or vector tensor).
    if (E.kind() != "ValueError")
      fail("disassemble threw " + E.format());
    return;
  }
  // The disassembler refuses names vmasm cannot write (a ValueError
  // above); writing one would rename the function silently.
  if (!hasVmasmNames(Exe))
    fail("the disassembler wrote a name that is not a vmasm identifier:\n" +
         Text);
  if (!hasBuilderLayout(Exe))
    return;
  std::shared_ptr<Executable> Again;
  try {
    Again = vm::assemble(Text, "disassembly.vmasm");
  } catch (const Error &E) {
    fail("the disassembly does not reassemble: " + E.format() + "\n" + Text);
  }
  if (!Again->equals(Exe))
    fail("disassemble -> assemble changed the executable (" +
         firstDifference(Exe, *Again) + "):\n" + Text);
  if (vm::disassemble(*Again) != Text)
    fail("disassembling the reassembled executable gave other text:\n" +
         Text);
}

/// Loads `Image`; nothing if the loader rejects it with the errors it
/// documents (FormatError, VerifyError).
std::shared_ptr<Executable> tryLoad(const std::string &Image) {
  try {
    return vm::loadExecutableFromBytes(Image, "fuzz.bin");
  } catch (const Error &E) {
    if (E.kind() != "FormatError" && E.kind() != "VerifyError")
      fail("the loader threw an undocumented error kind: " + E.format());
    return nullptr;
  }
}

/// parseNpy, then serializeNpy -> parseNpy -> serializeNpy must be stable.
/// Returns whether the bytes parsed.
bool runNpy(const std::string &Bytes) {
  Tensor T;
  try {
    T = vm::parseNpy(Bytes, "fuzz.npy");
  } catch (const Error &) {
    return false;
  }
  std::string Image;
  try {
    Image = vm::serializeNpy(T);
  } catch (const Error &E) {
    fail("a parsed .npy tensor does not serialize: " + E.format());
  }
  Tensor Back;
  try {
    Back = vm::parseNpy(Image, "reserialized.npy");
  } catch (const Error &E) {
    fail("a reserialized .npy image does not parse: " + E.format());
  }
  if (vm::serializeNpy(Back) != Image)
    fail(".npy parse -> serialize is not stable");
  return true;
}

} // namespace

Outcome runLoaderInput(std::span<const uint8_t> Data) {
  std::string Bytes(reinterpret_cast<const char *>(Data.data()), Data.size());
  if (Bytes.size() >= 6 && Bytes.compare(0, 6, "\x93NUMPY") == 0) {
    return runNpy(Bytes) ? Outcome::Accepted : Outcome::Rejected;
  }
  Outcome Result = Outcome::Rejected;
  if (auto Exe = tryLoad(Bytes)) {
    checkRoundTrips(*Exe);
    Result = Outcome::Accepted;
  }
  if (auto Fixed = withFixedChecksums(Bytes)) {
    if (auto Exe = tryLoad(*Fixed)) {
      checkRoundTrips(*Exe);
      Result = Outcome::Accepted;
    }
  }
  return Result;
}

} // namespace vmjit::fuzz
