//===- loader_target.cpp - The binary loader fuzz target ------------------===//
//
// runLoaderInput: the binary format readers (vmjit's and TVM's, and the
// module blob of exported libraries) and the verifier on arbitrary bytes. Mutated vmjit files rarely keep valid
// checksums, so every input with the vmjit magic is also loaded with its
// file size and checksums recomputed; that variant is what reaches the
// section parsers and the verifier (TVM's format has no checksums). What
// loads must survive serialize -> load in both formats (equal executable,
// same bytes; TVM's writer may refuse only constants TVM cannot hold) and
// the disassembler, which must write every name so that it reads back: as
// it is when it is a vmasm identifier, else quoted (an oracle of its own
// here checks the declaration lines); when its layout is the builder's
// (the disassembler's documented limit), the disassembly must reassemble
// to an equal executable.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

#include "vmjit/files/npy.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/text/disassembler.h"
#include "vmjit/vm/program.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
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

/// Bytecode functions' code in table order, back to back; packed entries
/// with no parameters, registers or code; native entries with no code and
/// one name per parameter in a register file that holds them (what
/// `.native NAME(PARAMS) .regs N` writes): the layout the builder (hence
/// the assembler) makes, which reassembly reproduces.
bool hasBuilderLayout(const Executable &Exe) {
  int64_t Next = 0;
  for (const vm::FunctionInfo &F : Exe.functions()) {
    if (F.Kind == vm::FunctionKind::Bytecode) {
      if (F.StartInstr != Next)
        return false;
      Next = F.EndInstr;
    } else if (F.StartInstr != 0 || F.EndInstr != 0) {
      return false;
    } else if (F.Kind == vm::FunctionKind::Native
                   ? (F.NumParams != int64_t(F.ParamNames.size()) ||
                      F.RegisterFileSize < F.NumParams)
                   : (F.NumParams != 0 || F.RegisterFileSize != 0 ||
                      !F.ParamNames.empty())) {
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

/// A vmasm string literal: printable ASCII as it is, \" \\ \n \t, and
/// \xHH for every other byte (the escapes the vmasm contract lists).
std::string vmasmString(const std::string &S) {
  static const char *Hex = "0123456789abcdef";
  std::string Out = "\"";
  for (char C : S) {
    auto U = static_cast<unsigned char>(C);
    if (C == '"' || C == '\\')
      Out += {'\\', C};
    else if (C == '\n')
      Out += "\\n";
    else if (C == '\t')
      Out += "\\t";
    else if (U >= 0x20 && U < 0x7f)
      Out += C;
    else
      Out += {'\\', 'x', Hex[U >> 4], Hex[U & 15]};
  }
  return Out + "\"";
}

/// How vmasm must write a function name: bare only if it is an identifier
/// ("f;x" bare would reassemble as "f"), else as a string.
std::string functionName(const std::string &Name) {
  return isVmasmIdentifier(Name) ? Name : vmasmString(Name);
}

/// A parameter list: a name is bare only if it is an identifier, not "vm"
/// and not repeated (a bare one names a register); else quoted.
std::string paramList(const std::vector<std::string> &Params) {
  std::unordered_map<std::string, size_t> Count; // linear in the list
  for (const std::string &P : Params)
    ++Count[P];
  std::string Out = "(";
  for (size_t I = 0; I < Params.size(); ++I) {
    const std::string &P = Params[I];
    bool Bare = isVmasmIdentifier(P) && P != "vm" && Count[P] == 1;
    Out += (I ? ", " : "") + (Bare ? P : vmasmString(P));
  }
  return Out + ")";
}

/// The declaration line of each table entry is in `Text` with every name
/// written as above: the quoting rule, checked independently of the
/// disassembler's own code. Returns the first line missing, or "".
std::string missingDeclaration(const Executable &Exe, const std::string &Text) {
  for (const vm::FunctionInfo &F : Exe.functions()) {
    std::string Line;
    switch (F.Kind) {
    case vm::FunctionKind::Packed:
      Line = ".extern " + functionName(F.Name);
      break;
    case vm::FunctionKind::Bytecode:
      Line = ".func " + functionName(F.Name) + paramList(F.ParamNames);
      break;
    case vm::FunctionKind::Native:
      Line = ".native " + functionName(F.Name);
      if (!F.ParamNames.empty() || F.RegisterFileSize != 0)
        Line += paramList(F.ParamNames);
      if (F.RegisterFileSize != F.NumParams)
        Line += " .regs " + std::to_string(F.RegisterFileSize);
      break;
    }
    Line += "\n";
    if (Text.compare(0, Line.size(), Line) != 0 &&
        Text.find("\n" + Line) == std::string::npos)
      return Line;
  }
  return "";
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

/// A constant TVM's format cannot hold: anything but an int, float, dtype,
/// string, shape or a compact CPU tensor of a type a tensor can have, whose
/// bytes past the Elems * ((bits + 7) / 8) TVM saves (for a vector type)
/// are zero.
bool hasConstantTvmCannotHold(const Executable &Exe) {
  for (const Any &C : Exe.constants()) {
    switch (C.typeIndex()) {
    case kVMJITInt:
    case kVMJITFloat:
    case kVMJITDataType:
    case kVMJITSmallStr:
    case kVMJITStr:
    case kVMJITShape:
      continue;
    case kVMJITTensor: {
      Tensor X = *C.as<Tensor>();
      DLDataType T = X.dtype();
      if (!isTensorElementDType(T) || X.device().device_type != kDLCPU ||
          !X.isContiguous())
        return true;
      const uint64_t Saved = uint64_t(X.numel()) * ((T.bits + 7u) / 8u);
      const char *P = static_cast<const char *>(X.data());
      for (uint64_t B = Saved; B < X.nbytes(); ++B)
        if (P[B] != 0)
          return true;
      continue;
    }
    default:
      return true;
    }
  }
  return false;
}

/// Through TVM's format: the writer refuses only constants TVM cannot hold
/// (ValueError). A program in the builder's layout loads back equal (the
/// reader keeps exactly what that layout has); any other loads back
/// normalised (docs/tvm.md) or is rejected cleanly. What loads back saves
/// to bytes that load to an equal executable and save to the same bytes.
void checkTvmRoundTrip(const Executable &Exe) {
  std::string Image;
  try {
    Image = vm::serializeTvmExecutable(Exe);
  } catch (const Error &E) {
    if (E.kind() != "ValueError" || !hasConstantTvmCannotHold(Exe))
      fail("TVM's writer refused a program it can hold: " + E.format());
    return;
  }
  if (hasConstantTvmCannotHold(Exe))
    fail("TVM's writer wrote a constant TVM's format cannot hold");
  // The TVM reader bounds a parameter count by the register limit.
  bool Exact = hasBuilderLayout(Exe);
  for (const vm::FunctionInfo &F : Exe.functions())
    Exact &= F.NumParams <= vm::VerifierLimits().MaxRegisters;
  std::shared_ptr<Executable> Back;
  try {
    Back = vm::loadExecutableFromBytes(Image, "resaved.tvmexec");
  } catch (const Error &E) {
    if (Exact)
      fail("a program written in TVM's format does not load: " + E.format());
    if (E.kind() != "FormatError" && E.kind() != "VerifyError")
      fail("TVM's reader threw an undocumented error kind: " + E.format());
    return;
  }
  if (Exact && !Back->equals(Exe))
    fail("vmjit -> TVM format -> vmjit changed the executable (" +
         firstDifference(Exe, *Back) + ")");
  std::string Again;
  std::shared_ptr<Executable> Back2;
  try {
    Again = vm::serializeTvmExecutable(*Back);
    Back2 = vm::loadExecutableFromBytes(Again, "resaved2.tvmexec");
  } catch (const Error &E) {
    fail("a program TVM's reader loaded does not save and load again: " +
         E.format());
  }
  if (!Back2->equals(*Back))
    fail("TVM format -> vmjit -> TVM format changed the executable (" +
         firstDifference(*Back, *Back2) + ")");
  if (vm::serializeTvmExecutable(*Back2) != Again)
    fail("saving the reloaded TVM-format executable gave other bytes");
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

  checkTvmRoundTrip(Exe);

  std::string Text;
  try {
    Text = vm::disassemble(Exe);
  } catch (const Error &E) {
    // Constants vmasm cannot write (e.g. a handle tensor), or a
    // native entry whose parameters `.native` cannot give back.
    if (E.kind() != "ValueError")
      fail("disassemble threw " + E.format());
    return;
  }
  // Every name is written so that it reads back as itself.
  std::string Missing = missingDeclaration(Exe, Text);
  if (!Missing.empty())
    fail("the disassembly lacks the declaration " + vmasmString(Missing) +
         ":\n" + Text);
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

/// The bytes as an exported library's module blob (`__tvm_ffi__library_bin`);
/// nothing if it is rejected with a documented error.
std::shared_ptr<Executable> tryLoadLibraryBin(const std::string &Bytes) {
  try {
    return vm::loadLibraryBin(Bytes, "fuzz.so");
  } catch (const Error &E) {
    if (E.kind() != "FormatError" && E.kind() != "VerifyError")
      fail("the library blob reader threw an undocumented error kind: " +
           E.format());
    return nullptr;
  }
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
  if (auto Exe = tryLoadLibraryBin(Bytes)) {
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
