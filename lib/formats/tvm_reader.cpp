//===- tvm_reader.cpp - Loading Apache TVM's VMExecutable format -----------===//
//
// One forward pass over the image with a cursor that knows the absolute
// offset of every field, so that each error names the file, the offset and
// the field. Every count is checked against the bytes left before anything
// is allocated for it. The instruction offset table must agree with the
// instruction lengths; then the executable is built, verified, and its VM
// functions' code laid out in table order if it is not already.
//
//===----------------------------------------------------------------------===//

#include "vmjit/bytecode/verifier.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/literals.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <unordered_map>
#include <vector>

namespace vmjit::vm {
namespace {

/// At most `Max` bytes of `S` for a message: printable ASCII as it is,
/// other bytes as \xHH, "..." if cut.
std::string escaped(std::string_view S, size_t Max = 40) {
  std::string Out;
  for (size_t I = 0; I < S.size() && I < Max; ++I) {
    auto U = static_cast<unsigned char>(S[I]);
    if (U == '"' || U == '\\')
      Out += fmt::format("\\{}", S[I]);
    else if (U >= 0x20 && U < 0x7f)
      Out += S[I];
    else
      Out += fmt::format("\\x{:02x}", U);
  }
  return S.size() > Max ? Out + "..." : Out;
}

std::string quoted(std::string_view S) { return "\"" + escaped(S) + "\""; }

/// A cursor over the image; every error names the file and the offset.
class Cursor {
public:
  Cursor(const char *Data, uint64_t Size, const std::string &Name)
      : Data(Data), Size(Size), Name(Name) {}

  uint64_t pos() const { return Pos; }
  uint64_t left() const { return Size - Pos; }

  [[noreturn]] void failAt(uint64_t Offset, const std::string &Msg) const {
    throwError("FormatError", fmt::format("{}: offset {}: {}", Name, Offset,
                                          Msg));
  }

  template <typename T> T get(const std::string &What) {
    need(sizeof(T), What);
    T V;
    std::memcpy(&V, Data + Pos, sizeof(T));
    Pos += sizeof(T);
    return V;
  }

  /// A u64 count of items of at least `MinItemBytes` bytes each, rejected
  /// before anything is allocated if the bytes left cannot hold them.
  uint64_t count(uint64_t MinItemBytes, const std::string &What) {
    uint64_t At = Pos;
    uint64_t N = get<uint64_t>(What);
    if (N > left() / MinItemBytes)
      failAt(At, fmt::format("{} {} is more than the {} bytes left can hold",
                             What, N, left()));
    return N;
  }

  /// TVM's string: u64 length, then the bytes.
  std::string str(const std::string &What) {
    uint64_t N = count(1, What + " length");
    std::string S(Data + Pos, N);
    Pos += N;
    return S;
  }

  const char *take(uint64_t N, const std::string &What) {
    need(N, What);
    const char *P = Data + Pos;
    Pos += N;
    return P;
  }

private:
  void need(uint64_t N, const std::string &What) const {
    if (N > left())
      failAt(Pos, fmt::format("truncated: {} needs {} bytes, {} left", What, N,
                              left()));
  }

  const char *Data;
  uint64_t Size;
  uint64_t Pos = 0;
  const std::string &Name;
};

/// Smallest encodings, for count checks: a function entry (kind, name
/// length, four i64, parameter count), a memory scope (index, length), a
/// constant (tag and the smallest payload, a dtype), a word.
constexpr uint64_t kMinFunctionBytes = 4 + 8 + 32 + 8;
constexpr uint64_t kMinScopeBytes = 8 + 8;
constexpr uint64_t kMinConstantBytes = 4 + 4;
constexpr uint64_t kWordBytes = 8;

struct MemoryScope {
  uint64_t Offset;
  int64_t ConstIndex;
};

class TvmReader {
public:
  TvmReader(const char *Data, uint64_t Size, const std::string &Name,
            const LoadOptions &Opts)
      : C(Data, Size, Name), Name(Name), Opts(Opts) {}

