// Tests the vmasm disassembler: the text it writes, and that assembling it
// gives back an equal executable (asm -> dis -> asm, dis fixed point),
// bit-exactly for every constant.
#include "vmjit/text/disassembler.h"
#include "vmjit/bytecode/builder.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

constexpr const char *kInputs = VMJIT_VM_TEST_INPUTS;

std::string errorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "no error";
}

/// dis(E) reassembles to an executable equal to E, and dis of that is the
/// same text.
void expectRoundTrip(const Executable &E, const std::string &FileName) {
  std::string Text = disassemble(E);
  std::shared_ptr<Executable> Again;
  try {
    Again = assemble(Text, FileName);
  } catch (const Error &Err) {
    FAIL() << Err.kind() << ": " << Err.message() << "\n" << Text;
  }
  EXPECT_TRUE(Again->equals(E)) << Text;
  EXPECT_EQ(disassemble(*Again), Text);
}

/// An executable whose only contents are the constants `Values` (and a
/// function using the first).
std::shared_ptr<Executable> withConstants(std::vector<Any> Values) {
  ExecutableBuilder B;
  for (Any &V : Values)
    B.addConstant(std::move(V), /*Dedupe=*/false);
  int64_t Id = B.declarePacked("vm.builtin.copy");
  FunctionBuilder &F = B.beginFunction("main", {});
  F.emitCall(0, Id, {Arg::constant(0)});
  F.emitRet(0);
  B.endFunction();
  return B.finish();
}

Tensor tensorOf(DLDataType T, const void *Data, int64_t N) {
  Tensor X = Tensor::empty({N}, T);
  std::memcpy(X.data(), Data, X.nbytes());
  return X;
}

} // namespace

TEST(DisassemblerTest, EveryInputRoundTrips) {
  int Count = 0;
  for (const auto &Entry : std::filesystem::directory_iterator(kInputs)) {
    if (Entry.path().extension() != ".vmasm")
      continue;
    SCOPED_TRACE(Entry.path().string());
    ++Count;
    auto Exe = assembleFile(Entry.path().string());
    // The same directory, so that npy paths resolve alike.
    expectRoundTrip(*Exe, (Entry.path().parent_path() / "dis.vmasm").string());
  }
  EXPECT_GE(Count, 5);
}

TEST(DisassemblerTest, FibText) {
  auto Exe = assembleFile(std::string(kInputs) + "/fib.vmasm");
  // The text's register and label names come back.
  EXPECT_EQ(disassemble(*Exe), ".func fib(n)\n"
                               "  %c = call scalar.lt(%n, 2)\n"
                               "  if %c else recurse\n"
                               "  ret %n\n"
                               "recurse:\n"
                               "  %a = call scalar.sub(%n, 1)\n"
                               "  %fa = call fib(%a)\n"
                               "  %b = call scalar.sub(%n, 2)\n"
                               "  %fb = call fib(%b)\n"
                               "  %s = call scalar.add(%fa, %fb)\n"
                               "  ret %s\n"
                               ".end\n"
                               "\n"
                               ".func main(n)\n"
                               "  %r = call fib(%n)\n"
                               "  ret %r\n"
                               ".end\n"
                               "\n"
                               ".extern scalar.lt\n"
                               ".extern scalar.sub\n"
                               ".extern scalar.add\n");
  // Without debug names (a TVM file, the builder): numbers and L0, L1, ...
  Exe->setDebugNames({});
  EXPECT_EQ(disassemble(*Exe), ".func fib(n)\n"
                               "  %1 = call scalar.lt(%0, 2)\n"
                               "  if %1 else L0\n"
                               "  ret %0\n"
                               "L0:\n"
                               "  %2 = call scalar.sub(%0, 1)\n"
                               "  %3 = call fib(%2)\n"
                               "  %4 = call scalar.sub(%0, 2)\n"
                               "  %5 = call fib(%4)\n"
                               "  %6 = call scalar.add(%3, %5)\n"
                               "  ret %6\n"
                               ".end\n"
                               "\n"
                               ".func main(n)\n"
                               "  %1 = call fib(%0)\n"
                               "  ret %1\n"
                               ".end\n"
                               "\n"
                               ".extern scalar.lt\n"
                               ".extern scalar.sub\n"
                               ".extern scalar.add\n");
}

