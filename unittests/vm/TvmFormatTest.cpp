// Tests Apache TVM's VMExecutable format (tvm_format.h): every fixture TVM
// wrote loads and re-saves to the same bytes; every program in the tree
// goes vmjit -> TVM format -> vmjit unchanged (or gets the writer's clear
// error); truncations, byte changes and forged fields are clean errors; the
// loader's normalisations (packed fields, missing parameter names, code
// order, VMTIR entries, memory scopes) hold.
#include "vmjit/bytecode/builder.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/text/disassembler.h"
#include "vmjit/vm/program.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <iterator>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

const fs::path FixtureDir = VMJIT_TVM_FIXTURES;

std::string readFile(const fs::path &P) {
  std::ifstream In(P, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(In), {});
}

std::vector<fs::path> fixtures() {
  std::vector<fs::path> Files;
  for (const auto &E : fs::directory_iterator(FixtureDir))
    if (E.path().extension() == ".tvmexec")
      Files.push_back(E.path());
  std::sort(Files.begin(), Files.end());
  return Files;
}

#define SKIP_WITHOUT_FIXTURES()                                                \
  do {                                                                         \
    if (!fs::is_directory(FixtureDir))                                         \
      GTEST_SKIP() << "no TVM fixtures at " << FixtureDir;                     \
  } while (0)

std::shared_ptr<Executable> loadBytes(const std::string &Image,
                                      const std::string &Name = "t.tvmexec") {
  return loadExecutableFromBytes(Image, Name);
}

/// "Kind: message", or "ok" if `Image` loads.
std::string loadError(const std::string &Image) {
  try {
    loadBytes(Image);
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "ok";
}

/// Builds TVM-format images field by field, for forged files.
class Image {
public:
  template <typename T> Image &put(T V) {
    Buf.append(reinterpret_cast<const char *>(&V), sizeof(T));
    return *this;
  }
  Image &str(std::string_view S) {
    put<uint64_t>(S.size());
    Buf.append(S);
    return *this;
  }
  Image &header(uint64_t Magic = tvmfmt::kMagic) {
    put<uint64_t>(Magic);
    return str("0.14");
  }
  Image &func(int32_t Kind, std::string_view Name, int64_t Start, int64_t End,
              int64_t NumArgs, int64_t Regs,
              std::vector<std::string> Params = {}) {
    put<int32_t>(Kind).str(Name).put(Start).put(End).put(NumArgs).put(Regs);
    put<uint64_t>(Params.size());
    for (const auto &P : Params)
      str(P);
    return *this;
  }
  Image &words(const std::vector<int64_t> &Offsets,
               const std::vector<int64_t> &Words) {
    put<uint64_t>(Offsets.size());
    for (int64_t O : Offsets)
      put(O);
    put<uint64_t>(Words.size());
    for (int64_t W : Words)
      put(W);
    return *this;
  }
  std::string Buf;
};

constexpr int64_t kCall = 1, kRet = 2;
int64_t regArg(int64_t R) { return Arg::reg(R).word(); }

/// main(x) { ret x }: the smallest VM program, as TVM writes it.
std::string retImage(std::vector<std::string> Params = {"x"}) {
  Image I;
  I.header().put<uint64_t>(1).func(1, "main", 0, 1, 1, 1, Params);
  I.put<uint64_t>(0).put<uint64_t>(0); // memory scopes, constants
  I.words({0}, {kRet, 0});
  return I.Buf;
}

} // namespace

TEST(TvmFormatTest, EveryFixtureLoadsAndSavesToTheSameBytes) {
  SKIP_WITHOUT_FIXTURES();
  std::vector<fs::path> Files = fixtures();
  EXPECT_GE(Files.size(), 16u);
  for (const fs::path &F : Files) {
    SCOPED_TRACE(F.string());
    std::string Bytes = readFile(F);
    ASSERT_TRUE(hasTvmMagic(Bytes));
    std::shared_ptr<Executable> Exe;
    ASSERT_NO_THROW(Exe = loadExecutable(F.string()));
    EXPECT_EQ(serializeTvmExecutable(*Exe), Bytes);
    // From memory, and through loadProgram's content detection.
    EXPECT_TRUE(loadBytes(Bytes)->equals(*Exe));
    EXPECT_EQ(detectProgramFormat(F.string()), ProgramFormat::Tvm);
    EXPECT_TRUE(loadProgram(F.string())->equals(*Exe));
    // vmjit's own format and vmasm hold it too.
    EXPECT_TRUE(loadExecutableFromBytes(serializeExecutable(*Exe), "b")
                    ->equals(*Exe));
    std::string Text = disassemble(*Exe);
    EXPECT_TRUE(assemble(Text, "dis.vmasm")->equals(*Exe)) << Text;
  }
}