  std::shared_ptr<Executable> run();

private:
  void readHeader();
  void readFunctions();
  void readMemoryScopes();
  void readConstants();
  Any readTensor(uint64_t Index);
  DLDataType readDType(const std::string &What);
  void readCode();
  void checkInstrOffsets(uint64_t OffsetsAt, uint64_t WordsAt);
  [[noreturn]] void failInstrLength(InstrLengthStatus Status, int64_t Pos,
                                    size_t Index, uint64_t WordAt) const;
  std::shared_ptr<Executable> build();

  Cursor C;
  /// Executable::tvmTensorTail of each tensor constant that has one.
  std::map<size_t, std::string> TensorTails;
  const std::string &Name;
  const LoadOptions &Opts;
  bool HasMemoryScopes = false;
  int64_t UnnamedParams = 0;
  std::unordered_map<std::string, uint64_t> NameIndex;
  std::vector<FunctionInfo> Functions;
  std::vector<MemoryScope> Scopes;
  std::vector<Any> Constants;
  std::vector<int64_t> InstrOffsets;
  std::vector<Word> Words;
};

void TvmReader::readHeader() {
  uint64_t Magic = C.get<uint64_t>("magic");
  if (Magic != tvmfmt::kMagic && Magic != tvmfmt::kMagicNoMemoryScopes)
    C.failAt(0, fmt::format("magic {:#018x} is not a TVM VM executable's "
                            "({:#018x} or {:#018x})",
                            Magic, tvmfmt::kMagic,
                            tvmfmt::kMagicNoMemoryScopes));
  HasMemoryScopes = Magic == tvmfmt::kMagic;
  uint64_t At = C.pos();
  std::string Version = C.str("version string");
  if (Version != tvmfmt::kVersion)
    C.failAt(At, fmt::format("version {} is not supported (TVM's VM "
                             "executable format is version \"{}\")",
                             quoted(Version), tvmfmt::kVersion));
}

void TvmReader::readFunctions() {
  uint64_t N = C.count(kMinFunctionBytes, "function count");
  Functions.reserve(N);
  for (uint64_t I = 0; I < N; ++I) {
    std::string What = fmt::format("function {}", I);
    uint64_t KindAt = C.pos();
    int32_t Kind = C.get<int32_t>(What + " kind");
    if (Kind != tvmfmt::kPackedFunc && Kind != tvmfmt::kVMFunc &&
        Kind != tvmfmt::kVMTIRFunc)
      C.failAt(KindAt, fmt::format("{} has kind {}, not 0 (packed), 1 (VM) "
                                   "or 2 (VMTIR)",
                                   What, Kind));
    FunctionInfo F;
    uint64_t NameAt = C.pos();
    F.Name = C.str(What + " name");
    auto [It, New] = NameIndex.emplace(F.Name, I);
    if (!New)
      C.failAt(NameAt, fmt::format("{} is called '{}', as function {} is",
                                   What, escaped(F.Name), It->second));
    What = fmt::format("function {} ('{}')", I, escaped(F.Name));
    int64_t Start = C.get<int64_t>(What + " start_instr");
    int64_t End = C.get<int64_t>(What + " end_instr");
    uint64_t NumArgsAt = C.pos();
    int64_t NumArgs = C.get<int64_t>(What + " num_args");
    int64_t Regs = C.get<int64_t>(What + " register_file_size");
    uint64_t NamesAt = C.pos();
    uint64_t NumNames = C.count(8, What + " parameter name count");
    std::vector<std::string> Params;
    Params.reserve(NumNames);
    for (uint64_t P = 0; P < NumNames; ++P)
      Params.push_back(C.str(fmt::format("{} parameter {} name", What, P)));

    if (Kind == tvmfmt::kPackedFunc) {
      // TVM resolves a packed entry by name and never reads the rest (its
      // compiler leaves num_args at -2): neither does vmjit.
      F.Kind = FunctionKind::Packed;
      Functions.push_back(std::move(F));
      continue;
    }
    F.Kind = Kind == tvmfmt::kVMFunc ? FunctionKind::Bytecode
                                     : FunctionKind::Native;
    if (NumArgs < 0 || NumArgs > Opts.Limits.MaxRegisters)
      C.failAt(NumArgsAt, fmt::format("{} has {} parameters (the register "
                                      "limit is {})",
                                      What, NumArgs,
                                      Opts.Limits.MaxRegisters));
    if (Params.empty() && NumArgs > 0) {
      // Saved without names: give each parameter one, within a budget so
      // that a small file cannot make millions of names.
      UnnamedParams += NumArgs;
      if (UnnamedParams > Opts.Limits.MaxRegisters)
        C.failAt(NamesAt, fmt::format("{} has no parameter names, and the "
                                      "file leaves more than {} parameters "
                                      "unnamed",
                                      What, Opts.Limits.MaxRegisters));
      for (int64_t P = 0; P < NumArgs; ++P)
        Params.push_back(fmt::format("arg{}", P));
    } else if (static_cast<int64_t>(Params.size()) != NumArgs) {
      C.failAt(NamesAt, fmt::format("{} has {} parameters but {} parameter "
                                    "names",
                                    What, NumArgs, Params.size()));
    }
    F.NumParams = NumArgs;
    F.ParamNames = std::move(Params);
    F.RegisterFileSize = Regs;
    if (F.Kind == FunctionKind::Bytecode) {
      F.StartInstr = Start;
      F.EndInstr = End;
    } else if (Regs < NumArgs) {
      // A VMTIR function has no code here (TVM ignores its range); its
      // register file holds its arguments and result.
      C.failAt(NumArgsAt + 8,
               fmt::format("{}: a register file of {} registers cannot hold "
                           "its {} parameters",
                           What, Regs, NumArgs));
    }
    Functions.push_back(std::move(F));
  }
}

void TvmReader::readMemoryScopes() {
  uint64_t N = C.count(kMinScopeBytes, "memory scope count");
  for (uint64_t I = 0; I < N; ++I) {
    std::string What = fmt::format("memory scope {}", I);
    uint64_t At = C.pos();
    int64_t Index = C.get<int64_t>(What + " constant index");
    C.str(What + " name");
    Scopes.push_back({At, Index});
  }
}

DLDataType TvmReader::readDType(const std::string &What) {
  DLDataType T;
  T.code = C.get<uint8_t>(What + " code");
  T.bits = C.get<uint8_t>(What + " bits");
  T.lanes = C.get<uint16_t>(What + " lanes");
  return T;
}

Any TvmReader::readTensor(uint64_t Index) {
  const std::string What = fmt::format("constant {} (a tensor)", Index);
  uint64_t At = C.pos();
  uint64_t Magic = C.get<uint64_t>(What + " magic");
  if (Magic != tvmfmt::kTensorMagic)
    C.failAt(At, fmt::format("{}: magic {:#018x} is not TVM's tensor magic "
                             "{:#018x}",
                             What, Magic, tvmfmt::kTensorMagic));
  At = C.pos();
  uint64_t Reserved = C.get<uint64_t>(What + " reserved word");
  if (Reserved != 0)
    C.failAt(At, fmt::format("{}: the reserved word is {:#x}, not 0", What,
                             Reserved));
  At = C.pos();
  int32_t DevType = C.get<int32_t>(What + " device type");
  int32_t DevId = C.get<int32_t>(What + " device id");
  if (DevType != kDLCPU || DevId != 0)
    C.failAt(At, fmt::format("{}: device ({}, {}) is not the CPU (1, 0) that "
                             "TVM saves every tensor constant on",
                             What, DevType, DevId));
  At = C.pos();
  int32_t NDim = C.get<int32_t>(What + " ndim");
  uint64_t DTypeAt = C.pos();
  DLDataType T = readDType(What + " dtype");
  if (NDim < 0 || static_cast<uint64_t>(NDim) > C.left() / 8)
    C.failAt(At, fmt::format("{}: ndim {} does not fit the {} bytes left",
                             What, NDim, C.left()));
  if (!isTensorElementDType(T))
    C.failAt(DTypeAt,
             fmt::format("{}: element type {} (code {}, {} bits, {} lanes) is "
                         "not one a tensor can have",
                         What, dtypeName(T), T.code, T.bits, T.lanes));
  std::vector<int64_t> Dims;
  for (int32_t D = 0; D < NDim; ++D) {
    uint64_t DimAt = C.pos();
    int64_t Dim = C.get<int64_t>(fmt::format("{} dimension {}", What, D));
    if (Dim < 0)
      C.failAt(DimAt, fmt::format("{}: dimension {} is {}", What, D, Dim));
    Dims.push_back(Dim);
  }
  // The element count, by the rule Tensor::empty applies too (so that it
  // never refuses what gets past here).
  const std::optional<uint64_t> Count = tensorElementCount(Dims, T);
  if (!Count)
    C.failAt(At, fmt::format("{}: shape {} has too many elements", What,
                             shapeString(Dims)));
  const uint64_t Elems = *Count;
  // TVM records Elems * ((bits + 7) / 8) bytes whatever the type: the data
  // of a byte-aligned one-lane tensor exactly; for a packed sub-byte type
  // (int4, float4_e2m1fn) the data and then bytes its writer read past it;
  // for a vector type (float32x2) only the first part of the data.
  const uint64_t Saved = tvmSavedBytes(Elems, T);
  const uint64_t Bytes = tensorDataBytes(Elems, T);
  At = C.pos();
  int64_t NBytes = C.get<int64_t>(What + " data size");
  if (NBytes < 0 || static_cast<uint64_t>(NBytes) != Saved)
    C.failAt(At,
             fmt::format("{}: the data size is {} bytes, but TVM saves "
                         "{} for a {} tensor of shape {}",
                         What, NBytes, Saved, dtypeName(T), shapeString(Dims)));
  const char *Src = C.take(Saved, What + " data");
  // The file has no alignment: the data is copied into aligned memory.
  Tensor Out = Tensor::empty(Dims, T);
  const uint64_t Copied = std::min(Saved, Bytes);
  if (Copied)
    std::memcpy(Out.data(), Src, static_cast<size_t>(Copied));
  if (Bytes > Copied) // what TVM did not save of a vector tensor
    std::memset(static_cast<char *>(Out.data()) + Copied, 0,
                static_cast<size_t>(Bytes - Copied));
  if (Saved > Copied)
    TensorTails[static_cast<size_t>(Index)] =
        std::string(Src + Copied, static_cast<size_t>(Saved - Copied));
  return Any(std::move(Out));
}

void TvmReader::readConstants() {
  uint64_t N = C.count(kMinConstantBytes, "constant count");
  Constants.reserve(N);
  for (uint64_t I = 0; I < N; ++I) {
    const std::string What = fmt::format("constant {}", I);
    uint64_t At = C.pos();
    int32_t Tag = C.get<int32_t>(What + " type index");
    switch (Tag) {
    case tvmfmt::kInt:
      Constants.emplace_back(C.get<int64_t>(What + " (an int)"));
      break;
    case tvmfmt::kFloat:
      Constants.emplace_back(C.get<double>(What + " (a float)"));
      break;
    case tvmfmt::kDataType: {
      uint64_t DTypeAt = C.pos();
      DLDataType T = readDType(What + " (a dtype)");
      // A type with a name (TVM's), which vmjit's own format and vmasm
      // carry as well, so that a conversion loads back.
      if (parseDType(dtypeName(T)) != T)
        C.failAt(DTypeAt, fmt::format("{}: data type (code {}, {} bits, {} "
                                      "lanes) is not supported",
                                      What, T.code, T.bits, T.lanes));
      Constants.emplace_back(T);
      break;
    }
    case tvmfmt::kString:
      Constants.emplace_back(C.str(What + " (a string)"));
      break;
    case tvmfmt::kShape: {
      uint64_t Rank = C.count(8, What + " (a shape) rank");
      std::vector<int64_t> Dims(Rank);
      for (uint64_t D = 0; D < Rank; ++D)
        Dims[D] = C.get<int64_t>(fmt::format("{} dimension {}", What, D));
      Constants.emplace_back(Shape(std::move(Dims)));
      break;
    }
    case tvmfmt::kTensor:
      Constants.push_back(readTensor(I));
      break;
    default:
      C.failAt(At, fmt::format("{} has type index {}, which TVM's constant "
                               "pool does not hold (1 int, 3 float, 5 dtype, "
                               "65 string, 69 shape, 70 tensor)",
                               What, Tag));
    }
  }
  for (const MemoryScope &S : Scopes)
    if (S.ConstIndex < 0 || static_cast<uint64_t>(S.ConstIndex) >= N)
      C.failAt(S.Offset, fmt::format("a memory scope names constant {}, but "
                                     "there are {} constants",
                                     S.ConstIndex, N));
}

void TvmReader::readCode() {
  uint64_t OffsetsAt = C.pos();
  uint64_t N = C.count(kWordBytes, "instruction offset count");
  InstrOffsets.resize(N);
  if (N)
    std::memcpy(InstrOffsets.data(), C.take(N * 8, "instruction offsets"),
                N * 8);
  uint64_t WordsAt = C.pos();
  uint64_t M = C.count(kWordBytes, "instruction word count");
  Words.resize(M);
  if (M)
    std::memcpy(Words.data(), C.take(M * 8, "instruction words"), M * 8);
  if (C.left() != 0)
    C.failAt(C.pos(), fmt::format("{} bytes after the instruction words, "
                                  "where the file should end",
                                  C.left()));
  checkInstrOffsets(OffsetsAt + 8, WordsAt + 8);
}

/// The offset table must list exactly the instructions the words split
/// into, back to back, as TVM's builder writes them.
void TvmReader::checkInstrOffsets(uint64_t OffsetsAt, uint64_t WordsAt) {
  const int64_t NumWords = static_cast<int64_t>(Words.size());
  int64_t Pos = 0;
  for (size_t I = 0; I < InstrOffsets.size(); ++I) {
    uint64_t EntryAt = OffsetsAt + 8 * I;
    if (InstrOffsets[I] != Pos)
      C.failAt(EntryAt,
               fmt::format("instruction {} is recorded at word {}, but the "
                           "instructions before it end at word {}",
                           I, InstrOffsets[I], Pos));
    if (Pos >= NumWords)
      C.failAt(EntryAt, fmt::format("instruction {} starts at word {}, past "
                                    "the {} instruction words",
                                    I, Pos, NumWords));
    const InstrLength Length = measureInstr(Words, Pos);
    if (Length.Status != InstrLengthStatus::Ok)
      failInstrLength(Length.Status, Pos, I,
                      WordsAt + 8 * static_cast<uint64_t>(Pos));
    Pos += Length.Words;
  }
  if (Pos != NumWords)
    C.failAt(WordsAt + 8 * static_cast<uint64_t>(Pos),
             fmt::format("{} instruction words after the last of the {} "
                         "instructions",
                         NumWords - Pos, InstrOffsets.size()));
}

/// The FormatError of instruction `Index`, at word `Pos`, whose first word
/// is at `WordAt` in the file and whose length measureInstr found bad
/// (`Status`).
void TvmReader::failInstrLength(InstrLengthStatus Status, int64_t Pos,
                                size_t Index, uint64_t WordAt) const {
  switch (Status) {
  case InstrLengthStatus::CallHeaderTruncated:
    C.failAt(WordAt,
             fmt::format("instruction {} (a call) is truncated", Index));
  case InstrLengthStatus::CallArgsTooMany:
    C.failAt(WordAt + 8 * kCallNumArgsWord,
             fmt::format("instruction {} (a call) has {} arguments, more "
                         "than the words left",
                         Index, Words[Pos + kCallNumArgsWord]));
  case InstrLengthStatus::UnknownOpcode:
    C.failAt(WordAt, fmt::format("instruction {} has opcode {}, not 1 "
                                 "(call), 2 (ret), 3 (goto) or 4 (if)",
                                 Index, Words[Pos]));
  case InstrLengthStatus::Ok:
  case InstrLengthStatus::Truncated:
    break;
  }
  C.failAt(WordAt, fmt::format("instruction {} ({}) is truncated", Index,
                               opcodeName(static_cast<Opcode>(Words[Pos]))));
}

/// VM functions' code back to back in function-table order, and nothing
/// else: the layout vmjit's builder (and so the assembler) makes.
bool hasTableOrderLayout(const Executable &Exe) {
  int64_t Next = 0;
  for (const FunctionInfo &F : Exe.functions())
    if (F.Kind == FunctionKind::Bytecode) {
      if (F.StartInstr != Next)
        return false;
      Next = F.EndInstr;
    }
  return Next == Exe.numInstrs();
}

std::shared_ptr<Executable> TvmReader::build() {
  try {
    auto Exe = Executable::create(Functions, Constants, Words);
    verifyExecutable(*Exe, Opts.Limits);
    if (hasTableOrderLayout(*Exe)) {
      Exe->setTvmTensorTails(std::move(TensorTails));
      return Exe;
    }
    // Copy each VM function's instructions in table order (jumps are
    // relative and calls go by function index, so nothing else changes).
    std::vector<FunctionInfo> Fns = Exe->functions();
    std::vector<Word> Code;
    int64_t Next = 0;
    for (FunctionInfo &F : Fns) {
      if (F.Kind != FunctionKind::Bytecode)
        continue;
      for (int64_t I = F.StartInstr; I < F.EndInstr; ++I) {
        InstrView V = Exe->instr(I);
        Code.insert(Code.end(), V.words(), V.words() + V.numWords());
      }
      F.EndInstr = Next + F.numInstrs();
      F.StartInstr = Next;
      Next = F.EndInstr;
    }
    auto Laid = Executable::create(std::move(Fns), Constants, std::move(Code));
    verifyExecutable(*Laid, Opts.Limits);
    Laid->setTvmTensorTails(std::move(TensorTails));
    return Laid;
  } catch (const Error &E) {
    throwError(E.kind(), Name + ": " + E.message());
  }
}

std::shared_ptr<Executable> TvmReader::run() {
  readHeader();
  readFunctions();
  if (HasMemoryScopes)
    readMemoryScopes();
  readConstants();
  readCode();
  return build();
}

} // namespace

bool hasTvmMagic(std::span<const char> Bytes) noexcept {
  if (Bytes.size() < 8)
    return false;
  uint64_t Magic;
  std::memcpy(&Magic, Bytes.data(), 8);
  return Magic == tvmfmt::kMagic || Magic == tvmfmt::kMagicNoMemoryScopes;
}

std::shared_ptr<Executable>
loadTvmExecutableFromBytes(std::span<const char> Bytes, const std::string &Name,
                           const LoadOptions &Opts) {
  if (Bytes.size() > static_cast<uint64_t>(Opts.MaxFileBytes))
    throwError("FormatError",
               fmt::format("{}: the file is {} bytes, over the limit of {}",
                           Name, Bytes.size(), Opts.MaxFileBytes));
  return TvmReader(Bytes.data(), Bytes.size(), Name, Opts).run();
}

} // namespace vmjit::vm
