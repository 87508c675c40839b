//===- DTypeFormatsTest.cpp - Every TVM data type through every format ----===//
//
// DataType and tensor constants of the types TVM names beyond NumPy's
// (int4, uint1, the float8/float6/float4 formats, vector lanes, void)
// through TVM's format, vmjit's own, and vmasm; tensors of them keep their
// exact bytes, and kernels that cannot compute on them say so when called.
//
//===----------------------------------------------------------------------===//

#include "vmjit/bytecode/builder.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/text/disassembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstring>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

namespace {

/// Every type TVM's DLDataTypeToString names, with that name.
const std::pair<DLDataType, const char *> kTvmTypes[] = {
    {dtype::make(kDLInt, 1), "int1"},
    {dtype::make(kDLInt, 2), "int2"},
    {dtype::make(kDLInt, 4), "int4"},
    {dtype::make(kDLUInt, 1), "uint1"},
    {dtype::make(kDLUInt, 4), "uint4"},
    {dtype::make(kDLInt, 12), "int12"},
    {dtype::make(kDLFloat8_e3m4, 8), "float8_e3m4"},
    {dtype::make(kDLFloat8_e4m3, 8), "float8_e4m3"},
    {dtype::make(kDLFloat8_e4m3b11fnuz, 8), "float8_e4m3b11fnuz"},
    {dtype::make(kDLFloat8_e4m3fn, 8), "float8_e4m3fn"},
    {dtype::make(kDLFloat8_e4m3fnuz, 8), "float8_e4m3fnuz"},
    {dtype::make(kDLFloat8_e5m2, 8), "float8_e5m2"},
    {dtype::make(kDLFloat8_e5m2fnuz, 8), "float8_e5m2fnuz"},
    {dtype::make(kDLFloat8_e8m0fnu, 8), "float8_e8m0fnu"},
    {dtype::make(kDLFloat6_e2m3fn, 6), "float6_e2m3fn"},
    {dtype::make(kDLFloat6_e3m2fn, 6), "float6_e3m2fn"},
    {dtype::make(kDLFloat4_e2m1fn, 4), "float4_e2m1fn"},
    {dtype::BFloat16, "bfloat16"},
    {DLDataType{kDLFloat, 32, 2}, "float32x2"},
    {DLDataType{kDLInt, 8, 4}, "int8x4"},
    {DLDataType{kDLFloat8_e4m3fn, 8, 4}, "float8_e4m3fnx4"},
    {DLDataType{kDLBool, 8, 4}, "boolx4"},
    {DLDataType{kDLFloat, 32, uint16_t(-4)}, "float32xvscalex4"},
    {DLDataType{kDLOpaqueHandle, 64, 1}, "handle"},
    {dtype::Void, "void"},
    {dtype::Float32, "float32"},
    {dtype::Bool, "bool"},
};

/// Builds a TVM-format image field by field.
struct Image {
  template <typename T> Image &put(T V) {
    Buf.append(reinterpret_cast<const char *>(&V), sizeof(T));
    return *this;
  }
  Image &str(std::string_view S) {
    put<uint64_t>(S.size());
    Buf.append(S);
    return *this;
  }
  /// Header and `main(x) { ret x }`, then the constant count.
  Image &start(uint64_t NumConstants) {
    put<uint64_t>(tvmfmt::kMagic).str("0.14").put<uint64_t>(1);
    put<int32_t>(1).str("main").put<int64_t>(0).put<int64_t>(1);
    put<int64_t>(1).put<int64_t>(1).put<uint64_t>(1).str("x");
    return put<uint64_t>(0).put<uint64_t>(NumConstants);
  }
  Image &tensor(DLDataType T, std::vector<int64_t> Dims,
                std::string_view Data) {
    put<int32_t>(tvmfmt::kTensor).put<uint64_t>(tvmfmt::kTensorMagic);
    put<uint64_t>(0).put<int32_t>(kDLCPU).put<int32_t>(0);
    put<int32_t>(static_cast<int32_t>(Dims.size())).put(T);
    for (int64_t D : Dims)
      put(D);
    put<int64_t>(static_cast<int64_t>(Data.size()));
    Buf.append(Data);
    return *this;
  }
  Image &code() {
    put<uint64_t>(1).put<int64_t>(0);                        // offsets
    return put<uint64_t>(2).put<int64_t>(2).put<int64_t>(0); // ret %0
  }
  std::string Buf;
};

std::string errorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "ok";
}