TEST(TvmFormatTest, FixtureContents) {
  SKIP_WITHOUT_FIXTURES();
  auto Consts = loadExecutable((FixtureDir / "const_int_float_dtype.tvmexec")
                                   .string());
  ASSERT_EQ(Consts->constants().size(), 4u);
  EXPECT_EQ(Consts->constants()[0].cast<int64_t>(), 42);
  EXPECT_EQ(Consts->constants()[1].cast<double>(), 0.5);
  EXPECT_EQ(Consts->constants()[2].cast<DLDataType>(), dtype::Float32);
  EXPECT_EQ(Consts->constants()[3].cast<Shape>().size(), 0u);

  // A tensor constant is copied out of the unaligned file into aligned
  // memory.
  auto Rank0 =
      loadExecutable((FixtureDir / "const_rank0_tensor.tvmexec").string());
  Tensor T = Rank0->constants()[0].cast<Tensor>();
  EXPECT_EQ(T.ndim(), 0);
  EXPECT_EQ(T.dtype(), dtype::Float32);
  EXPECT_EQ(T.data<float>()[0], 2.5f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(T.data()) % kTensorAlignment, 0u);

  auto Dps =
      loadExecutable((FixtureDir / "dps_alloc_with_scope.tvmexec").string());
  ASSERT_EQ(Dps->functions().size(), 4u);
  const FunctionInfo &Main = Dps->function(0);
  EXPECT_EQ(Main.Kind, FunctionKind::Bytecode);
  EXPECT_EQ(Main.Name, "main");
  EXPECT_EQ(Main.ParamNames, std::vector<std::string>{"x"});
  EXPECT_EQ(Main.RegisterFileSize, 3);
  EXPECT_EQ(Main.numInstrs(), 4);
  EXPECT_EQ(Dps->function(1).Kind, FunctionKind::Packed);
  EXPECT_EQ(Dps->function(1).Name, "vm.builtin.alloc_storage");
  EXPECT_EQ(Dps->constants()[3].cast<std::string>(), "global");
  EXPECT_EQ(Dps->instr(0).callNumArgs(), 5);

  // -2^55 as a raw immediate word, as TVM ran it.
  auto Imm = loadExecutable((FixtureDir / "imm_extremes.tvmexec").string());
  EXPECT_EQ(Imm->instr(0).callArg(2).value(), Arg::kMinValue);
}

TEST(TvmFormatTest, EveryTruncationOfEveryFixtureIsAFormatError) {
  SKIP_WITHOUT_FIXTURES();
  for (const fs::path &F : fixtures()) {
    std::string Bytes = readFile(F);
    for (size_t Len = 0; Len < Bytes.size(); ++Len) {
      std::string Err = loadError(Bytes.substr(0, Len));
      // Under 8 bytes there is no TVM magic: the vmjit loader's error.
      ASSERT_THAT(Err, HasSubstr("FormatError: t.tvmexec: "))
          << F << " cut to " << Len << " bytes";
      if (Len >= 8) {
        ASSERT_THAT(Err, HasSubstr(": offset ")) << F << " " << Len;
      }
    }
  }
}