TEST(DisassemblerTest, NamesThatWouldRenumberAreNotUsed) {
  // %2 is written before %1: naming them b and a would make reassembly
  // number b first (1). Such names (a forged NAME section) are left out,
  // so the text still reassembles to the same program.
  auto Exe = assemble(".func main(x)\n  %2 = call scalar.add(%x, 1)\n"
                      "  %1 = call scalar.add(%2, 1)\n  ret %1\n.end\n",
                      "order.vmasm");
  DebugNames Forged;
  Forged.Registers = {{0, "x"}, {1, "a"}, {2, "b"}};
  std::vector<DebugNames> All(Exe->functions().size());
  All[static_cast<size_t>(*Exe->findFunction("main"))] = Forged;
  Exe->setDebugNames(All);
  std::string Text = disassemble(*Exe);
  EXPECT_NE(Text.find("%2 = call scalar.add(%0, 1)"), std::string::npos)
      << Text;
  EXPECT_TRUE(assemble(Text, "again.vmasm")->equals(*Exe));
}

TEST(DisassemblerTest, ConstantNamesAreWrittenBack) {
  auto Exe = assemble(".const $eps = float 0.5\n.const $1 = int 2\n"
                      ".func main()\n  %r = call scalar.add($eps, $1)\n"
                      "  ret %r\n.end\n",
                      "names.vmasm");
  std::string Text = disassemble(*Exe);
  EXPECT_NE(Text.find(".const $eps = float 0.5\n.const $c1 = int 2\n"),
            std::string::npos)
      << Text;
  EXPECT_NE(Text.find("call scalar.add($eps, $c1)"), std::string::npos) << Text;
  EXPECT_TRUE(assemble(Text, "again.vmasm")->equals(*Exe));
}

TEST(DisassemblerTest, AConstantNamedLikeAnotherConstantsNumberIsNotUsed) {
  // The assembler keeps no name of the form cN, and the reader refuses
  // one; given one anyway (constant 0 named c1, constant 1 unnamed),
  // writing $c1 for both would not reassemble, so every constant is $cN.
  auto Exe = assemble(".const $c1 = int 5\n.const $1 = int 2\n"
                      ".func main()\n  %r = call scalar.add($c1, $1)\n"
                      "  ret %r\n.end\n",
                      "clash.vmasm");
  EXPECT_EQ(Exe->constantName(0), nullptr);
  Exe->setConstantNames({"c1", ""});
  std::string Text = disassemble(*Exe);
  EXPECT_NE(Text.find("call scalar.add($c0, $c1)"), std::string::npos) << Text;
  EXPECT_TRUE(assemble(Text, "again.vmasm")->equals(*Exe));
}

TEST(DisassemblerTest, InstructionForms) {
  auto Exe = assemble(".const $k = str \"key\"\n"
                      ".func main(x, y)\n"
                      "top:\n"
                      "  call vm.builtin.invoke_closure(%vm, @main, $k, -7)\n"
                      "  if %x else out\n"
                      "  goto top\n"
                      "out:\n"
                      "  if %y else out\n"
                      "  ret %y\n"
                      ".end\n",
                      "forms.vmasm");
  // The forms as numbers and generated labels.
  Exe->setDebugNames({});
  Exe->setConstantNames({});
  EXPECT_EQ(disassemble(*Exe),
            ".const $c0 = str \"key\"\n"
            "\n"
            ".func main(x, y)\n"
            "L0:\n"
            "  call vm.builtin.invoke_closure(%vm, @main, $c0, -7)\n"
            "  if %0 else L1\n"
            "  goto L0\n"
            "L1:\n"
            "  if %1 else L1\n"
            "  ret %1\n"
            ".end\n"
            "\n"
            ".extern vm.builtin.invoke_closure\n");
}

