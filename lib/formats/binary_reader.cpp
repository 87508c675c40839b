//===- binary_reader.cpp - Loading the binary executable format ------------===//
//
// Every read is bounds-checked against its section; every count is checked
// against the bytes left before anything is allocated for it; checksums are
// compared before a section is parsed. The verifier runs last. A file with
// TVM's magic goes to tvm_reader.cpp instead.
//
//===----------------------------------------------------------------------===//

#include "binary_format.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/asm_lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#ifdef VMJIT_HAVE_XXH3_DISPATCH
// Runtime-dispatched XXH3 (AVX2/AVX-512 where the CPU has them; Debian's
// default entry is SSE2 only), same hash values: this header redefines
// XXH3_64bits as XXH3_64bits_dispatch. 1 GiB verifies in ~91 ms, not ~126.
#include <xxh_x86dispatch.h>
#endif

namespace vmjit::vm {
namespace {

/// Memory holding a file image: a private (copy-on-write) mapping or an
/// aligned heap copy. Tensor constants keep it alive.
class ImageObj : public Object {
public:
  static int32_t typeIndex() {
    static const int32_t Index = registerDynamicType("vm.ExecutableImage");
    return Index;
  }
  ImageObj(void *Data, size_t Size, bool Mapped)
      : Object(typeIndex(), objectDeleter<ImageObj>), Data(Data), Size(Size),
        Mapped(Mapped) {}
  ~ImageObj() {
    if (Mapped)
      ::munmap(Data, Size);
    else
      std::free(Data);
  }
  void *Data;
  size_t Size;
  bool Mapped;
};

[[noreturn]] void formatError(const std::string &Name, const std::string &Msg) {
  throwError("FormatError", fmt::format("{}: {}", Name, Msg));
}

class ByteReader {
public:
  ByteReader(const char *Data, uint64_t Size, std::string Where)
      : Data(Data), Size(Size), Where(std::move(Where)) {}