TEST(TvmFormatTest, EverySingleByteChangeIsCleanOrLoadsAValidProgram) {
  SKIP_WITHOUT_FIXTURES();
  // Every value of every byte of a fixture with a VM function, packed
  // functions, shape, dtype and string constants and 5-argument calls;
  // every bit flip of one with a tensor.
  const std::vector<int> AllValues = [] {
    std::vector<int> V;
    for (int X = 1; X < 256; ++X)
      V.push_back(X);
    return V;
  }();
  const std::vector<int> Bits = {1, 2, 4, 8, 16, 32, 64, 128};
  for (auto [Name, Masks] :
       {std::pair{"dps_alloc_with_scope.tvmexec", &AllValues},
        std::pair{"const_rank0_tensor.tvmexec", &Bits}}) {
    std::string Bytes = readFile(FixtureDir / Name);
    size_t Loaded = 0, Rejected = 0;
    for (size_t I = 0; I < Bytes.size(); ++I) {
      for (int V : *Masks) {
        std::string Bad = Bytes;
        Bad[I] = static_cast<char>(Bad[I] ^ V);
        std::shared_ptr<Executable> Exe;
        try {
          Exe = loadBytes(Bad);
        } catch (const Error &E) {
          ASSERT_TRUE(E.kind() == "FormatError" || E.kind() == "VerifyError")
              << E.format() << " (byte " << I << " ^ " << V << ")";
          ASSERT_THAT(E.message(), HasSubstr("t.tvmexec: "));
          ++Rejected;
          continue;
        }
        // What loads is a valid program: it saves and loads back equal.
        ++Loaded;
        auto Back = loadBytes(serializeTvmExecutable(*Exe));
        ASSERT_TRUE(Back->equals(*Exe)) << "byte " << I << " ^ " << V;
      }
    }
    EXPECT_GT(Loaded, 0u) << Name;
    EXPECT_GT(Rejected, Loaded) << Name;
  }
}

TEST(TvmFormatTest, HeaderErrorsNameOffsetAndField) {
  std::string Good = retImage();
  ASSERT_EQ(loadError(Good), "ok");
  std::string Version = Good;
  Version[16 + 2] = '5'; // "0.54"
  EXPECT_EQ(loadError(Version),
            "FormatError: t.tvmexec: offset 8: version \"0.54\" is not "
            "supported (TVM's VM executable format is version \"0.14\")");
  Image Long;
  Long.put<uint64_t>(tvmfmt::kMagic).put<uint64_t>(1000).put<uint32_t>(0);
  EXPECT_EQ(loadError(Long.Buf),
            "FormatError: t.tvmexec: offset 8: version string length 1000 is "
            "more than the 4 bytes left can hold");
  Image Funcs;
  Funcs.header().put<uint64_t>(uint64_t(1) << 60);
  EXPECT_EQ(loadError(Funcs.Buf),
            "FormatError: t.tvmexec: offset 20: function count "
            "1152921504606846976 is more than the 0 bytes left can hold");
  std::string Trailing = Good + "xyz";
  EXPECT_THAT(loadError(Trailing),
              HasSubstr(": 3 bytes after the instruction words, where the "
                        "file should end"));
}