TEST(DisassemblerTest, BuilderExecutableWithRegsAndNative) {
  ExecutableBuilder B;
  int64_t Fused = B.declareNative("fused.kernel");
  int64_t Add = B.declarePacked("scalar.add");
  int64_t Helper = B.declareFunction("helper", {"a", "b"});
  FunctionBuilder &M = B.beginFunction("main", {"x"});
  Label Loop = M.newLabel(), Done = M.newLabel();
  M.emitCall(3, Fused, {Arg::reg(0), Arg::imm(Arg::kMinValue)});
  M.bind(Loop);
  M.emitIf(3, Done);
  M.emitCall(3, Helper, {Arg::reg(3), Arg::func(Fused)});
  M.emitGoto(Loop);
  M.bind(Done);
  M.emitRet(3);
  M.reserveRegisters(40);
  B.endFunction();
  FunctionBuilder &H = B.beginFunction("helper", {"a", "b"});
  H.emitCall(kVoidRegister, Add, {Arg::reg(0), Arg::reg(1)});
  H.emitRet(0);
  B.endFunction();
  auto Exe = B.finish();
  ASSERT_EQ(Exe->function(*Exe->findFunction("main")).RegisterFileSize, 40);

  std::string Text = disassemble(*Exe);
  EXPECT_NE(Text.find(".native fused.kernel\n"), std::string::npos) << Text;
  EXPECT_NE(Text.find(".func main(x)\n  .regs 40\n"), std::string::npos)
      << Text;
  // helper needs exactly its two parameters: no .regs.
  EXPECT_NE(Text.find(".func helper(a, b)\n  call scalar.add(%0, %1)\n"),
            std::string::npos)
      << Text;
  expectRoundTrip(*Exe, "built.vmasm");
}

TEST(DisassemblerTest, OutOfRangeJumpsArePrintedAsOffsets) {
  // The verifier would reject these, but dis must not crash on them.
  std::vector<FunctionInfo> Fns(1);
  Fns[0].Kind = FunctionKind::Bytecode;
  Fns[0].Name = "f";
  Fns[0].StartInstr = 0;
  Fns[0].EndInstr = 2;
  Fns[0].NumParams = 1;
  Fns[0].RegisterFileSize = 1;
  Fns[0].ParamNames = {"x"};
  auto Exe = Executable::create(Fns, {}, {3, 9, 4, 0, -5});
  EXPECT_EQ(disassemble(*Exe), ".func f(x)\n"
                               "  goto +9\n"
                               "  if %0 else -5\n"
                               ".end\n");
}

TEST(DisassemblerTest, ScalarConstantsRoundTripBitExactly) {
  const double PayloadNaN = std::bit_cast<double>(0x7ff0000000000123ull);
  const double NegNaN = std::bit_cast<double>(0xfff8000000000000ull);
  auto Exe = withConstants(
      {Any(std::nan("")), Any(NegNaN), Any(PayloadNaN), Any(-0.0), Any(0.0),
       Any(1e300), Any(5e-324), Any(-INFINITY), Any(INFINITY), Any(0.1),
       Any(1.0), Any(-123456789.0), Any(1e16), Any(2.5e-7),
       Any(std::string("say \"hi\"\nline\ttab\\ \x01\x7f\xff end")),
       Any(std::string("")), Any(std::string("a;b#c")),
       Any(int64_t(INT64_MIN)), Any(int64_t(INT64_MAX)), Any(true),
       Any(false), Any(), Any(dtype::BFloat16), Any(DLDataType{kDLInt, 8, 4}),
       Any(Shape({2, -1, 0})), Any(Shape(std::vector<int64_t>{}))});
  std::string Text = disassemble(*Exe);
  EXPECT_NE(Text.find(".const $c0 = float nan\n"), std::string::npos) << Text;
  EXPECT_NE(Text.find(".const $c1 = float -nan\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c2 = float nan(0x123)\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c3 = float -0.0\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c5 = float 1e+300\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c7 = float -inf\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c10 = float 1.0\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c14 = str \"say \\\"hi\\\"\\nline\\ttab\\\\ "
                      "\\x01\\x7f\\xff end\"\n"),
            std::string::npos)
      << Text;
  EXPECT_NE(Text.find(".const $c24 = shape [2, -1, 0]\n"), std::string::npos);
  EXPECT_NE(Text.find(".const $c25 = shape []\n"), std::string::npos);
  expectRoundTrip(*Exe, "consts.vmasm");
}

