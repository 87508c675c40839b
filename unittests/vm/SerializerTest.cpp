// Tests the binary format: round trips of every constant kind, tensors used
// in place from the mapping, and bad input (every truncation, every byte
// flip, wrong magic and version, counts and sizes beyond the file).
#include "vmjit/bytecode/builder.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits>
#include <xxhash.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

namespace {

/// A program with one constant of every kind, a packed and a native
/// function, and a loop.
std::shared_ptr<Executable> sampleProgram() {
  ExecutableBuilder B;
  B.addConstant(Any());
  B.addConstant(Any(int64_t(-42)));
  B.addConstant(Any(std::numeric_limits<double>::quiet_NaN()));
  B.addConstant(Any(-0.0));
  B.addConstant(Any(true));
  B.addConstant(Any(std::string("short")));
  B.addConstant(Any(std::string("a string longer than seven bytes\n\"")));
  B.addConstant(Any(dtype::BFloat16));
  B.addConstant(Any(Shape(std::vector<int64_t>{})));
  B.addConstant(Any(Shape{2, 0, 7}));
  Tensor T = Tensor::empty({2, 3}, dtype::Float32);
  for (int I = 0; I < 6; ++I)
    T.data<float>()[I] = 0.1f * I;
  B.addConstant(Any(T));
  Tensor I64 = Tensor::empty({3}, dtype::Int64);
  for (int I = 0; I < 3; ++I)
    I64.data<int64_t>()[I] = -I;
  B.addConstant(Any(I64));
  B.addConstant(Any(Tensor::empty({0}, dtype::Float32)));
  int64_t Add = B.declarePacked("scalar.add");
  B.declareNative("native.fn");
  FunctionBuilder &F = B.beginFunction("main", {"n"});
  Label Top = F.newLabel();
  F.bind(Top);
  F.emitCall(0, Add, {Arg::reg(0), Arg::imm(-1), Arg::constant(1)});
  F.emitIf(0, Top);
  F.emitRet(0);
  B.endFunction();
  return B.finish();
}

std::string tempPath(const std::string &Name) {
  return (std::filesystem::temp_directory_path() /
          ("vmjit-serializer-" + std::to_string(::getpid()) + "-" + Name))
      .string();
}

std::string loadError(const std::string &Image, LoadOptions Opts = {}) {
  try {
    loadExecutableFromBytes(Image, "img.bin", Opts);
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "ok";
}

template <typename T> T readAt(const std::string &S, size_t Off) {
  T V;
  std::memcpy(&V, S.data() + Off, sizeof(T));
  return V;
}
template <typename T> void writeAt(std::string &S, size_t Off, T V) {
  std::memcpy(S.data() + Off, &V, sizeof(T));
}

/// Recomputes every section checksum and the header checksum, so that a
/// test can forge a file that gets past the checksums.
void fixChecksums(std::string &S) {
  uint32_t N = readAt<uint32_t>(S, 12);
  for (uint32_t I = 0; I < N; ++I) {
    size_t E = 64 + 32 * I;
    uint64_t Off = readAt<uint64_t>(S, E + 8), Len = readAt<uint64_t>(S, E + 16);
    if (Off <= S.size() && Len <= S.size() - Off) // forged sizes stay forged
      writeAt<uint64_t>(S, E + 24, XXH3_64bits(S.data() + Off, Len));
  }
  writeAt<uint64_t>(S, 24, 0);
  writeAt<uint64_t>(S, 24, XXH3_64bits(S.data(), 64 + 32 * N));
}

/// Offset of the section with this four-character kind.
size_t sectionOffset(const std::string &S, const char *Kind) {
  uint32_t N = readAt<uint32_t>(S, 12);
  for (uint32_t I = 0; I < N; ++I)
    if (std::memcmp(S.data() + 64 + 32 * I, Kind, 4) == 0)
      return readAt<uint64_t>(S, 64 + 32 * I + 8);
  return 0;
}

} // namespace

TEST(SerializerTest, RoundTripsEveryConstantKind) {
  auto Exe = sampleProgram();
  std::string Image = serializeExecutable(*Exe);
  EXPECT_EQ(Image.size() % 64, 0u);
  auto Back = loadExecutableFromBytes(Image, "mem");
  EXPECT_TRUE(Back->equals(*Exe));
  // NaN and -0.0 keep their bits.
  EXPECT_TRUE(std::isnan(Back->constants()[2].cast<double>()));
  EXPECT_TRUE(std::signbit(Back->constants()[3].cast<double>()));
  EXPECT_EQ(Back->constants()[5].typeIndex(), kVMJITSmallStr);
  EXPECT_EQ(Back->constants()[6].typeIndex(), kVMJITStr);
  EXPECT_EQ(Back->constants()[7].cast<DLDataType>(), dtype::BFloat16);
  EXPECT_EQ(Back->constants()[9].cast<Shape>().size(), 3u);
  EXPECT_EQ(Back->function(1).Kind, FunctionKind::Native);
  // Serializing the loaded executable gives the same bytes.
  EXPECT_EQ(serializeExecutable(*Back), Image);
}

TEST(SerializerTest, FileTensorsAreMappedAlignedAndKeepTheMappingAlive) {
  auto Exe = sampleProgram();
  std::string Path = tempPath("map.bin");
  saveExecutable(*Exe, Path);
  Tensor T;
  {
    auto Back = loadExecutable(Path);
    EXPECT_TRUE(Back->equals(*Exe));
    T = Back->constants()[10].cast<Tensor>();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(T.data()) % 64, 0u);
  }
  std::remove(Path.c_str());
  // The executable and the file are gone; the tensor still reads.
  EXPECT_FLOAT_EQ(T.data<float>()[5], 0.5f);
  // Writing into a constant does not fault (the mapping is private).
  T.data<float>()[0] = 3.0f;
  EXPECT_EQ(T.data<float>()[0], 3.0f);
}