TEST(TvmFormatTest, FunctionTableErrors) {
  Image Kind;
  Kind.header().put<uint64_t>(1).func(7, "f", 0, 0, 0, 0);
  Kind.put<uint64_t>(0).put<uint64_t>(0).words({}, {});
  EXPECT_EQ(loadError(Kind.Buf),
            "FormatError: t.tvmexec: offset 28: function 0 has kind 7, not 0 "
            "(packed), 1 (VM) or 2 (VMTIR)");
  Image Names;
  Names.header().put<uint64_t>(1).func(1, "main", 0, 1, 2, 2, {"x"});
  Names.put<uint64_t>(0).put<uint64_t>(0).words({0}, {kRet, 0});
  EXPECT_THAT(loadError(Names.Buf),
              HasSubstr("function 0 ('main') has 2 parameters but 1 "
                        "parameter names"));
  Image Neg;
  Neg.header().put<uint64_t>(1).func(2, "tir", 0, 0, -2, 0);
  Neg.put<uint64_t>(0).put<uint64_t>(0).words({}, {});
  EXPECT_THAT(loadError(Neg.Buf),
              HasSubstr("offset 59: function 0 ('tir') has -2 parameters "
                        "(the register limit is 65536)"));
  Image Regs;
  Regs.header().put<uint64_t>(1).func(2, "tir", 0, 0, 2, 1, {"a", "b"});
  Regs.put<uint64_t>(0).put<uint64_t>(0).words({}, {});
  EXPECT_THAT(loadError(Regs.Buf),
              HasSubstr("offset 67: function 0 ('tir'): a register file of "
                        "1 registers cannot hold its 2 parameters"));
  Image Twice;
  Twice.header().put<uint64_t>(2).func(0, "f", 0, 0, 0, 0).func(0, "f", 0, 0,
                                                                0, 0);
  Twice.put<uint64_t>(0).put<uint64_t>(0).words({}, {});
  EXPECT_EQ(loadError(Twice.Buf),
            "FormatError: t.tvmexec: offset 85: function 1 is called 'f', as "
            "function 0 is");
  // Names made up for unnamed parameters have a budget: a few bytes of
  // file cannot make millions of them.
  Image Unnamed;
  Unnamed.header().put<uint64_t>(2).func(2, "f", 0, 0, 40000, 40000).func(
      2, "g", 0, 0, 40000, 40000);
  Unnamed.put<uint64_t>(0).put<uint64_t>(0).words({}, {});
  EXPECT_THAT(loadError(Unnamed.Buf),
              HasSubstr("offset 126: function 1 ('g') has no parameter names, "
                        "and the file leaves more than 65536 parameters "
                        "unnamed"));
  // The verifier runs: a register read past the register file.
  Image Verify;
  Verify.header().put<uint64_t>(1).func(1, "main", 0, 1, 1, 1, {"x"});
  Verify.put<uint64_t>(0).put<uint64_t>(0).words({0}, {kRet, 5});
  EXPECT_EQ(loadError(Verify.Buf),
            "VerifyError: t.tvmexec: function 'main', instruction 0: returns "
            "register %5, but the register file has 1 registers");
}

TEST(TvmFormatTest, ConstantErrors) {
  auto WithConst = [](auto Fill) {
    Image I;
    I.header().put<uint64_t>(0).put<uint64_t>(0).put<uint64_t>(1);
    Fill(I);
    I.words({}, {});
    return loadError(I.Buf);
  };
  // Constants start at offset 20 + 8 (functions) + 8 (scopes) + 8.
  EXPECT_EQ(WithConst([](Image &I) { I.put<int32_t>(2).put<int64_t>(1); }),
            "FormatError: t.tvmexec: offset 44: constant 0 has type index 2, "
            "which TVM's constant pool does not hold (1 int, 3 float, 5 "
            "dtype, 65 string, 69 shape, 70 tensor)");
  EXPECT_EQ(WithConst([](Image &I) {
              I.put<int32_t>(70).put<uint64_t>(0x1234).put<uint64_t>(0);
            }),
            "FormatError: t.tvmexec: offset 48: constant 0 (a tensor): magic "
            "0x0000000000001234 is not TVM's tensor magic 0xdd5e40f096b4a13f");
  auto Tensor = [](int32_t Dev, int32_t NDim, DLDataType T,
                   std::vector<int64_t> Dims, int64_t NBytes) {
    return [=](Image &I) {
      I.put<int32_t>(70).put<uint64_t>(tvmfmt::kTensorMagic).put<uint64_t>(0);
      I.put<int32_t>(Dev).put<int32_t>(0).put<int32_t>(NDim).put(T);
      for (int64_t D : Dims)
        I.put(D);
      I.put(NBytes);
      I.Buf.append(std::max<int64_t>(NBytes, 0), '\0');
    };
  };
  EXPECT_THAT(WithConst(Tensor(2, 1, dtype::Float32, {1}, 4)),
              HasSubstr("offset 64: constant 0 (a tensor): device (2, 0) is "
                        "not the CPU (1, 0)"));
  EXPECT_THAT(WithConst(Tensor(1, 1, DLDataType{kDLOpaqueHandle, 64, 1},
                               {1}, 8)),
              HasSubstr("offset 76: constant 0 (a tensor): element type "
                        "handle (code 3, 64 bits, 1 lanes) is not one a "
                        "tensor can have"));
  EXPECT_THAT(WithConst(Tensor(1, 2, dtype::Float32, {2, 3}, 20)),
              HasSubstr("offset 96: constant 0 (a tensor): the data size is "
                        "20 bytes, but TVM saves 24 for a float32 tensor of "
                        "shape [2, 3]"));
  EXPECT_THAT(WithConst(Tensor(1, 1, dtype::Float32, {-1}, 0)),
              HasSubstr("offset 80: constant 0 (a tensor): dimension 0 is -1"));
  EXPECT_THAT(WithConst(Tensor(1, 3, dtype::Float64,
                               {int64_t(1) << 40, int64_t(1) << 40, 1 << 20},
                               0)),
              HasSubstr("shape [1099511627776, 1099511627776, 1048576] has "
                        "too many elements"));
  EXPECT_THAT(WithConst(Tensor(1, 1 << 30, dtype::Float32, {}, 0)),
              HasSubstr("offset 72: constant 0 (a tensor): ndim 1073741824 "
                        "does not fit"));
  EXPECT_THAT(WithConst([](Image &I) {
                I.put<int32_t>(69).put<uint64_t>(uint64_t(1) << 61);
              }),
              HasSubstr("offset 48: constant 0 (a shape) rank "
                        "2305843009213693952 is more than the 16 bytes left "
                        "can hold"));
  EXPECT_THAT(WithConst([](Image &I) {
                I.put<int32_t>(5).put(DLDataType{200, 7, 1});
              }),
              HasSubstr("offset 48: constant 0: data type (code 200, 7 bits, "
                        "1 lanes) is not supported"));
}