std::string bytesOf(const Tensor &T) {
  return std::string(static_cast<const char *>(T.data()), T.nbytes());
}

/// The executable through vmasm, vmjit's format and TVM's format: each
/// gives back an equal one.
void expectRoundTrips(const Executable &Exe) {
  std::string Text = disassemble(Exe);
  EXPECT_TRUE(assemble(Text, "d.vmasm")->equals(Exe)) << Text;
  EXPECT_TRUE(
      loadExecutableFromBytes(serializeExecutable(Exe), "e.bin")->equals(Exe));
  EXPECT_TRUE(loadExecutableFromBytes(serializeTvmExecutable(Exe), "e.tvmexec")
                  ->equals(Exe));
}

} // namespace

TEST(DTypeFormatsTest, EveryTvmDTypeConstantLoadsSavesAndPrints) {
  Image I;
  I.start(std::size(kTvmTypes));
  for (const auto &[T, Name] : kTvmTypes)
    I.put<int32_t>(tvmfmt::kDataType).put(T);
  I.code();
  auto Exe = loadExecutableFromBytes(I.Buf, "t.tvmexec");
  ASSERT_EQ(Exe->constants().size(), std::size(kTvmTypes));
  for (size_t K = 0; K < std::size(kTvmTypes); ++K)
    EXPECT_EQ(Exe->constants()[K].cast<DLDataType>(), kTvmTypes[K].first)
        << kTvmTypes[K].second;
  // TVM's format back, byte for byte; vmasm by TVM's names.
  EXPECT_EQ(serializeTvmExecutable(*Exe), I.Buf);
  std::string Text = disassemble(*Exe);
  for (const auto &[T, Name] : kTvmTypes)
    EXPECT_THAT(Text, HasSubstr(std::string("= dtype ") + Name + "\n"));
  expectRoundTrips(*Exe);
}

TEST(DTypeFormatsTest, UnnamedDTypeConstantsAreRefusedAtLoad) {
  // float8_e4m3fn with 16 bits, int0, no lanes: no name reads back as
  // them.
  for (DLDataType T : {DLDataType{kDLFloat8_e4m3fn, 16, 1},
                       DLDataType{kDLInt, 0, 1}, DLDataType{kDLInt, 8, 0}}) {
    Image I;
    I.start(1).put<int32_t>(tvmfmt::kDataType).put(T).code();
    EXPECT_THAT(errorOf([&] { loadExecutableFromBytes(I.Buf, "t.tvmexec"); }),
                HasSubstr("is not supported"));
  }
}

TEST(DTypeFormatsTest, Int4TensorKeepsTvmBytes) {
  // int4 [3]: packed, 2 bytes of data (0x21: elements 1 and 2; 0x03:
  // element 3); TVM records 3 * ((4 + 7) / 8) = 3 bytes, the last one what
  // its writer read past the data.
  Image I;
  I.start(1).tensor(dtype::Int4, {3}, std::string("\x21\x03\xab", 3)).code();
  auto Exe = loadExecutableFromBytes(I.Buf, "t.tvmexec");
  Tensor T = Exe->constants()[0].cast<Tensor>();
  EXPECT_EQ(T.dtype(), dtype::Int4);
  EXPECT_EQ(T.nbytes(), 2u);
  EXPECT_EQ(bytesOf(T), std::string("\x21\x03", 2));
  ASSERT_NE(Exe->tvmTensorTail(0), nullptr);
  EXPECT_EQ(*Exe->tvmTensorTail(0), "\xab");
  EXPECT_EQ(serializeTvmExecutable(*Exe), I.Buf);

  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, HasSubstr("= tensor int4 [3] hex \"2103\"\n"));
  expectRoundTrips(*Exe);
  // Without the TVM file, the byte after the data is written as zero.
  std::string Again = serializeTvmExecutable(*assemble(Text, "d.vmasm"));
  std::string Expected = I.Buf;
  Expected[Expected.size() - 8 * 5 - 1] = '\0';
  EXPECT_EQ(Again, Expected);
  // vmjit's own format stores the 2 packed bytes.
  auto Bin = loadExecutableFromBytes(serializeExecutable(*Exe), "t.bin");
  EXPECT_EQ(bytesOf(Bin->constants()[0].cast<Tensor>()),
            std::string("\x21\x03", 2));
}