TEST(SerializerTest, EveryTruncationIsRejected) {
  std::string Image = serializeExecutable(*sampleProgram());
  for (size_t Len = 0; Len < Image.size(); ++Len) {
    std::string Err = loadError(Image.substr(0, Len));
    ASSERT_THAT(Err, HasSubstr("FormatError: img.bin: ")) << "length " << Len;
  }
}

TEST(SerializerTest, EveryByteFlipIsRejected) {
  std::string Image = serializeExecutable(*sampleProgram());
  for (size_t I = 0; I < Image.size(); ++I) {
    std::string Bad = Image;
    Bad[I] ^= 0x5a;
    std::string Err = loadError(Bad);
    ASSERT_THAT(Err, HasSubstr("Error: img.bin: ")) << "byte " << I;
  }
}

/// A program with register and label names (from vmasm text).
std::shared_ptr<Executable> namedProgram() {
  return assemble(".func main(n)\n  %acc = call scalar.add(%n, 1)\n"
                  "top:\n  if %acc else top\n  ret %acc\n.end\n",
                  "named.vmasm");
}

TEST(SerializerTest, DebugNamesRoundTripInTheirOwnSection) {
  auto Exe = namedProgram();
  int64_t Main = *Exe->findFunction("main");
  ASSERT_NE(Exe->debugNames(Main), nullptr);
  std::string Image = serializeExecutable(*Exe);
  ASSERT_NE(sectionOffset(Image, "NAME"), 0u);
  auto Back = loadExecutableFromBytes(Image, "img.bin");
  ASSERT_NE(Back->debugNames(Main), nullptr);
  EXPECT_EQ(*Back->debugNames(Main), *Exe->debugNames(Main));
  EXPECT_EQ(serializeExecutable(*Back), Image);
  // Without names, no section at all: files from the builder are as before.
  EXPECT_EQ(sectionOffset(serializeExecutable(*sampleProgram()), "NAME"), 0u);
}

TEST(SerializerTest, TwoLabelsAtOneInstructionKeepTheFirstName) {
  // Found by vmjit-fuzz-assembler: the second name made the NAME section's
  // list not increasing, and the file did not load.
  auto Exe = assemble(R"(
.func main(n)
  %sum = call vm.builtin.copy(0)
head:
done:
  goto +0
  ret %sum
.end
)",
                      "labels.vmasm");
  int64_t Main = *Exe->findFunction("main");
  ASSERT_NE(Exe->debugNames(Main), nullptr);
  ASSERT_EQ(Exe->debugNames(Main)->Labels.size(), 1u);
  EXPECT_EQ(Exe->debugNames(Main)->Labels[0].second, "head");
  auto Back = loadExecutableFromBytes(serializeExecutable(*Exe), "l.bin");
  EXPECT_EQ(*Back->debugNames(Main), *Exe->debugNames(Main));
}