TEST(TvmFormatTest, CodeErrors) {
  auto WithCode = [](std::vector<int64_t> Offsets, std::vector<int64_t> W) {
    Image I;
    I.header().put<uint64_t>(1).func(1, "main", 0, 1, 1, 1, {"x"});
    I.put<uint64_t>(0).put<uint64_t>(0).words(Offsets, W);
    return loadError(I.Buf);
  };
  // The function entry ends at 28 + 65 = 93; the scope and constant
  // counts take 16 bytes; the offset count 8: offsets from 117.
  EXPECT_EQ(WithCode({1}, {kRet, 0}),
            "FormatError: t.tvmexec: offset 117: instruction 0 is recorded at "
            "word 1, but the instructions before it end at word 0");
  EXPECT_EQ(WithCode({0}, {9, 0}),
            "FormatError: t.tvmexec: offset 133: instruction 0 has opcode 9, "
            "not 1 (call), 2 (ret), 3 (goto) or 4 (if)");
  EXPECT_EQ(WithCode({0}, {kRet, 0, kRet}),
            "FormatError: t.tvmexec: offset 149: 1 instruction words after "
            "the last of the 1 instructions");
  EXPECT_EQ(WithCode({0}, {kCall, 0, 0, 5, 0}),
            "FormatError: t.tvmexec: offset 157: instruction 0 (a call) has 5 "
            "arguments, more than the words left");
  EXPECT_EQ(WithCode({0, 2}, {kRet, 0}),
            "FormatError: t.tvmexec: offset 125: instruction 1 starts at word "
            "2, past the 2 instruction words");
}

TEST(TvmFormatTest, MemoryScopes) {
  // The older magic has no memory-scope section; the newer one's scopes
  // are checked and dropped.
  Image Old;
  Old.header(tvmfmt::kMagicNoMemoryScopes)
      .put<uint64_t>(1)
      .func(1, "main", 0, 1, 1, 1, {"x"});
  Old.put<uint64_t>(1).put<int32_t>(1).put<int64_t>(7); // one int constant
  Old.words({0}, {kRet, 0});
  auto Exe = loadBytes(Old.Buf);
  EXPECT_EQ(Exe->constants()[0].cast<int64_t>(), 7);
  // Written back with the newer magic and an empty scope section.
  std::string Saved = serializeTvmExecutable(*Exe);
  EXPECT_EQ(Saved.substr(0, 8), Image().put(tvmfmt::kMagic).Buf);
  EXPECT_TRUE(loadBytes(Saved)->equals(*Exe));

  auto WithScope = [](int64_t Index) {
    Image I;
    I.header().put<uint64_t>(0);
    I.put<uint64_t>(1).put<int64_t>(Index).str("global.texture");
    I.put<uint64_t>(1).put<int32_t>(1).put<int64_t>(7).words({}, {});
    return I.Buf;
  };
  EXPECT_EQ(loadBytes(WithScope(0))->constants().size(), 1u);
  EXPECT_EQ(loadError(WithScope(1)),
            "FormatError: t.tvmexec: offset 36: a memory scope names constant "
            "1, but there are 1 constants");
}