TEST(DisassemblerTest, TensorConstantsRoundTripBitExactly) {
  const float F32[] = {0.1f,
                       -0.0f,
                       1e-45f,
                       3.4028235e38f,
                       -INFINITY,
                       std::bit_cast<float>(0x7f800001u),
                       std::bit_cast<float>(0xffc00000u),
                       1.0f / 3.0f,
                       16777217.0f};
  const int8_t I8[] = {-128, 127, 0};
  const uint64_t U64[] = {0, UINT64_MAX};
  const int64_t I64[] = {INT64_MIN, INT64_MAX};
  const uint8_t Bools[] = {0, 1, 2, 255};
  const double F64[] = {0.1, std::bit_cast<double>(0x7ff4000000000000ull)};
  Tensor Scalar = Tensor::empty(std::span<const int64_t>(), dtype::Float32);
  *Scalar.data<float>() = 0.1f;
  Tensor Matrix = Tensor::empty({2, 3}, dtype::Int16);
  for (int I = 0; I < 6; ++I)
    Matrix.data<int16_t>()[I] = static_cast<int16_t>(I * 1000 - 2500);
  auto Exe = withConstants({Any(tensorOf(dtype::Float32, F32, 9)),
                            Any(tensorOf(dtype::Int8, I8, 3)),
                            Any(tensorOf(dtype::UInt64, U64, 2)),
                            Any(tensorOf(dtype::Int64, I64, 2)),
                            Any(tensorOf(dtype::Bool, Bools, 4)),
                            Any(tensorOf(dtype::Float64, F64, 2)),
                            Any(Scalar), Any(Matrix),
                            Any(Tensor::empty({0, 3}, dtype::Float32))});
  std::string Text = disassemble(*Exe);
  EXPECT_NE(Text.find(".const $c0 = tensor float32 [9] [0.1, -0, 1e-45, "
                      "3.4028235e+38, -inf, nan(0x1), -nan, 0.33333334, "
                      "16777216]\n"),
            std::string::npos)
      << Text;
  EXPECT_NE(Text.find(".const $c4 = tensor bool [4] [false, true, 2, 255]\n"),
            std::string::npos)
      << Text;
  EXPECT_NE(Text.find(".const $c6 = tensor float32 [] [0.1]\n"),
            std::string::npos)
      << Text;
  EXPECT_NE(Text.find(".const $c8 = tensor float32 [0, 3] []\n"),
            std::string::npos)
      << Text;
  expectRoundTrip(*Exe, "tensors.vmasm");
}

TEST(DisassemblerTest, EveryHalfAndBFloat16BitPatternRoundTrips) {
  std::vector<uint16_t> All(65536);
  for (uint32_t I = 0; I < 65536; ++I)
    All[I] = static_cast<uint16_t>(I);
  auto Exe = withConstants({Any(tensorOf(dtype::Float16, All.data(), 65536)),
                            Any(tensorOf(dtype::BFloat16, All.data(), 65536))});
  expectRoundTrip(*Exe, "halves.vmasm");
}

TEST(DisassemblerTest, RandomFloat32AndFloat64BitPatternsRoundTrip) {
  std::mt19937_64 Rng(12345);
  std::vector<uint32_t> F32(50000);
  for (auto &V : F32)
    V = static_cast<uint32_t>(Rng());
  std::vector<uint64_t> F64(50000);
  for (auto &V : F64)
    V = Rng();
  auto Exe = withConstants(
      {Any(tensorOf(dtype::Float32, F32.data(), 50000)),
       Any(tensorOf(dtype::Float64, F64.data(), 50000)),
       Any(std::bit_cast<double>(F64[0])), Any(std::bit_cast<double>(F64[1]))});
  expectRoundTrip(*Exe, "random.vmasm");
}

TEST(DisassemblerTest, UnwritableConstantsAreErrors) {
  auto Exe = withConstants({Any(DLDevice{kDLCPU, 0})});
  EXPECT_EQ(errorOf([&] { disassemble(*Exe); }),
            "ValueError: constant 0 is a Device, which vmasm cannot write");
  auto Handles = withConstants(
      {Any(Tensor::empty({2}, DLDataType{kDLOpaqueHandle, 64, 1}))});
  EXPECT_EQ(errorOf([&] { disassemble(*Handles); }),
            "ValueError: constant 0 is a handle tensor, which vmasm cannot "
            "write");
}