TEST(SerializerTest, ForgedDebugNamesAreRejected) {
  std::string Image = serializeExecutable(*namedProgram());
  const size_t Names = sectionOffset(Image, "NAME");
  // u64 count, u64 function, u64 register count, u32 register, u32 length,
  // "n", then "acc".
  auto Forge = [&](size_t Off, auto V) {
    std::string Bad = Image;
    writeAt(Bad, Names + Off, V);
    fixChecksums(Bad);
    return loadError(Bad);
  };
  EXPECT_THAT(Forge(8, uint64_t(7)),
              HasSubstr("debug names: entry 0 names function 7, which is not "
                        "the next bytecode function"));
  EXPECT_THAT(Forge(16, uint64_t(1) << 40),
              HasSubstr("named register count"));
  EXPECT_THAT(Forge(24, uint32_t(99)), HasSubstr("register 99 is out of order "
                                                 "or range"));
  EXPECT_THAT(Forge(32, char('m')),
              HasSubstr("'m' is not a name vmasm can give there"));
  for (size_t I = Names; I < Image.size(); ++I) {
    std::string Bad = Image;
    Bad[I] ^= 0x5a;
    ASSERT_THAT(loadError(Bad), HasSubstr("Error: img.bin: ")) << "byte " << I;
  }
}

/// Constants named, unnamed and named by index.
std::shared_ptr<Executable> namedConstants() {
  return assemble(".const $eps = float 1.5\n.const $1 = int 7\n"
                  ".const $scale = int 3\n"
                  ".func main()\n  %r = call scalar.add($eps, $1)\n"
                  "  %s = call scalar.mul(%r, $scale)\n  ret %s\n.end\n",
                  "consts.vmasm");
}

TEST(SerializerTest, ConstantNamesRoundTripInTheirOwnSection) {
  auto Exe = namedConstants();
  ASSERT_NE(Exe->constantName(0), nullptr);
  EXPECT_EQ(*Exe->constantName(0), "eps");
  EXPECT_EQ(Exe->constantName(1), nullptr);
  std::string Image = serializeExecutable(*Exe);
  ASSERT_NE(sectionOffset(Image, "CNAM"), 0u);
  auto Back = loadExecutableFromBytes(Image, "img.bin");
  ASSERT_NE(Back->constantName(2), nullptr);
  EXPECT_EQ(*Back->constantName(2), "scale");
  EXPECT_EQ(Back->constantName(1), nullptr);
  EXPECT_EQ(serializeExecutable(*Back), Image);
  EXPECT_EQ(sectionOffset(serializeExecutable(*sampleProgram()), "CNAM"), 0u);
}

TEST(SerializerTest, ForgedConstantNamesAreRejected) {
  std::string Image = serializeExecutable(*namedConstants());
  const size_t Names = sectionOffset(Image, "CNAM");
  // u64 count, u32 length, "eps", u32 length (0), u32 length, "scale".
  auto Forge = [&](size_t Off, auto V) {
    std::string Bad = Image;
    writeAt(Bad, Names + Off, V);
    fixChecksums(Bad);
    return loadError(Bad);
  };
  EXPECT_THAT(Forge(0, uint64_t(2)),
              HasSubstr("constant names: 2 names for 3 constants"));
  EXPECT_THAT(Forge(12, char('-')),
              HasSubstr("constant 0: '-ps' is not a name vmasm can give it"));
  EXPECT_THAT(Forge(4, uint32_t(9)), HasSubstr("constant names"));
}

/// An error two calls deep, with a label and indentation: the positions
/// are where each instruction's text begins.
std::shared_ptr<Executable> withSourcePositions() {
  return assemble(".func inner(a)\n  %r = call scalar.div(%a, 0)\n"
                  "  ret %r\n.end\n\n.func main(x)\nentry:\n"
                  "    %r = call inner(%x)\n  ret %r\n.end\n",
                  "dir/lines.vmasm");
}