TEST(TvmFormatTest, LoaderNormalisations) {
  // TVM's compiler leaves a packed entry's num_args at -2: only the name
  // is kept. A VM function saved without parameter names gets arg0, ...
  // VM functions whose code is not in table order are laid out in order.
  Image I;
  I.header().put<uint64_t>(3);
  I.func(1, "main", 1, 3, 1, 2);        // code: instructions 1..2
  I.func(0, "scalar.neg", 0, 0, -2, 0); // packed
  I.func(1, "id", 0, 1, 1, 1, {"v"});   // code: instruction 0
  I.put<uint64_t>(0).put<uint64_t>(0);
  I.words({0, 2, 7}, {kRet, 0,                                    // id
                      kCall, 1, 1, 1, regArg(0), kRet, 1});       // main
  auto Exe = loadBytes(I.Buf);
  const FunctionInfo &Main = Exe->function(0);
  EXPECT_EQ(Main.ParamNames, std::vector<std::string>{"arg0"});
  EXPECT_EQ(Main.StartInstr, 0);
  EXPECT_EQ(Main.EndInstr, 2);
  EXPECT_EQ(Exe->function(1).NumParams, 0);
  EXPECT_EQ(Exe->function(2).StartInstr, 2);
  EXPECT_EQ(Exe->function(2).EndInstr, 3);
  EXPECT_EQ(Exe->instr(0).opcode(), Opcode::Call);
  EXPECT_EQ(Exe->instr(2).opcode(), Opcode::Ret);
  // Now in the layout the assembler makes: vmasm gives it back exactly.
  EXPECT_TRUE(assemble(disassemble(*Exe), "d.vmasm")->equals(*Exe));
}

TEST(TvmFormatTest, TheMostUnnamedParametersRoundTripThroughVmasm) {
  // 65536 parameters from 140 bytes: names made up, written, read back
  // (the assembler once compared each name with every earlier one: the
  // loader fuzzer timed out). These bytes are also in the fuzzer's
  // regressions, as unnamed-65536-parameters.tvmexec.
  Image I;
  I.header().put<uint64_t>(1).func(1, "main", 0, 1, 65536, 65536);
  I.put<uint64_t>(0).put<uint64_t>(0).words({0}, {kRet, 0});
  auto Exe = loadBytes(I.Buf);
  ASSERT_EQ(Exe->function(0).ParamNames.size(), 65536u);
  EXPECT_EQ(Exe->function(0).ParamNames.back(), "arg65535");
  EXPECT_TRUE(assemble(disassemble(*Exe), "d.vmasm")->equals(*Exe));
}

TEST(TvmFormatTest, VMTIRFunctionsAreNativeWithRegisters) {
  Image I;
  I.header().put<uint64_t>(2);
  I.func(1, "main", 0, 2, 2, 3, {"a", "b"});
  I.func(2, "fused_add", 0, 0, 2, 3, {"x", "y"});
  I.put<uint64_t>(0).put<uint64_t>(0);
  I.words({0, 6}, {kCall, 2, 1, 2, regArg(0), regArg(1), kRet, 2});
  auto Exe = loadBytes(I.Buf);
  const FunctionInfo &Tir = Exe->function(1);
  EXPECT_EQ(Tir.Kind, FunctionKind::Native);
  EXPECT_EQ(Tir.NumParams, 2);
  EXPECT_EQ(Tir.RegisterFileSize, 3);
  EXPECT_EQ(serializeTvmExecutable(*Exe), I.Buf);
  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, HasSubstr(".native fused_add(x, y) .regs 3\n"));
  EXPECT_TRUE(assemble(Text, "d.vmasm")->equals(*Exe));
}