  template <typename T> T get(const char *What) {
    need(sizeof(T), What);
    T V;
    std::memcpy(&V, Data + Pos, sizeof(T));
    Pos += sizeof(T);
    return V;
  }
  std::string getString(const char *What) {
    uint32_t Len = get<uint32_t>(What);
    need(Len, What);
    std::string S(Data + Pos, Len);
    Pos += Len;
    return S;
  }
  /// A count of items of at least `MinItemSize` bytes each: rejects counts
  /// that the remaining bytes cannot hold, before anything is allocated.
  uint64_t getCount(uint64_t MinItemSize, const char *What) {
    uint64_t N = get<uint64_t>(What);
    if (MinItemSize && N > (Size - Pos) / MinItemSize)
      fail(fmt::format("{} count {} is larger than the section can hold", What,
                       N));
    return N;
  }
  const char *take(uint64_t N, const char *What) {
    need(N, What);
    const char *P = Data + Pos;
    Pos += N;
    return P;
  }
  bool atEnd() const { return Pos == Size; }
  /// How many bytes of the section have been read.
  uint64_t offset() const { return Pos; }
  [[noreturn]] void fail(const std::string &Msg) const {
    throwError("FormatError", Where + ": " + Msg);
  }

private:
  void need(uint64_t N, const char *What) const {
    if (N > Size - Pos)
      fail(fmt::format("truncated while reading {} (at byte {} of {})", What,
                       Pos, Size));
  }
  const char *Data;
  uint64_t Size;
  uint64_t Pos = 0;
  std::string Where;
};

struct SectionRef {
  const char *Data = nullptr;
  uint64_t Size = 0;
  bool Present = false;
};

std::vector<FunctionInfo> readFunctions(ByteReader R) {
  // kind + name length + 4 x i64 + param count.
  uint64_t N = R.getCount(1 + 4 + 32 + 4, "function");
  std::vector<FunctionInfo> Fns(N);
  for (FunctionInfo &F : Fns) {
    uint8_t Kind = R.get<uint8_t>("function kind");
    if (Kind > static_cast<uint8_t>(FunctionKind::Native))
      R.fail(fmt::format("function {} has unknown kind {}", &F - Fns.data(),
                         Kind));
    F.Kind = static_cast<FunctionKind>(Kind);
    F.Name = R.getString("function name");
    F.StartInstr = R.get<int64_t>("function start");
    F.EndInstr = R.get<int64_t>("function end");
    F.NumParams = R.get<int64_t>("parameter count");
    F.RegisterFileSize = R.get<int64_t>("register file size");
    uint32_t NP = R.get<uint32_t>("parameter name count");
    for (uint32_t I = 0; I < NP; ++I) {
      F.ParamNames.push_back(R.getString("parameter name"));
    }
  }
  if (!R.atEnd())
    R.fail("unexpected bytes after the function table");
  return Fns;
}

DLDataType readDType(ByteReader &R) {
  DLDataType T;
  T.code = R.get<uint8_t>("dtype code");
  T.bits = R.get<uint8_t>("dtype bits");
  T.lanes = R.get<uint16_t>("dtype lanes");
  if (parseDType(dtypeName(T)) != T)
    R.fail(fmt::format("unsupported data type (code {}, bits {}, lanes {})",
                       T.code, T.bits, T.lanes));
  return T;
}

/// Tensor dimensions are never negative; a shape constant's may be (-1 is
/// "infer" for tensor.reshape).
std::vector<int64_t> readDims(ByteReader &R, uint32_t NDim, bool IsTensor) {
  std::vector<int64_t> Dims;
  for (uint32_t I = 0; I < NDim; ++I) {
    int64_t D = R.get<int64_t>("dimension");
    if (IsTensor && D < 0)
      R.fail(fmt::format("negative dimension {}", D));
    Dims.push_back(D);
  }
  return Dims;
}

std::vector<Any> readConstants(ByteReader R, const SectionRef &Data,
                               const ObjectRef &Image) {
  using namespace binfmt;
  uint64_t N = R.getCount(1, "constant");
  std::vector<Any> Consts;
  Consts.reserve(N);
  for (uint64_t I = 0; I < N; ++I) {
    uint8_t Tag = R.get<uint8_t>("constant tag");
    switch (Tag) {
    case kConstNull:
      Consts.emplace_back();
      break;
    case kConstInt:
      Consts.emplace_back(R.get<int64_t>("int constant"));
      break;
    case kConstFloat:
      Consts.emplace_back(R.get<double>("float constant"));
      break;
    case kConstBool: {
      uint8_t B = R.get<uint8_t>("bool constant");
      if (B > 1)
        R.fail(fmt::format("constant {}: bool value {}", I, B));
      Consts.emplace_back(B != 0);
      break;
    }
    case kConstString:
      Consts.emplace_back(R.getString("string constant"));
      break;
    case kConstDType:
      Consts.emplace_back(readDType(R));
      break;
    case kConstShape: {
      uint32_t NDim = R.get<uint32_t>("shape rank");
      Consts.emplace_back(Shape(readDims(R, NDim, /*IsTensor=*/false)));
      break;
    }
    case kConstTensor: {
      DLDataType T = readDType(R);
      if (!isTensorElementDType(T))
        R.fail(fmt::format("constant {}: a tensor cannot have elements of "
                           "type {}",
                           I, dtypeName(T)));
      uint32_t NDim = R.get<uint32_t>("tensor rank");
      std::vector<int64_t> Dims = readDims(R, NDim, /*IsTensor=*/true);
      uint64_t Off = R.get<uint64_t>("tensor data offset");
      uint64_t Bytes = R.get<uint64_t>("tensor data size");
      // The element count must match the data size without overflowing.
      const std::optional<uint64_t> Count = tensorElementCount(Dims, T);
      if (!Count)
        R.fail(fmt::format("constant {}: tensor shape {} has too many "
                           "elements",
                           I, shapeString(Dims)));
      const uint64_t Elems = *Count;
      // Sub-byte elements packed (tensorDataBytes), as in memory.
      if (tensorDataBytes(Elems, T) != Bytes)
        R.fail(fmt::format("constant {}: a {} tensor of shape {} has {} bytes "
                           "of data, expected {}",
                           I, dtypeName(T), shapeString(Dims), Bytes,
                           tensorDataBytes(Elems, T)));
      if (Off % kAlign != 0 || Off > Data.Size || Bytes > Data.Size - Off)
        R.fail(fmt::format("constant {}: tensor data [{}, +{}) is not an "
                           "aligned range of the {}-byte data section",
                           I, Off, Bytes, Data.Size));
      Consts.emplace_back(Tensor::view(Image, const_cast<char *>(Data.Data) + Off,
                                       Dims, T));
      break;
    }
    default:
      R.fail(fmt::format("constant {} has unknown tag {}", I, Tag));
    }
  }
  if (!R.atEnd())
    R.fail("unexpected bytes after the constant pool");
  return Consts;
}

std::vector<Word> readCode(ByteReader R) {
  uint64_t N = R.getCount(sizeof(Word), "code word");
  std::vector<Word> Code(N);
  if (N)
    std::memcpy(Code.data(), R.take(N * sizeof(Word), "code"),
                N * sizeof(Word));
  if (!R.atEnd())
    R.fail("unexpected bytes after the code");
  return Code;
}

/// Bytes outside the header, the section table and the sections (the
/// alignment padding) are covered by no checksum, so they must be zero: a
/// flipped bit anywhere in the file is then always reported.
/// A name the assembler reads back bare and keeps: an identifier that is
/// not `vm` or `void` (and, for a label, a label name and not L0, L1, ...).
bool isBareName(std::string_view S, bool Label) {
  if (Label)
    return asmtext::isLabelName(S) && !asmtext::isGeneratedLabel(S);
  return asmtext::isIdentifier(S) && !asmtext::isSpecialRegisterName(S);
}

/// The NAME section (binary_writer.cpp's writeNames), checked against the
/// verified executable: bytecode functions in increasing order, registers
/// past the parameters and inside the register file, instructions inside
/// the function, each list increasing, names that vmasm reads back bare and
/// that repeat within neither list (a parameter: its own name).
std::vector<DebugNames> readNames(ByteReader R, const Executable &Exe) {
  const auto NumFns = static_cast<uint64_t>(Exe.functions().size());
  uint64_t Count = R.getCount(8 + 8 + 8, "named function");
  std::vector<DebugNames> Out(NumFns);
  int64_t Prev = -1;
  for (uint64_t E = 0; E < Count; ++E) {
    uint64_t K = R.get<uint64_t>("function index");
    if (K >= NumFns || static_cast<int64_t>(K) <= Prev ||
        Exe.function(static_cast<int64_t>(K)).Kind != FunctionKind::Bytecode)
      R.fail(fmt::format("entry {} names function {}, which is not the next "
                         "bytecode function",
                         E, K));
    Prev = static_cast<int64_t>(K);
    const FunctionInfo &F = Exe.function(Prev);
    DebugNames &N = Out[K];
    std::set<std::string> Seen(F.ParamNames.begin(), F.ParamNames.end());
    const std::vector<bool> Bare = asmtext::bareParams(F.ParamNames);
    for (auto *List : {&N.Registers, &N.Labels}) {
      const bool Regs = List == &N.Registers;
      const int64_t Lo = 0;
      const int64_t Hi = Regs ? F.RegisterFileSize : F.numInstrs();
      uint64_t M = R.getCount(4 + 4, Regs ? "named register" : "label");
      if (!Regs)
        Seen.clear();
      for (uint64_t J = 0; J < M; ++J) {
        auto Index = static_cast<int64_t>(R.get<uint32_t>("index"));
        std::string Name = R.getString("name");
        if (Index < Lo || Index >= Hi ||
            (!List->empty() && Index <= List->back().first))
          R.fail(fmt::format("function '{}': {} {} is out of order or range",
                             F.Name, Regs ? "register" : "instruction", Index));
        // A parameter is named as its list names it; another register by
        // a name no parameter has.
        const bool Param = Regs && Index < F.NumParams;
        const bool Ok =
            Param ? Name == F.ParamNames[static_cast<size_t>(Index)] &&
                        Bare[static_cast<size_t>(Index)]
                  : isBareName(Name, !Regs) && Seen.insert(Name).second;
        if (!Ok)
          R.fail(fmt::format("function '{}': '{}' is not a name vmasm can "
                             "give there",
                             F.Name, Name));
        List->emplace_back(Index, std::move(Name));
      }
    }
  }
  if (!R.atEnd())
    R.fail("bytes after the last entry");
  return Out;
}

/// The CNAM section (binary_writer.cpp's writeConstNames): a name per
/// constant, each empty or one vmasm reads back bare and keeps (not c0,
/// c1, ...), none twice.
std::vector<std::string> readConstNames(ByteReader R, const Executable &Exe) {
  const uint64_t N = R.getCount(4, "constant name");
  if (N != Exe.constants().size())
    R.fail(fmt::format("{} names for {} constants", N, Exe.constants().size()));
  std::vector<std::string> Out;
  std::set<std::string> Seen;
  for (uint64_t I = 0; I < N; ++I) {
    std::string Name = R.getString("name");
    if (!Name.empty() &&
        (!asmtext::isIdentifier(Name) ||
         asmtext::isGeneratedConstantName(Name) || !Seen.insert(Name).second))
      R.fail(fmt::format("constant {}: '{}' is not a name vmasm can give it", I,
                         Name));
    Out.push_back(std::move(Name));
  }
  if (!R.atEnd())
    R.fail("bytes after the last name");
  return Out;
}

/// The LINE section (binary_writer.cpp's writeSourceMap): a file name of
/// printable characters, then a position per instruction, each a line and
/// column of at most kMaxSourcePos, a column only with a line.
SourceMap readSourceMap(ByteReader R, const Executable &Exe) {
  SourceMap Out;
  Out.File = R.getString("file name");
  if (Out.File.empty() ||
      std::any_of(Out.File.begin(), Out.File.end(), [](char C) {
        return static_cast<unsigned char>(C) < 0x20 || C == 0x7f;
      }))
    R.fail("the file name (at byte 0) is empty or holds a control "
           "character");
  const uint64_t N = R.getCount(8, "position");
  if (N != static_cast<uint64_t>(Exe.numInstrs()))
    R.fail(fmt::format("{} positions for {} instructions", N, Exe.numInstrs()));
  Out.Instrs.resize(N);
  for (SourcePos &P : Out.Instrs) {
    const uint64_t At = R.offset();
    P.Line = R.get<uint32_t>("line");
    P.Col = R.get<uint32_t>("column");
    if (P.Line > binfmt::kMaxSourcePos || P.Col > binfmt::kMaxSourcePos ||
        (P.Line == 0 && P.Col != 0))
      R.fail(fmt::format("instruction {} (at byte {}): line {}, column {} is "
                         "not a position in the text",
                         &P - Out.Instrs.data(), At, P.Line, P.Col));
  }
  if (!R.atEnd())
    R.fail(
        fmt::format("bytes after the last position (at byte {})", R.offset()));
  return Out;
}

void checkPaddingIsZero(const char *P, uint64_t Size, uint64_t TableEnd,
                        std::vector<SectionRef> Sections,
                        const std::string &Name) {
  std::sort(Sections.begin(), Sections.end(),
            [](const SectionRef &A, const SectionRef &B) {
              return A.Data < B.Data;
            });
  uint64_t Pos = TableEnd;
  auto CheckGap = [&](uint64_t End) {
    for (uint64_t I = Pos; I < End; ++I)
      if (P[I] != 0)
        formatError(Name, fmt::format("non-zero padding byte at offset {} (the "
                                      "file is corrupt)",
                                      I));
  };
  for (const SectionRef &S : Sections) {
    if (!S.Present)
      continue;
    uint64_t Start = static_cast<uint64_t>(S.Data - P);
    if (Start < Pos)
      formatError(Name, fmt::format("sections overlap at offset {}", Start));
    CheckGap(Start);
    Pos = Start + S.Size;
  }
  CheckGap(Size);
}

std::shared_ptr<Executable> parseImage(const char *P, uint64_t Size,
                                       ObjectRef Image, const std::string &Name,
                                       const LoadOptions &Opts) {
  using namespace binfmt;
  // Bad magic first: for a file of another kind it is the useful message.
  if (std::memcmp(P, kMagic, std::min<uint64_t>(Size, sizeof(kMagic))) != 0)
    formatError(Name, "not a vmjit executable (bad magic)");
  if (Size < kHeaderSize)
    formatError(Name, fmt::format("{} bytes is too short for a vmjit "
                                  "executable (the header alone is {})",
                                  Size, kHeaderSize));
  ByteReader H(P, kHeaderSize, Name + ": header");
  H.take(sizeof(kMagic), "magic");
  uint32_t Version = H.get<uint32_t>("format version");
  if (Version != kFormatVersion)
    formatError(Name, fmt::format("format version {} is not supported (this "
                                  "build reads version {})",
                                  Version, kFormatVersion));
  uint32_t NumSections = H.get<uint32_t>("section count");
  uint64_t FileSize = H.get<uint64_t>("file size");
  uint64_t HeaderSum = H.get<uint64_t>("header checksum");
  if (FileSize != Size)
    formatError(Name, fmt::format("the header says the file has {} bytes, but "
                                  "it has {} (truncated or extended)",
                                  FileSize, Size));
  if (NumSections > 64 ||
      kHeaderSize + uint64_t(NumSections) * kSectionEntrySize > Size)
    formatError(Name, fmt::format("section count {} does not fit the file",
                                  NumSections));
  uint64_t TableEnd = kHeaderSize + uint64_t(NumSections) * kSectionEntrySize;
  {
    std::string Copy(P, TableEnd);
    std::memset(Copy.data() + kHeaderChecksumOffset, 0, 8);
    if (XXH3_64bits(Copy.data(), Copy.size()) != HeaderSum)
      formatError(Name, "header checksum mismatch (the file is corrupt)");
  }

  SectionRef Funcs, Consts, Code, Data, Names, ConstNames, Lines;
  ByteReader T(P + kHeaderSize, TableEnd - kHeaderSize, Name + ": section table");
  for (uint32_t I = 0; I < NumSections; ++I) {
    uint32_t Kind = T.get<uint32_t>("section kind");
    T.get<uint32_t>("section flags");
    uint64_t Off = T.get<uint64_t>("section offset");
    uint64_t Len = T.get<uint64_t>("section size");
    uint64_t Sum = T.get<uint64_t>("section checksum");
    std::string KindName(reinterpret_cast<const char *>(&Kind), 4);
    if (Off < TableEnd || Off > Size || Len > Size - Off || Off % kAlign)
      formatError(Name, fmt::format("section {} ('{}') lies outside the file",
                                    I, KindName));
    SectionRef *S = Kind == kSectionFunctions    ? &Funcs
                    : Kind == kSectionConstants  ? &Consts
                    : Kind == kSectionCode       ? &Code
                    : Kind == kSectionData       ? &Data
                    : Kind == kSectionNames      ? &Names
                    : Kind == kSectionConstNames ? &ConstNames
                    : Kind == kSectionSourceMap  ? &Lines
                                                 : nullptr;
    if (!S)
      formatError(Name, fmt::format("unknown section '{}'", KindName));
    if (S->Present)
      formatError(Name, fmt::format("section '{}' appears twice", KindName));
    *S = {P + Off, Len, true};
    bool Check = Kind != kSectionData || Opts.VerifyTensorData;
    if (Check && XXH3_64bits(P + Off, Len) != Sum)
      formatError(Name, fmt::format("section '{}' checksum mismatch (the file "
                                    "is corrupt)",
                                    KindName));
  }
  checkPaddingIsZero(P, Size, TableEnd,
                     {Funcs, Consts, Code, Data, Names, ConstNames, Lines},
                     Name);
  for (auto [S, K] : {std::pair{&Funcs, "FUNC"}, std::pair{&Consts, "CNST"},
                      std::pair{&Code, "CODE"}, std::pair{&Data, "DATA"}})
    if (!S->Present)
      formatError(Name, fmt::format("section '{}' is missing", K));

  auto Fns = readFunctions(ByteReader(Funcs.Data, Funcs.Size,
                                      Name + ": function table"));
  auto Cs = readConstants(ByteReader(Consts.Data, Consts.Size,
                                     Name + ": constant pool"),
                          Data, Image);
  auto Words = readCode(ByteReader(Code.Data, Code.Size, Name + ": code"));
  std::shared_ptr<Executable> Exe;
  try {
    Exe = Executable::create(std::move(Fns), std::move(Cs), std::move(Words));
    verifyExecutable(*Exe, Opts.Limits);
    if (Names.Present)
      Exe->setDebugNames(readNames(
          ByteReader(Names.Data, Names.Size, "debug names"), *Exe));
    if (ConstNames.Present)
      Exe->setConstantNames(readConstNames(
          ByteReader(ConstNames.Data, ConstNames.Size, "constant names"),
          *Exe));
    if (Lines.Present)
      Exe->setSourceMap(
          readSourceMap(ByteReader(Lines.Data, Lines.Size,
                                   "section 'LINE' (source positions)"),
                        *Exe));
  } catch (const Error &E) {
    throwError(E.kind(), Name + ": " + E.message());
  }
  return Exe;
}

} // namespace

bool hasBinaryMagic(std::span<const char> Bytes) noexcept {
  return Bytes.size() >= sizeof(binfmt::kMagic) &&
         std::memcmp(Bytes.data(), binfmt::kMagic, sizeof(binfmt::kMagic)) ==
             0;
}

std::shared_ptr<Executable> loadExecutable(const std::string &Path,
                                           const LoadOptions &Opts) {
  int Fd = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    throwError("IOError",
               fmt::format("cannot open '{}': {}", Path, std::strerror(errno)));
  struct stat St;
  if (::fstat(Fd, &St) != 0 || !S_ISREG(St.st_mode)) {
    int Err = errno;
    ::close(Fd);
    throwError("IOError", fmt::format("cannot read '{}': {}", Path,
                                      S_ISDIR(St.st_mode) ? "is a directory"
                                                          : std::strerror(Err)));
  }
  size_t Size = static_cast<size_t>(St.st_size);
  if (Size == 0) {
    ::close(Fd);
    formatError(Path, "the file is empty");
  }
  if (St.st_size > Opts.MaxFileBytes) {
    ::close(Fd);
    formatError(Path, fmt::format("the file is {} bytes, over the limit of {}",
                                  St.st_size, Opts.MaxFileBytes));
  }
  // Private and writable: a kernel writing into a constant gets its own
  // copy of the page instead of a fault, and the file is never changed.
  void *Map = ::mmap(nullptr, Size, PROT_READ | PROT_WRITE, MAP_PRIVATE, Fd, 0);
  int Err = errno;
  ::close(Fd);
  if (Map == MAP_FAILED)
    throwError("IOError",
               fmt::format("cannot map '{}': {}", Path, std::strerror(Err)));
  ObjectRef Image(makeObject<ImageObj>(Map, Size, /*Mapped=*/true));
  std::span<const char> Bytes(static_cast<const char *>(Map), Size);
  // TVM's format (tvm_format.h) copies what it keeps: the mapping goes
  // when this returns.
  if (hasTvmMagic(Bytes))
    return loadTvmExecutableFromBytes(Bytes, Path, Opts);
  return parseImage(Bytes.data(), Size, Image, Path, Opts);
}

std::shared_ptr<Executable> loadExecutableFromBytes(std::span<const char> Bytes,
                                                    const std::string &Name,
                                                    const LoadOptions &Opts) {
  if (Bytes.size() > static_cast<uint64_t>(Opts.MaxFileBytes))
    formatError(Name, fmt::format("the file is {} bytes, over the limit of {}",
                                  Bytes.size(), Opts.MaxFileBytes));
  if (hasTvmMagic(Bytes))
    return loadTvmExecutableFromBytes(Bytes, Name, Opts);
  size_t Rounded = binfmt::alignUp(std::max<size_t>(Bytes.size(), 1));
  void *Mem = std::aligned_alloc(binfmt::kAlign, Rounded);
  if (!Mem)
    throwError("MemoryError",
               fmt::format("{}: cannot allocate {} bytes", Name, Bytes.size()));
  ObjectRef Image(makeObject<ImageObj>(Mem, Bytes.size(), /*Mapped=*/false));
  if (!Bytes.empty())
    std::memcpy(Mem, Bytes.data(), Bytes.size());
  return parseImage(static_cast<const char *>(Mem), Bytes.size(), Image, Name,
                    Opts);
}

} // namespace vmjit::vm