TEST(SerializerTest, SourcePositionsRoundTripInTheirOwnSection) {
  auto Exe = withSourcePositions();
  const SourceMap *M = Exe->sourceMap();
  ASSERT_NE(M, nullptr);
  EXPECT_EQ(M->File, "dir/lines.vmasm");
  const int64_t Main = Exe->function(*Exe->findFunction("main")).StartInstr;
  const int64_t Inner = Exe->function(*Exe->findFunction("inner")).StartInstr;
  ASSERT_EQ(M->Instrs.size(), 4u);
  EXPECT_EQ(*Exe->sourcePos(Inner), (SourcePos{2, 3}));
  EXPECT_EQ(*Exe->sourcePos(Inner + 1), (SourcePos{3, 3}));
  EXPECT_EQ(*Exe->sourcePos(Main), (SourcePos{8, 5}));
  EXPECT_EQ(*Exe->sourcePos(Main + 1), (SourcePos{9, 3}));
  EXPECT_EQ(Exe->sourcePos(4), nullptr);
  EXPECT_EQ(Exe->sourcePos(-1), nullptr);

  std::string Image = serializeExecutable(*Exe);
  ASSERT_NE(sectionOffset(Image, "LINE"), 0u);
  auto Back = loadExecutableFromBytes(Image, "img.bin");
  ASSERT_NE(Back->sourceMap(), nullptr);
  EXPECT_EQ(*Back->sourceMap(), *M);
  EXPECT_EQ(serializeExecutable(*Back), Image);
  // They change nothing a program does: not compared, and without them
  // there is no LINE section (nor in a program from the builder).
  Back->setSourceMap({});
  EXPECT_EQ(Back->sourceMap(), nullptr);
  EXPECT_TRUE(Back->equals(*Exe));
  EXPECT_EQ(sectionOffset(serializeExecutable(*Back), "LINE"), 0u);
  EXPECT_EQ(sectionOffset(serializeExecutable(*sampleProgram()), "LINE"), 0u);
  EXPECT_EQ(sampleProgram()->sourceMap(), nullptr);
}

TEST(SerializerTest, ForgedSourcePositionsAreRejected) {
  std::string Image = serializeExecutable(*withSourcePositions());
  const size_t Lines = sectionOffset(Image, "LINE");
  // u32 length, "dir/lines.vmasm" (15 bytes), u64 count at 19, then u32
  // line and u32 column per instruction from byte 27.
  auto Forge = [&](size_t Off, auto V) {
    std::string Bad = Image;
    writeAt(Bad, Lines + Off, V);
    fixChecksums(Bad);
    return loadError(Bad);
  };
  ASSERT_EQ(Forge(27, uint32_t(2)), "ok");
  EXPECT_EQ(Forge(19, uint64_t(3)),
            "FormatError: img.bin: section 'LINE' (source positions): 3 "
            "positions for 4 instructions");
  EXPECT_THAT(Forge(19, uint64_t(5)),
              HasSubstr("section 'LINE' (source positions): position count 5 "
                        "is larger than the section can hold"));
  EXPECT_THAT(Forge(27, uint32_t(0)),
              HasSubstr("section 'LINE' (source positions): instruction 0 (at "
                        "byte 27): line 0, column 3 is not a position in the "
                        "text"));
  EXPECT_THAT(Forge(39, uint32_t(0x80000000)),
              HasSubstr("instruction 1 (at byte 35): line 3, column "
                        "2147483648 is not a position"));
  EXPECT_THAT(Forge(7, char('\n')),
              HasSubstr("section 'LINE' (source positions): the file name (at "
                        "byte 0) is empty or holds a control character"));
  EXPECT_THAT(Forge(0, uint32_t(0)),
              HasSubstr("the file name (at byte 0) is empty"));
  EXPECT_THAT(Forge(0, uint32_t(1000)),
              HasSubstr("section 'LINE' (source positions): truncated while "
                        "reading file name"));
  // A column alone is unknown as well: the line only.
  std::string LineOnly = Image;
  writeAt(LineOnly, Lines + 31, uint32_t(0));
  fixChecksums(LineOnly);
  EXPECT_EQ(loadError(LineOnly), "ok");
  EXPECT_EQ(*loadExecutableFromBytes(LineOnly, "img.bin")->sourcePos(0),
            (SourcePos{2, 0}));
}

TEST(SerializerTest, TensorDataChecksumCanBeSkipped) {
  std::string Image = serializeExecutable(*sampleProgram());
  size_t Data = sectionOffset(Image, "DATA");
  Image[Data] ^= 1;
  EXPECT_THAT(loadError(Image),
              HasSubstr("section 'DATA' checksum mismatch"));
  LoadOptions Fast;
  Fast.VerifyTensorData = false;
  EXPECT_EQ(loadError(Image, Fast), "ok");
}