TEST(DTypeFormatsTest, Float8AndFloat4TensorsKeepTheirBytes) {
  Image I;
  I.start(3);
  I.tensor(dtype::Float8E4M3FN, {2, 2}, "\x38\x40\xc0\x7e");
  I.tensor(dtype::Float8E5M2, {0}, "");
  // float4_e2m1fn [5]: 3 packed bytes, 5 recorded.
  I.tensor(dtype::Float4E2M1FN, {5}, std::string("\x12\x34\x05\x00\x00", 5));
  I.code();
  auto Exe = loadExecutableFromBytes(I.Buf, "t.tvmexec");
  EXPECT_EQ(bytesOf(Exe->constants()[0].cast<Tensor>()), "\x38\x40\xc0\x7e");
  EXPECT_EQ(Exe->constants()[1].cast<Tensor>().nbytes(), 0u);
  EXPECT_EQ(bytesOf(Exe->constants()[2].cast<Tensor>()),
            std::string("\x12\x34\x05", 3));
  EXPECT_EQ(serializeTvmExecutable(*Exe), I.Buf);
  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, HasSubstr("tensor float8_e4m3fn [2, 2] hex \"3840c07e\""));
  EXPECT_THAT(Text, HasSubstr("tensor float8_e5m2 [0] hex \"\""));
  EXPECT_THAT(Text, HasSubstr("tensor float4_e2m1fn [5] hex \"123405\""));
  expectRoundTrips(*Exe);
  // Here the bytes after the float4 data were zeros: vmasm gives the very
  // same TVM file back.
  EXPECT_EQ(serializeTvmExecutable(*assemble(Text, "d.vmasm")), I.Buf);
}

TEST(DTypeFormatsTest, VectorTensorsAsTvmSavesThem) {
  // float32x2 [2] is 16 bytes in memory; TVM's writer records and writes
  // 2 * 4 = 8 (the lanes are not counted), the rest loads as zeros.
  Image I;
  const float Data[4] = {1, 2, 3, 4};
  I.start(2)
      .tensor(DLDataType{kDLFloat, 32, 2}, {2},
              std::string_view(reinterpret_cast<const char *>(Data), 8))
      .tensor(DLDataType{kDLInt, 8, 4}, {1}, "\x05");
  I.code();
  auto Exe = loadExecutableFromBytes(I.Buf, "t.tvmexec");
  Tensor T = Exe->constants()[0].cast<Tensor>();
  ASSERT_EQ(T.nbytes(), 16u);
  EXPECT_EQ(T.data<float>()[0], 1.0f);
  EXPECT_EQ(T.data<float>()[1], 2.0f);
  EXPECT_EQ(T.data<float>()[2], 0.0f);
  EXPECT_EQ(T.data<float>()[3], 0.0f);
  EXPECT_EQ(bytesOf(Exe->constants()[1].cast<Tensor>()),
            std::string("\x05\0\0\0", 4));
  EXPECT_EQ(serializeTvmExecutable(*Exe), I.Buf);
  EXPECT_THAT(disassemble(*Exe),
              HasSubstr("tensor int8x4 [1] hex \"05000000\""));
  expectRoundTrips(*Exe);

  // A vector tensor whose bytes TVM's writer would drop is refused.
  auto Full = assemble(".const $v = tensor int8x4 [1] hex \"05000001\"\n"
                       ".func main(x)\n  ret %x\n.end\n",
                       "v.vmasm");
  EXPECT_EQ(errorOf([&] { serializeTvmExecutable(*Full); }),
            "ValueError: constant 0 is a int8x4 tensor of 4 bytes, of which "
            "TVM's format keeps the first 1 (TVM's writer does not count the "
            "lanes), and the others are not all zero");
}

TEST(DTypeFormatsTest, TensorSizeErrorsNameWhatTvmSaves) {
  Image I;
  I.start(1).tensor(dtype::Int4, {3}, "\x21\x03").code();
  EXPECT_THAT(errorOf([&] { loadExecutableFromBytes(I.Buf, "t.tvmexec"); }),
              HasSubstr("constant 0 (a tensor): the data size is 2 bytes, "
                        "but TVM saves 3 for a int4 tensor of shape [3]"));
  Image J;
  J.start(1).tensor(dtype::Void, {1}, "").code();
  EXPECT_THAT(errorOf([&] { loadExecutableFromBytes(J.Buf, "t.tvmexec"); }),
              HasSubstr("element type void (code 3, 0 bits, 0 lanes) is not "
                        "one a tensor can have"));
}