TEST(TvmFormatTest, NamesAsTVMWritesThem) {
  // Repeated parameter names, a parameter named vm, names that are not
  // vmasm identifiers: they load, run through vmasm and save unchanged.
  Image I;
  I.header().put<uint64_t>(2);
  I.func(1, "main-v2", 0, 2, 3, 4, {"x", "x", "vm"});
  I.func(0, "my kernel;1", 0, 0, 0, 0);
  I.put<uint64_t>(0).put<uint64_t>(0);
  I.words({0, 7}, {kCall, 3, 1, 3, regArg(0), regArg(1), regArg(2), kRet, 3});
  auto Exe = loadBytes(I.Buf);
  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, HasSubstr(".func \"main-v2\"(\"x\", \"x\", \"vm\")\n"));
  EXPECT_THAT(Text, HasSubstr("%3 = call \"my kernel;1\"(%0, %1, %2)\n"));
  auto Again = assemble(Text, "d.vmasm");
  EXPECT_TRUE(Again->equals(*Exe));
  EXPECT_EQ(serializeTvmExecutable(*Again), I.Buf);
}

TEST(TvmFormatTest, WriterRejectsWhatTVMCannotHold) {
  auto WithConst = [](Any V) {
    ExecutableBuilder B;
    B.addConstant(std::move(V));
    int64_t Copy = B.declarePacked("vm.builtin.copy");
    FunctionBuilder &F = B.beginFunction("main", {});
    F.emitCall(0, Copy, {Arg::constant(0)});
    F.emitRet(0);
    B.endFunction();
    return B.finish();
  };
  auto ErrorOf = [](const Executable &E) -> std::string {
    try {
      serializeTvmExecutable(E);
    } catch (const Error &Err) {
      return Err.kind() + ": " + Err.message();
    }
    return "ok";
  };
  EXPECT_EQ(ErrorOf(*WithConst(Any(true))),
            "ValueError: constant 0 is a bool, which TVM's format cannot hold "
            "(TVM's own writer fails with \"Unsupported constant pool type "
            "bool\"); an int 0 or 1 does the same job as a condition");
  EXPECT_EQ(ErrorOf(*WithConst(Any())),
            "ValueError: constant 0 is null, which TVM's format cannot hold "
            "(TVM's own writer crashes on a null constant)");
  EXPECT_THAT(ErrorOf(*WithConst(Any(Tensor::empty(
                  {2}, DLDataType{kDLOpaqueHandle, 64, 1})))),
              HasSubstr("constant 0 is a handle tensor, which TVM's format "
                        "cannot hold"));
  EXPECT_EQ(ErrorOf(*WithConst(Any(int64_t(3)))), "ok");
}

TEST(TvmFormatTest, EveryProgramInTheTreeRoundTrips) {
  // vmjit -> TVM format -> vmjit gives an equal executable for every
  // .vmasm under examples/ and unittests/, except programs with a
  // constant TVM's format cannot hold, which get the writer's error.
  size_t RoundTripped = 0, Refused = 0;
  for (const char *Dir : {"examples", "unittests"}) {
    for (const auto &E :
         fs::recursive_directory_iterator(fs::path(VMJIT_SOURCE_ROOT) / Dir)) {
      const fs::path &P = E.path();
      if (P.extension() != ".vmasm" ||
          P.string().find("/bad/") != std::string::npos)
        continue;
      SCOPED_TRACE(P.string());
      auto Exe = assembleFile(P.string());
      bool Unwritable = false;
      for (const Any &C : Exe->constants())
        Unwritable |= C.typeIndex() == kVMJITBool ||
                      C.typeIndex() == kVMJITNone;
      std::string Image;
      try {
        Image = serializeTvmExecutable(*Exe);
      } catch (const Error &Err) {
        EXPECT_TRUE(Unwritable) << Err.format();
        EXPECT_EQ(Err.kind(), "ValueError");
        EXPECT_THAT(Err.message(), HasSubstr("which TVM's format cannot hold"));
        ++Refused;
        continue;
      }
      EXPECT_FALSE(Unwritable);
      auto Back = loadBytes(Image, P.filename().string());
      EXPECT_TRUE(Back->equals(*Exe));
      EXPECT_EQ(serializeTvmExecutable(*Back), Image);
      ++RoundTripped;
    }
  }
  EXPECT_GE(RoundTripped, 50u);
  EXPECT_GE(Refused, 1u);
}