TEST(DisassemblerTest, NamesThatAreNotIdentifiersAreQuoted) {
  // Written bare, these would reassemble as other names ("f" with a
  // comment, "scalar.ad" with a CR as white space) or not at all: they are
  // written as strings, and come back unchanged.
  for (std::string Name :
       {std::string("f;x"), std::string("scalar.ad\r"), std::string("1f"),
        std::string("a \"b\"\\"), std::string("\xff\x00", 2)}) {
    SCOPED_TRACE(Name);
    ExecutableBuilder B;
    int64_t K = B.declarePacked(Name);
    FunctionBuilder &F = B.beginFunction(Name + "main", {"x"});
    F.emitCall(1, K, {Arg::func(K), Arg::reg(0)});
    F.emitRet(1);
    B.endFunction();
    auto Exe = B.finish();
    std::string Text = disassemble(*Exe);
    EXPECT_EQ(Text.find(".extern " + Name + "\n"), std::string::npos) << Text;
    expectRoundTrip(*Exe, "names.vmasm");
  }
}

TEST(DisassemblerTest, ParameterNamesAreQuotedWhereBareOnesWouldNotAssemble) {
  // Repeated (TVM's parameter names are hints; the loader fuzzer found
  // `.func affine(i, i, b)`), "vm", not identifiers: quoted, names only.
  ExecutableBuilder B;
  int64_t Add = B.declarePacked("scalar.add");
  FunctionBuilder &F = B.beginFunction("affine", {"i", "i", "b", "vm", "", "p q"});
  F.emitCall(6, Add, {Arg::reg(0), Arg::reg(2)});
  F.emitRet(6);
  B.endFunction();
  auto Exe = B.finish();
  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, ::testing::HasSubstr(
                        ".func affine(\"i\", \"i\", b, \"vm\", \"\", \"p q\")\n"));
  expectRoundTrip(*Exe, "params.vmasm");
}

TEST(DisassemblerTest, NativeFunctionsWithParametersAndRegisters) {
  ExecutableBuilder B;
  B.declareNative("plain");
  B.declareNative("add", {"x", "y"}, 3);
  B.declareNative("exact", {"x"}, 1);
  B.declareNative("scratch", {}, 2);
  FunctionBuilder &F = B.beginFunction("main", {});
  F.emitCall(0, *B.lookup("add"), {Arg::imm(1), Arg::imm(2)});
  F.emitRet(0);
  B.endFunction();
  auto Exe = B.finish();
  std::string Text = disassemble(*Exe);
  EXPECT_THAT(Text, ::testing::HasSubstr(".native plain\n"
                                         ".native add(x, y) .regs 3\n"
                                         ".native exact(x)\n"
                                         ".native scratch() .regs 2\n"));
  expectRoundTrip(*Exe, "native.vmasm");
}

TEST(DisassemblerTest, NamesVmasmCannotWriteAreAnError) {
  // An empty function name (the verifier rejects one too), and a native
  // function whose parameter count and names disagree.
  FunctionInfo P;
  auto Empty = Executable::create({P}, {}, {});
  EXPECT_EQ(errorOf([&] { disassemble(*Empty); }),
            "ValueError: function table entry 0 has an empty name, which "
            "vmasm cannot write");
  FunctionInfo N;
  N.Kind = FunctionKind::Native;
  N.Name = "tir";
  N.NumParams = 2;
  N.RegisterFileSize = 3;
  auto Native = Executable::create({N}, {}, {});
  EXPECT_EQ(errorOf([&] { disassemble(*Native); }),
            "ValueError: native function 'tir' has 2 parameters, 0 parameter "
            "names and 3 registers, which vmasm cannot write");
}

TEST(DisassemblerTest, DTypesWithoutAVmasmNameAreAnError) {
  // "handle" reads back as 64 bits, one lane: a 32-bit, 4-lane handle
  // would change silently (found by the loader fuzzer).
  auto Exe = Executable::create(
      {}, {Any(DLDataType{kDLOpaqueHandle, 32, 4})}, {});
  try {
    disassemble(*Exe);
    ADD_FAILURE() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "ValueError");
    EXPECT_EQ(E.message(), "constant 0: the dtype (code 3, 32 bits, 4 lanes) "
                           "has no vmasm name");
  }
  auto Ok = Executable::create({}, {Any(DLDataType{kDLOpaqueHandle, 64, 1})},
                               {});
  EXPECT_NE(disassemble(*Ok).find("dtype handle"), std::string::npos);
}