TEST(DTypeFormatsTest, VmasmHexTensors) {
  auto Exe = assemble(R"(
.const $a = tensor uint1 [10] hex "FF03"
.const $b = tensor float6_e2m3fn [4] hex "0a0b0c"
.const $c = tensor float32 [1] hex "0000803f"
.func main(x)
  ret %x
.end
)",
                      "h.vmasm");
  Tensor A = Exe->constants()[0].cast<Tensor>();
  EXPECT_EQ(bytesOf(A), "\xff\x03");
  EXPECT_EQ(Exe->constants()[1].cast<Tensor>().nbytes(), 3u);
  EXPECT_EQ(Exe->constants()[2].cast<Tensor>().data<float>()[0], 1.0f);
  // The NumPy types are written back with values, the others with bytes.
  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, HasSubstr("tensor uint1 [10] hex \"ff03\""));
  EXPECT_THAT(Text, HasSubstr("tensor float32 [1] [1]\n"));
  expectRoundTrips(*Exe);

  auto AsmError = [](std::string_view Const) {
    return errorOf([&] {
      assemble(std::string(".const $a = ") + std::string(Const) +
                   "\n.func main(x)\n  ret %x\n.end\n",
               "e.vmasm");
    });
  };
  EXPECT_EQ(AsmError("tensor int4 [3] hex \"21\""),
            "ParseError: e.vmasm:1:33: error: tensor int4 [3] has 2 bytes (4 "
            "hex digits), not 1");
  EXPECT_EQ(AsmError("tensor int4 [3] hex \"2g03\""),
            "ParseError: e.vmasm:1:33: error: expected pairs of hex digits "
            "(the tensor's bytes)");
  EXPECT_EQ(AsmError("tensor int4 [3] [1, 2, 3]"),
            "ParseError: e.vmasm:1:29: error: a int4 tensor is written as hex "
            "\"...\" (its bytes); values and npy files are for bool, "
            "int8..int64, uint8..uint64, float16, bfloat16, float32 and "
            "float64");
  EXPECT_EQ(AsmError("tensor void [1] hex \"\""),
            "ParseError: e.vmasm:1:20: error: a tensor cannot have elements "
            "of dtype void");
  EXPECT_EQ(AsmError("dtype float8_e4m3fnuzz"),
            "ParseError: e.vmasm:1:19: error: unknown dtype "
            "'float8_e4m3fnuzz'");
}

TEST(DTypeFormatsTest, KernelsRefuseWhenCalledNotAtLoad) {
  // Loads (and verifies) fine; the kernel names the dtype when it runs.
  auto VM = VirtualMachine::create(assemble(R"(
.const $f8 = tensor float8_e4m3fn [2] hex "3840"
.const $i4 = tensor int4 [2] hex "21"
.const $v = tensor float32x2 [1] hex "0000803f00000040"
.const $size = shape [64]
.const $u8 = dtype uint8
.const $shape = shape [4]
.const $f4 = dtype float4_e2m1fn
.func f8()
  %r = call tensor.add($f8, $f8)
  ret %r
.end
.func i4()
  %r = call tensor.transpose($i4)
  ret %r
.end
.func v()
  %r = call tensor.exp($v)
  ret %r
.end
.func alloc()
  %s = call vm.builtin.alloc_storage(%vm, $size, 0, $u8)
  %t = call vm.builtin.alloc_tensor(%s, 0, $shape, $f4)
  ret %t
.end
)",
                                            "k.vmasm"));
  EXPECT_THAT(errorOf([&] { VM->call("f8"); }),
              HasSubstr("tensor.add: dtype float8_e4m3fn is not supported"));
  EXPECT_THAT(errorOf([&] { VM->call("i4"); }),
              HasSubstr("tensor.transpose: argument 1 has dtype int4; dtypes "
                        "packed several to a byte are not supported"));
  EXPECT_THAT(errorOf([&] { VM->call("v"); }),
              HasSubstr("tensor.exp: argument 1 has dtype float32x2; vector "
                        "dtypes are not supported"));
  EXPECT_THAT(errorOf([&] { VM->call("alloc"); }),
              HasSubstr("cannot allocate a tensor of element type "
                        "float4_e2m1fn"));
}