TEST(SerializerTest, HeaderErrors) {
  std::string Image = serializeExecutable(*sampleProgram());
  std::string Magic = Image;
  Magic[0] = 'X';
  EXPECT_EQ(loadError(Magic),
            "FormatError: img.bin: not a vmjit executable (bad magic)");
  std::string Version = Image;
  writeAt<uint32_t>(Version, 8, 99);
  EXPECT_EQ(loadError(Version),
            "FormatError: img.bin: format version 99 is not supported (this "
            "build reads version 1)");
  EXPECT_THAT(loadError(""), HasSubstr("0 bytes is too short"));
  std::string Sections = Image;
  writeAt<uint32_t>(Sections, 12, 0x7fffffff);
  EXPECT_THAT(loadError(Sections), HasSubstr("section count 2147483647 does "
                                             "not fit the file"));
}

TEST(SerializerTest, ForgedSizesAndCountsAreRejected) {
  std::string Image = serializeExecutable(*sampleProgram());
  // A section claiming to run past the end of the file.
  std::string Big = Image;
  writeAt<uint64_t>(Big, 64 + 16, uint64_t(1) << 62);
  fixChecksums(Big);
  EXPECT_THAT(loadError(Big), HasSubstr("section 0 ('FUNC') lies outside the "
                                        "file"));
  // A function count far larger than the section.
  std::string Count = Image;
  writeAt<uint64_t>(Count, sectionOffset(Count, "FUNC"), uint64_t(1) << 60);
  fixChecksums(Count);
  EXPECT_THAT(loadError(Count),
              HasSubstr("function count 1152921504606846976 is larger than "
                        "the section can hold"));
  // A constant count likewise.
  std::string Consts = Image;
  writeAt<uint64_t>(Consts, sectionOffset(Consts, "CNST"), ~uint64_t(0));
  fixChecksums(Consts);
  EXPECT_THAT(loadError(Consts), HasSubstr("constant count"));
  // A code word count likewise.
  std::string Code = Image;
  writeAt<uint64_t>(Code, sectionOffset(Code, "CODE"), uint64_t(1) << 61);
  fixChecksums(Code);
  EXPECT_THAT(loadError(Code), HasSubstr("code word count"));
}

TEST(SerializerTest, VerifierRunsOnLoad) {
  auto Exe = sampleProgram();
  std::string Image = serializeExecutable(*Exe);
  // Point the call at a register beyond the register file.
  size_t Code = sectionOffset(Image, "CODE");
  writeAt<int64_t>(Image, Code + 8 + 8, 99); // word 1: the call's dst
  fixChecksums(Image);
  EXPECT_EQ(loadError(Image),
            "VerifyError: img.bin: function 'main', instruction 0 (call "
            "'scalar.add'): writes register %99, but the register file has 1 "
            "registers");
}

TEST(SerializerTest, MissingFileIsAnIOError) {
  try {
    loadExecutable("/nonexistent/prog.bin");
    FAIL();
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "IOError");
    EXPECT_THAT(E.message(), HasSubstr("cannot open '/nonexistent/prog.bin'"));
  }
}

TEST(SerializerTest, FileSizeAndVerifierLimitsApplyOnLoad) {
  std::string Image = serializeExecutable(*sampleProgram());
  LoadOptions Small;
  Small.MaxFileBytes = static_cast<int64_t>(Image.size()) - 1;
  try {
    loadExecutableFromBytes(Image, "small.bin", Small);
    FAIL() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "FormatError");
    EXPECT_THAT(E.message(), ::testing::HasSubstr("small.bin"));
    EXPECT_THAT(E.message(), ::testing::HasSubstr("over the limit of"));
  }
  auto Path = std::filesystem::temp_directory_path() /
              ("vmjit-limit-" + std::to_string(::getpid()) + ".bin");
  saveExecutable(*sampleProgram(), Path.string());
  EXPECT_THROW(loadExecutable(Path.string(), Small), Error);
  LoadOptions Exact;
  Exact.MaxFileBytes = static_cast<int64_t>(Image.size());
  EXPECT_NO_THROW(loadExecutable(Path.string(), Exact));
  LoadOptions FewFunctions;
  FewFunctions.Limits.MaxFunctions = 0;
  try {
    loadExecutable(Path.string(), FewFunctions);
    FAIL() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "VerifyError");
    EXPECT_THAT(E.message(), ::testing::HasSubstr("over the limit of 0"));
  }
  std::filesystem::remove(Path);
}
