// Tests the vmasm assembler: the function table, constants, registers,
// labels, arguments, and the exact text of every error it reports.
#include "vmjit/text/assembler.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/disassembler.h"
#include "vmjit/vm/program.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

std::shared_ptr<Executable> asmText(std::string_view Text) {
  return assemble(Text, "prog.vmasm");
}

/// "Kind: message" of the Error `F` throws, or "no error".
std::string errorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "no error";
}

std::string asmError(std::string_view Text) {
  return errorOf([&] { asmText(Text); });
}

std::vector<std::string> names(const Executable &Exe) {
  std::vector<std::string> R;
  for (const FunctionInfo &F : Exe.functions())
    R.push_back(F.Name);
  return R;
}

const FunctionInfo &fn(const Executable &Exe, std::string_view Name) {
  auto I = Exe.findFunction(Name);
  EXPECT_TRUE(I.has_value()) << Name;
  return Exe.function(I.value_or(0));
}

/// The words of local instruction `L` of function `Name`.
std::vector<Word> words(const Executable &Exe, std::string_view Name,
                        int64_t L) {
  const FunctionInfo &F = fn(Exe, Name);
  InstrView I = Exe.instr(F.StartInstr + L);
  return std::vector<Word>(I.words(), I.words() + I.numWords());
}

uint64_t doubleBits(const Any &V) {
  return std::bit_cast<uint64_t>(V.cast<double>());
}

/// A fresh directory for files a test writes.
class TempDir {
public:
  TempDir() {
    std::string Templ =
        (std::filesystem::temp_directory_path() / "vmjit-asm-XXXXXX").string();
    Path = mkdtemp(Templ.data());
  }
  ~TempDir() {
    std::error_code Ec;
    std::filesystem::remove_all(Path, Ec);
  }
  std::string file(const std::string &Name) const {
    return (std::filesystem::path(Path) / Name).string();
  }
  std::string Path;
};

void writeFile(const std::string &Path, std::string_view Text) {
  std::ofstream(Path, std::ios::binary) << Text;
}

constexpr const char *kInputs = VMJIT_VM_TEST_INPUTS;

} // namespace

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

TEST(AssemblerTest, FibExampleFromTheSpec) {
  auto Exe = assembleFile(std::string(kInputs) + "/fib.vmasm");
  // Declared functions first, then packed callees in order of first use.
  EXPECT_EQ(names(*Exe), (std::vector<std::string>{"fib", "main", "scalar.lt",
                                                   "scalar.sub",
                                                   "scalar.add"}));
  const FunctionInfo &Fib = fn(*Exe, "fib");
  const FunctionInfo &Main = fn(*Exe, "main");
  EXPECT_EQ(Fib.Kind, FunctionKind::Bytecode);
  EXPECT_EQ(Main.Kind, FunctionKind::Bytecode);
  EXPECT_EQ(fn(*Exe, "scalar.lt").Kind, FunctionKind::Packed);
  EXPECT_EQ(fn(*Exe, "scalar.add").Kind, FunctionKind::Packed);
  EXPECT_EQ(Fib.NumParams, 1);
  EXPECT_EQ(Fib.ParamNames, std::vector<std::string>{"n"});
  EXPECT_EQ(Main.NumParams, 1);
  // fib: n=%0, c, a, fa, b, fb, s = %1..%6.
  EXPECT_EQ(Fib.RegisterFileSize, 7);
  EXPECT_EQ(Main.RegisterFileSize, 2);
  EXPECT_EQ(Fib.numInstrs(), 9);
  EXPECT_EQ(Main.numInstrs(), 2);
  EXPECT_EQ(Fib.StartInstr, 0);
  EXPECT_EQ(Main.StartInstr, 9);

  // `%a = call scalar.sub(%n, 1)`: [Call, dst %2, func 3, 2 args, ...].
  const Word Reg0 = 0;                        // kind 0, value 0
  const Word Imm1 = (int64_t(1) << 56) | 1;   // kind 1, value 1
  EXPECT_EQ(words(*Exe, "fib", 3),
            (std::vector<Word>{1, 2, 3, 2, Reg0, Imm1}));
  EXPECT_EQ(Arg::reg(0).word(), Reg0);
  EXPECT_EQ(Arg::imm(1).word(), Imm1);
  // `if %c else recurse`: recurse is 2 instructions on.
  EXPECT_EQ(words(*Exe, "fib", 1), (std::vector<Word>{4, 1, 2}));
  EXPECT_EQ(words(*Exe, "fib", 2), (std::vector<Word>{2, 0}));
  // `%fa = call fib(%a)` calls function 0.
  EXPECT_EQ(words(*Exe, "fib", 4), (std::vector<Word>{1, 3, 0, 1, 2}));
  EXPECT_EQ(words(*Exe, "main", 0), (std::vector<Word>{1, 1, 0, 1, 0}));
  EXPECT_TRUE(Exe->constants().empty());
}

TEST(AssemblerTest, AssembleFileReportsUnreadableFiles) {
  std::string E = errorOf([] { assembleFile("/nonexistent/dir/x.vmasm"); });
  EXPECT_EQ(E.rfind("IOError: cannot open '/nonexistent/dir/x.vmasm'", 0), 0u)
      << E;
}

TEST(AssemblerTest, ExternFixesTheTablePlace) {
  auto Exe = asmText(".extern b\n"
                     ".func main(x)\n"
                     "  %y = call a(%x)\n"
                     "  %z = call b(%y)\n"
                     "  %w = call c(@d)\n"
                     "  ret %z\n"
                     ".end\n"
                     ".extern c\n");
  EXPECT_EQ(names(*Exe),
            (std::vector<std::string>{"b", "main", "c", "a", "d"}));
  EXPECT_EQ(fn(*Exe, "b").Kind, FunctionKind::Packed);
  EXPECT_EQ(fn(*Exe, "d").Kind, FunctionKind::Packed);
}

TEST(AssemblerTest, ForwardReferencedFunctionAndConstant) {
  auto Exe = assembleFile(std::string(kInputs) + "/forward.vmasm");
  EXPECT_EQ(names(*Exe), (std::vector<std::string>{"scalar.mul", "main",
                                                   "square", "scalar.add"}));
  // main's first call is a bytecode call of square (index 2).
  EXPECT_EQ(words(*Exe, "main", 0), (std::vector<Word>{1, 1, 2, 1, 0}));
  EXPECT_EQ(words(*Exe, "main", 1),
            (std::vector<Word>{1, 2, 3, 2, Arg::reg(1).word(),
                               Arg::constant(0).word()}));
  ASSERT_EQ(Exe->constants().size(), 1u);
  EXPECT_EQ(Exe->constants()[0].cast<int64_t>(), 1);
}

TEST(AssemblerTest, NativeAndRegsDirectives) {
  auto Exe = assembleFile(std::string(kInputs) + "/registers.vmasm");
  EXPECT_EQ(fn(*Exe, "fused_kernel").Kind, FunctionKind::Native);
  EXPECT_EQ(Exe->function(0).Name, "fused_kernel");
  EXPECT_EQ(fn(*Exe, "main").RegisterFileSize, 12);
  // Without .regs the file would be highest register + 1.
  auto Small = asmText(".func f(a)\n  %9 = call g(%a)\n  ret %9\n.end\n");
  EXPECT_EQ(fn(*Small, "f").RegisterFileSize, 10);
  auto Params = asmText(".func f(a, b, c)\n  ret %a\n.end\n");
  EXPECT_EQ(fn(*Params, "f").RegisterFileSize, 3);
}

TEST(AssemblerTest, NativeParametersAndRegisters) {
  // TVM's VMTIR functions: parameters and a register file, no code.
  auto Exe = asmText(".native plain\n"
                     ".native empty()\n"
                     ".native add(x, \"x\") .regs 3\n"
                     ".native scratch() .regs 2\n"
                     ".native add(x, \"x\") .regs 3\n");
  const FunctionInfo &Plain = fn(*Exe, "plain");
  EXPECT_EQ(Plain.NumParams, 0);
  EXPECT_EQ(Plain.RegisterFileSize, 0);
  EXPECT_EQ(fn(*Exe, "empty").RegisterFileSize, 0);
  const FunctionInfo &Add = fn(*Exe, "add");
  EXPECT_EQ(Add.Kind, FunctionKind::Native);
  EXPECT_EQ(Add.ParamNames, (std::vector<std::string>{"x", "x"}));
  EXPECT_EQ(Add.NumParams, 2);
  EXPECT_EQ(Add.RegisterFileSize, 3);
  EXPECT_EQ(Add.StartInstr, Add.EndInstr);
  EXPECT_EQ(fn(*Exe, "scratch").RegisterFileSize, 2);
  // Without .regs the register file holds the parameters.
  EXPECT_EQ(fn(*asmText(".native f(a, b)\n"), "f").RegisterFileSize, 2);
  EXPECT_EQ(asmError(".native f(a, b) .regs 1\n"),
            "ParseError: prog.vmasm:1:23: error: '.regs 1' is smaller than the "
            "2 parameters of native function 'f'");
  EXPECT_EQ(asmError(".native f(a)\n.native f(b)\n"),
            "ParseError: prog.vmasm:2:9: error: native function 'f' is "
            "declared with other parameters or registers at line 1");
  EXPECT_EQ(asmError(".native f(a) .regs\n"),
            "ParseError: prog.vmasm:1:19: error: expected a register count "
            "after '.regs'");
}

TEST(AssemblerTest, QuotedFunctionNames) {
  // Any function name can be written as a string; an identifier written
  // as a string is the same name.
  auto Exe = asmText(".extern \"my kernel;1\"\n"
                     ".func \"main-v2\"(x)\n"
                     "  %f = call vm.builtin.copy(@\"my kernel;1\")\n"
                     "  %r = call \"my kernel;1\"(%x)\n"
                     "  %s = call \"scalar.add\"(%r, 1)\n"
                     "  %t = call scalar.add(%s, 1)\n"
                     "  %u = call \"h\\x00\\n\"()\n"
                     "  ret %t\n"
                     ".end\n");
  EXPECT_EQ(names(*Exe),
            (std::vector<std::string>{"my kernel;1", "main-v2",
                                      "vm.builtin.copy", "scalar.add",
                                      std::string("h\0\n", 3)}));
  EXPECT_EQ(Exe->instr(0).callArg(0), Arg::func(0));
  EXPECT_EQ(Exe->instr(1).callFunc(), 0);
  EXPECT_EQ(asmError(".extern \"\"\n"),
            "ParseError: prog.vmasm:1:9: error: a function name cannot be "
            "empty");
  EXPECT_EQ(asmError(".func f()\n  %r = call g(@\"\")\n  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:15: error: a function name cannot be "
            "empty");
  EXPECT_EQ(asmError(".func f()\n  %r = call g(@\"x)\n  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:16: error: unterminated string");
}

TEST(AssemblerTest, QuotedParameterNamesAreNamesOnly) {
  // A quoted parameter name goes into the function table but names no
  // register: it may repeat, be "vm" or be any string.
  auto Exe = asmText(".func affine(\"i\", \"i\", b, \"vm\", \"a b\")\n"
                     "  %r = call scalar.add(%0, %b)\n"
                     "  ret %r\n"
                     ".end\n");
  const FunctionInfo &F = fn(*Exe, "affine");
  EXPECT_EQ(F.ParamNames,
            (std::vector<std::string>{"i", "i", "b", "vm", "a b"}));
  EXPECT_EQ(F.NumParams, 5);
  EXPECT_EQ(Exe->instr(0).callArg(1), Arg::reg(2));
  EXPECT_EQ(Exe->instr(0).callDst(), 5);
  // An unquoted name binds even when a quoted one repeats it.
  auto Mixed = asmText(".func f(\"x\", x)\n  ret %x\n.end\n");
  EXPECT_EQ(Mixed->instr(0).retReg(), 1);
  EXPECT_EQ(asmError(".func f(\"x\")\n  ret %x\n.end\n"),
            "ParseError: prog.vmasm:2:7: error: '%x' is not a register name: "
            "parameter 0 is written quoted, which names no register (write "
            "%0)");
  EXPECT_EQ(asmError(".func f(1x)\n  ret %0\n.end\n"),
            "ParseError: prog.vmasm:1:9: error: expected a parameter name (an "
            "identifier or a string)");
}

//===----------------------------------------------------------------------===//
// Registers, labels, arguments
//===----------------------------------------------------------------------===//

TEST(AssemblerTest, NamedRegistersSkipExplicitNumbers) {
  auto Exe = asmText(".func f(x)\n"
                     "  %a = call g(%x)\n" // a -> 2: %1 is used below
                     "  %1 = call g(%a)\n"
                     "  %b = call g(%1)\n" // b -> 3
                     "  %c = call g(%b)\n" // c -> 5: %4 is used below
                     "  %4 = call g(%c)\n"
                     "  %d = call g(%0, %x)\n" // params by number and name
                     "  ret %d\n"              // d -> 6
                     ".end\n");
  EXPECT_EQ(words(*Exe, "f", 0), (std::vector<Word>{1, 2, 1, 1, 0}));
  EXPECT_EQ(words(*Exe, "f", 1), (std::vector<Word>{1, 1, 1, 1, 2}));
  EXPECT_EQ(words(*Exe, "f", 2), (std::vector<Word>{1, 3, 1, 1, 1}));
  EXPECT_EQ(words(*Exe, "f", 3), (std::vector<Word>{1, 5, 1, 1, 3}));
  EXPECT_EQ(words(*Exe, "f", 4), (std::vector<Word>{1, 4, 1, 1, 5}));
  EXPECT_EQ(words(*Exe, "f", 5), (std::vector<Word>{1, 6, 1, 2, 0, 0}));
  EXPECT_EQ(words(*Exe, "f", 6), (std::vector<Word>{2, 6}));
  EXPECT_EQ(fn(*Exe, "f").RegisterFileSize, 7);
}

TEST(AssemblerTest, RegisterNamesArePerFunction) {
  auto Exe = asmText(".func f(x)\n  %t = call g(%x)\n  ret %t\n.end\n"
                     ".func h(p, q, t)\n  %u = call g(%t)\n  ret %u\n.end\n");
  EXPECT_EQ(words(*Exe, "f", 0), (std::vector<Word>{1, 1, 2, 1, 0}));
  // In h, %t is the third parameter and %u the first free register.
  EXPECT_EQ(words(*Exe, "h", 0), (std::vector<Word>{1, 3, 2, 1, 2}));
}

TEST(AssemblerTest, LabelsAndRelativeOffsets) {
  auto Exe = assembleFile(std::string(kInputs) + "/loop.vmasm");
  const FunctionInfo &Main = fn(*Exe, "main");
  ASSERT_EQ(Main.numInstrs(), 9);
  // n=%0, i=%1, sum=%2, more=%3. 2: %more = ..., 3: if %more else done
  // (done = 7), 6: goto head (2), 7: goto +1.
  EXPECT_EQ(words(*Exe, "main", 3), (std::vector<Word>{4, 3, 4}));
  EXPECT_EQ(words(*Exe, "main", 6), (std::vector<Word>{3, -4}));
  EXPECT_EQ(words(*Exe, "main", 7), (std::vector<Word>{3, 1}));

  auto Rel = asmText(".func f(c)\n"
                     "top:\n"
                     "again:\n" // two labels on one instruction
                     "  if %c else +2\n"
                     "  goto -1\n"
                     "  if %c else again\n"
                     "  goto top\n"
                     ".end\n"
                     ".func g(c)\n"
                     "top:\n" // labels are per function
                     "  ret %c\n"
                     ".end\n");
  EXPECT_EQ(words(*Rel, "f", 0), (std::vector<Word>{4, 0, 2}));
  EXPECT_EQ(words(*Rel, "f", 1), (std::vector<Word>{3, -1}));
  EXPECT_EQ(words(*Rel, "f", 2), (std::vector<Word>{4, 0, -2}));
  EXPECT_EQ(words(*Rel, "f", 3), (std::vector<Word>{3, -3}));
}

TEST(AssemblerTest, VMArgumentAndVoidDestination) {
  auto Exe = asmText(".func f(c)\n"
                     "  call vm.builtin.invoke_closure(%vm, %c)\n"
                     "  ret %c\n"
                     ".end\n");
  EXPECT_EQ(words(*Exe, "f", 0),
            (std::vector<Word>{1, kVoidRegister, 1, 2, Arg::vm().word(), 0}));
  EXPECT_EQ(Arg::vm().word(), kVMRegister); // register kind is 0
  EXPECT_EQ(fn(*Exe, "f").RegisterFileSize, 1);
}

TEST(AssemblerTest, FunctionArguments) {
  auto Exe = assembleFile(std::string(kInputs) + "/closure.vmasm");
  EXPECT_EQ(names(*Exe),
            (std::vector<std::string>{"add_captured", "main", "scalar.add",
                                      "vm.builtin.make_closure",
                                      "vm.builtin.invoke_closure",
                                      "vm.builtin.make_tuple", "scalar.neg"}));
  EXPECT_EQ(words(*Exe, "main", 0),
            (std::vector<Word>{1, 1, 3, 2, Arg::func(0).word(),
                               Arg::imm(10).word()}));
  EXPECT_EQ(Arg::func(0).word(), int64_t(3) << 56);
  EXPECT_EQ(words(*Exe, "main", 2),
            (std::vector<Word>{1, 3, 5, 2, Arg::func(6).word(),
                               Arg::func(0).word()}));
}

TEST(AssemblerTest, ImmediatesAtTheLimits) {
  auto Exe = asmText(".func f()\n"
                     "  %r = call g(36028797018963967, -36028797018963968, "
                     "0x10, -0x10, +5, -0)\n"
                     "  ret %r\n"
                     ".end\n");
  std::vector<Word> W = words(*Exe, "f", 0);
  ASSERT_EQ(W.size(), 10u);
  EXPECT_EQ(Arg::fromWord(W[4]).value(), Arg::kMaxValue);
  EXPECT_EQ(Arg::fromWord(W[5]).value(), Arg::kMinValue);
  EXPECT_EQ(Arg::fromWord(W[6]).value(), 16);
  EXPECT_EQ(Arg::fromWord(W[7]).value(), -16);
  EXPECT_EQ(Arg::fromWord(W[8]).value(), 5);
  EXPECT_EQ(Arg::fromWord(W[9]).value(), 0);
  EXPECT_EQ(Arg::fromWord(W[5]).kind(), ArgKind::Immediate);
}

TEST(AssemblerTest, CommentsBlankLinesAndCRLF) {
  auto Exe = asmText("; a comment\r\n"
                     "# another\r\n"
                     "\r\n"
                     "   \t\r\n"
                     "    .func   main ( x )   ; trailing\r\n"
                     "L:# a label with a comment\r\n"
                     "%y=call   f(%x,1)#no spaces\r\n"
                     "\tret %y\r\n"
                     ".end");
  EXPECT_EQ(words(*Exe, "main", 0),
            (std::vector<Word>{1, 1, 1, 2, 0, Arg::imm(1).word()}));
  EXPECT_EQ(words(*Exe, "main", 1), (std::vector<Word>{2, 1}));
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

TEST(AssemblerTest, ConstantKinds) {
  auto Exe = assembleFile(std::string(kInputs) + "/consts.vmasm");
  const auto &C = Exe->constants();
  ASSERT_EQ(C.size(), 27u);
  EXPECT_EQ(C[0].typeIndex(), kVMJITInt);
  EXPECT_EQ(C[0].cast<int64_t>(), 42);
  EXPECT_EQ(C[1].cast<int64_t>(), INT64_MIN);
  EXPECT_EQ(C[2].cast<int64_t>(), INT64_MAX);
  EXPECT_EQ(C[3].typeIndex(), kVMJITFloat);
  EXPECT_EQ(C[3].cast<double>(), 0.5);
  EXPECT_EQ(C[4].cast<double>(), 5e-324);
  EXPECT_EQ(doubleBits(C[5]), uint64_t(1) << 63); // -0.0
  EXPECT_EQ(C[6].cast<double>(), -INFINITY);
  EXPECT_EQ(doubleBits(C[7]), 0x7ff8000000000000u);
  EXPECT_EQ(C[8].typeIndex(), kVMJITBool);
  EXPECT_EQ(C[8].cast<bool>(), true);
  EXPECT_EQ(C[9].cast<bool>(), false);
  EXPECT_EQ(C[10].cast<std::string>(),
            std::string("hello, \"world\"\n\ttab\\ \x01\xff"));
  EXPECT_EQ(C[11].cast<std::string>(), "");
  EXPECT_EQ(C[12].typeIndex(), kVMJITDataType);
  EXPECT_EQ(C[12].cast<DLDataType>(), dtype::Float32);
  EXPECT_EQ(C[13].cast<DLDataType>(), (DLDataType{kDLFloat, 32, 4}));
  EXPECT_EQ(C[14].cast<DLDataType>(), dtype::Bool);
  Shape S = C[15].cast<Shape>();
  EXPECT_EQ(std::vector<int64_t>(S.begin(), S.end()),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(C[16].cast<Shape>().size(), 0u);

  Tensor W = C[17].cast<Tensor>();
  EXPECT_EQ(W.dtype(), dtype::Float32);
  EXPECT_EQ(std::vector<int64_t>(W.shape().begin(), W.shape().end()),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(W.data<float>()[0], 0.1f);
  EXPECT_EQ(W.data<float>()[1], -2.5f);
  EXPECT_EQ(W.data<float>()[2], 1e-3f);
  EXPECT_EQ(W.data<float>()[3], 4.0f);
  Tensor Ids = C[18].cast<Tensor>();
  EXPECT_EQ(Ids.dtype(), dtype::Int64);
  EXPECT_EQ(Ids.data<int64_t>()[0], -1);
  EXPECT_EQ(Ids.data<int64_t>()[2], 16);
  Tensor U8 = C[19].cast<Tensor>();
  EXPECT_EQ(U8.data<uint8_t>()[1], 255);
  EXPECT_EQ(C[20].cast<Tensor>().data<uint64_t>()[0], UINT64_MAX);
  Tensor Mask = C[21].cast<Tensor>();
  EXPECT_EQ(Mask.dtype(), dtype::Bool);
  EXPECT_EQ(Mask.data<uint8_t>()[0], 1);
  EXPECT_EQ(Mask.data<uint8_t>()[1], 0);
  Tensor One = C[22].cast<Tensor>();
  EXPECT_EQ(One.ndim(), 0);
  EXPECT_EQ(One.data<double>()[0], 1.0);
  Tensor H = C[23].cast<Tensor>();
  EXPECT_EQ(H.dtype(), dtype::Float16);
  EXPECT_EQ(H.data<uint16_t>()[0], 0x3e00); // 1.5
  EXPECT_EQ(H.data<uint16_t>()[1], 0x8000); // -0.0
  EXPECT_EQ(H.data<uint16_t>()[2], 0x7bff); // 65504, the largest half
  Tensor BH = C[24].cast<Tensor>();
  EXPECT_EQ(BH.data<uint16_t>()[0], 0x3fc0);
  EXPECT_EQ(BH.data<uint16_t>()[1], 0xff80);
  EXPECT_EQ(C[25].cast<Tensor>().numel(), 0);
  EXPECT_TRUE(C[26].isNone());

  // $answer is pool entry 0, $3 is entry 3, $w entry 17, ...
  EXPECT_EQ(words(*Exe, "main", 0)[5], Arg::constant(0).word());
  EXPECT_EQ(words(*Exe, "main", 1)[5], Arg::constant(3).word());
  EXPECT_EQ(words(*Exe, "main", 2)[4], Arg::constant(17).word());
  EXPECT_EQ(words(*Exe, "main", 4),
            (std::vector<Word>{1, kVoidRegister, 5, 4,
                               Arg::constant(17).word(), Arg::imm(2).word(),
                               Arg::constant(12).word(),
                               Arg::constant(10).word()}));
}

TEST(AssemblerTest, ConstantsKeepOrderAndDuplicates) {
  auto Exe = asmText(".const $a = int 1\n.const $b = int 1\n"
                     ".const $2 = str \"x\"\n"
                     ".func f()\n  %r = call g($b, $0, $2)\n  ret %r\n.end\n");
  ASSERT_EQ(Exe->constants().size(), 3u);
  EXPECT_EQ(words(*Exe, "f", 0),
            (std::vector<Word>{1, 0, 1, 3, Arg::constant(1).word(),
                               Arg::constant(0).word(),
                               Arg::constant(2).word()}));
}

TEST(AssemblerTest, FloatSyntax) {
  auto Exe = asmText(".const $a = float 0x1p-3\n"
                     ".const $b = float -2e-3\n"
                     ".const $c = float 7\n"
                     ".const $d = float INF\n"
                     ".const $e = float -nan\n"
                     ".const $f = float nan(0x1)\n"
                     ".const $g = float .5\n"
                     ".const $h = float 1e+16\n"
                     ".const $t = tensor float32 [3] [nan(0x1), -nan, 3]\n"
                     ".const $u = tensor float16 [2] [5.960464477539063e-08, "
                     "nan(0x1)]\n");
  const auto &C = Exe->constants();
  EXPECT_EQ(C[0].cast<double>(), 0.125);
  EXPECT_EQ(C[1].cast<double>(), -2e-3);
  EXPECT_EQ(C[2].typeIndex(), kVMJITFloat);
  EXPECT_EQ(C[2].cast<double>(), 7.0);
  EXPECT_EQ(C[3].cast<double>(), INFINITY);
  EXPECT_EQ(doubleBits(C[4]), 0xfff8000000000000u);
  EXPECT_EQ(doubleBits(C[5]), 0x7ff0000000000001u);
  EXPECT_EQ(C[6].cast<double>(), 0.5);
  EXPECT_EQ(C[7].cast<double>(), 1e16);
  Tensor T = C[8].cast<Tensor>();
  EXPECT_EQ(T.data<uint32_t>()[0], 0x7f800001u);
  EXPECT_EQ(T.data<uint32_t>()[1], 0xffc00000u);
  Tensor U = C[9].cast<Tensor>();
  EXPECT_EQ(U.data<uint16_t>()[0], 0x0001u); // the smallest subnormal
  EXPECT_EQ(U.data<uint16_t>()[1], 0x7c01u);
}

TEST(AssemblerTest, HalfRoundingIsToNearestEven) {
  auto Exe = asmText(".const $t = tensor float16 [4] [2049, 2051, 65519, "
                     "1.00048828125]\n"
                     ".const $b = tensor bfloat16 [2] [257, 259]\n");
  Tensor T = Exe->constants()[0].cast<Tensor>();
  EXPECT_EQ(T.data<uint16_t>()[0], 0x6800); // 2049 -> 2048 (tie, even)
  EXPECT_EQ(T.data<uint16_t>()[1], 0x6802); // 2051 -> 2052 (tie, even)
  EXPECT_EQ(T.data<uint16_t>()[2], 0x7bff); // 65519 -> 65504
  EXPECT_EQ(T.data<uint16_t>()[3], 0x3c00); // 1 + 2^-11 -> 1 (tie, even)
  Tensor B = Exe->constants()[1].cast<Tensor>();
  EXPECT_EQ(B.data<uint16_t>()[0], 0x4380); // 257 -> 256
  EXPECT_EQ(B.data<uint16_t>()[1], 0x4382); // 259 -> 260
}

TEST(AssemblerTest, NpyConstants) {
  TempDir Dir;
  Tensor T = Tensor::empty({2, 3}, dtype::Float32);
  for (int I = 0; I < 6; ++I)
    T.data<float>()[I] = 0.25f * static_cast<float>(I) - 0.1f;
  writeNpy(T, Dir.file("w.npy"));
  std::string Text = ".const $w = tensor float32 [2, 3] npy \"w.npy\"\n"
                     ".func main()\n  %r = call tensor.relu($w)\n  ret %r\n"
                     ".end\n";
  // Relative to the directory of the file name.
  auto Exe = assemble(Text, Dir.file("prog.vmasm"));
  Tensor W = Exe->constants()[0].cast<Tensor>();
  EXPECT_EQ(W.dtype(), dtype::Float32);
  ASSERT_EQ(W.numel(), 6);
  EXPECT_EQ(std::memcmp(W.data(), T.data(), 24), 0);
  // And through assembleFile.
  writeFile(Dir.file("prog.vmasm"), Text);
  EXPECT_TRUE(assembleFile(Dir.file("prog.vmasm"))->equals(*Exe));
  // An absolute path is used as it is.
  auto Abs = assemble(".const $w = tensor float32 [2, 3] npy \"" +
                          Dir.file("w.npy") + "\"\n",
                      "elsewhere/prog.vmasm");
  EXPECT_EQ(std::memcmp(Abs->constants()[0].cast<Tensor>().data(), T.data(),
                        24),
            0);
}

//===----------------------------------------------------------------------===//
// Parse errors: one test per message, with the exact position.
//===----------------------------------------------------------------------===//

TEST(AssemblerErrorTest, UnknownLabel) {
  EXPECT_EQ(asmError(".func main(x)\n  goto loop\n.end\n"),
            "ParseError: prog.vmasm:2:8: error: unknown label 'loop'");
  EXPECT_EQ(asmError(".func main(x)\nloop:\n  ret %x\n.end\n"
                     ".func g(x)\n  if %x else loop\n  ret %x\n.end\n"),
            "ParseError: prog.vmasm:6:14: error: unknown label 'loop'");
}

TEST(AssemblerErrorTest, DuplicateLabel) {
  EXPECT_EQ(asmError(".func main(x)\nL:\n  ret %x\nL:\n  ret %x\n.end\n"),
            "ParseError: prog.vmasm:4:1: error: duplicate label 'L' (first "
            "defined at line 2)");
}

TEST(AssemblerErrorTest, LabelAtTheEndOfAFunction) {
  EXPECT_EQ(asmError(".func main(x)\n  ret %x\nend:\n.end\n"),
            "ParseError: prog.vmasm:3:1: error: label 'end' is not followed "
            "by an instruction in function 'main'");
}

TEST(AssemblerErrorTest, ImmediateTooLarge) {
  EXPECT_EQ(asmError(".func f()\n  %r = call f(72057594037927936)\n"
                     "  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:15: error: immediate 72057594037927936 "
            "does not fit in 56 signed bits");
  EXPECT_EQ(asmError(".func f()\n  %r = call f(1, 36028797018963968)\n"
                     "  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:18: error: immediate 36028797018963968 "
            "does not fit in 56 signed bits");
  EXPECT_EQ(asmError(".func f()\n  %r = call f(-99999999999999999999)\n"
                     "  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:15: error: immediate "
            "-99999999999999999999 does not fit in 56 signed bits");
}

TEST(AssemblerErrorTest, NonIntegerImmediate) {
  EXPECT_EQ(asmError(".func f()\n  %r = call f(1.5)\n  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:15: error: invalid immediate '1.5': "
            "immediates are integers (other values go in a .const)");
}

TEST(AssemblerErrorTest, BadEscape) {
  EXPECT_EQ(asmError(".const $s = str \"a\\qb\"\n"),
            "ParseError: prog.vmasm:1:19: error: unknown escape sequence "
            "'\\q' in a string (the escapes are \\n \\t \\\\ \\\" \\xHH)");
  EXPECT_EQ(asmError(".const $s = str \"ab\\x4\"\n"),
            "ParseError: prog.vmasm:1:20: error: '\\x' must be followed by "
            "two hex digits");
}

TEST(AssemblerErrorTest, UnterminatedString) {
  EXPECT_EQ(asmError(".const $s = str \"abc\n"),
            "ParseError: prog.vmasm:1:17: error: unterminated string");
  EXPECT_EQ(asmError(".const $s = str \"abc\\\"\n"),
            "ParseError: prog.vmasm:1:17: error: unterminated string");
}

TEST(AssemblerErrorTest, UnknownConstant) {
  EXPECT_EQ(asmError(".func f()\n  %r = call f($w)\n  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:15: error: unknown constant '$w'");
}

TEST(AssemblerErrorTest, ConstantIndexOutOfRange) {
  EXPECT_EQ(asmError(".const $a = int 1\n"
                     ".func f()\n  %r = call f($0, $1)\n  ret %r\n.end\n"),
            "ParseError: prog.vmasm:3:19: error: constant $1 is out of range "
            "(the file defines 1 constant)");
}

TEST(AssemblerErrorTest, DuplicateConst) {
  EXPECT_EQ(asmError(".const $a = int 1\n.const $a = int 2\n"),
            "ParseError: prog.vmasm:2:8: error: duplicate constant '$a' "
            "(first defined at line 1)");
}

TEST(AssemblerErrorTest, NumericConstNameMustBeItsIndex) {
  EXPECT_EQ(asmError(".const $a = int 1\n.const $0 = int 2\n"),
            "ParseError: prog.vmasm:2:8: error: '.const $0' defines constant "
            "1: a numeric name must be the constant's index");
}

TEST(AssemblerErrorTest, MissingEnd) {
  EXPECT_EQ(asmError(".func main(x)\n  ret %x\n"),
            "ParseError: prog.vmasm:3:1: error: missing '.end' for function "
            "'main' (begun at line 1)");
  EXPECT_EQ(asmError(".func main(x)\n  ret %x\n.func g()\n"),
            "ParseError: prog.vmasm:3:1: error: '.func' inside function "
            "'main' (missing '.end'?)");
}

TEST(AssemblerErrorTest, EndWithoutFunc) {
  EXPECT_EQ(asmError("\n.end\n"),
            "ParseError: prog.vmasm:2:1: error: '.end' without '.func'");
}

TEST(AssemblerErrorTest, InstructionOutsideAFunction) {
  EXPECT_EQ(asmError("  ret %x\n"),
            "ParseError: prog.vmasm:1:3: error: instruction outside a "
            "function");
  EXPECT_EQ(asmError("L:\n"),
            "ParseError: prog.vmasm:1:1: error: label outside a function");
}

TEST(AssemblerErrorTest, BadDType) {
  EXPECT_EQ(asmError(".const $d = dtype float8_e9m9\n"),
            "ParseError: prog.vmasm:1:19: error: unknown dtype 'float8_e9m9'");
  EXPECT_EQ(asmError(".const $t = tensor floaty [1] [1]\n"),
            "ParseError: prog.vmasm:1:20: error: unknown dtype 'floaty'");
  EXPECT_EQ(asmError(".const $t = tensor float32x4 [1] [1]\n"),
            "ParseError: prog.vmasm:1:34: error: a float32x4 tensor is "
            "written as hex \"...\" (its bytes); values and npy files are "
            "for bool, int8..int64, uint8..uint64, float16, bfloat16, "
            "float32 and float64");
  EXPECT_EQ(asmError(".const $t = tensor handle [1] hex \"\"\n"),
            "ParseError: prog.vmasm:1:20: error: a tensor cannot have "
            "elements of dtype handle");
}

TEST(AssemblerErrorTest, TensorValueCountMismatch) {
  EXPECT_EQ(asmError(".const $t = tensor float32 [2, 2] [1, 2, 3]\n"),
            "ParseError: prog.vmasm:1:35: error: tensor of shape [2, 2] needs "
            "4 values, got 3");
  EXPECT_EQ(asmError(".const $t = tensor int32 [] []\n"),
            "ParseError: prog.vmasm:1:29: error: tensor of shape [] needs 1 "
            "value, got 0");
}

TEST(AssemblerErrorTest, TensorValueOutOfRange) {
  EXPECT_EQ(asmError(".const $t = tensor int8 [2] [-128, 128]\n"),
            "ParseError: prog.vmasm:1:36: error: 128 is out of range for int8");
  EXPECT_EQ(asmError(".const $t = tensor uint16 [1] [-1]\n"),
            "ParseError: prog.vmasm:1:32: error: -1 is out of range for "
            "uint16");
  EXPECT_EQ(asmError(".const $t = tensor float16 [1] [65520]\n"),
            "ParseError: prog.vmasm:1:33: error: 65520 is out of range for "
            "float16");
  EXPECT_EQ(asmError(".const $t = tensor float32 [1] [1e39]\n"),
            "ParseError: prog.vmasm:1:33: error: 1e39 is out of range for "
            "float32");
  EXPECT_EQ(asmError(".const $t = tensor int32 [1] [1.5]\n"),
            "ParseError: prog.vmasm:1:31: error: expected an integer (the "
            "tensor is int32)");
  EXPECT_EQ(asmError(".const $t = tensor bool [1] [2.0]\n"),
            "ParseError: prog.vmasm:1:30: error: expected true, false or an "
            "integer 0..255 (the tensor is bool)");
  EXPECT_EQ(asmError(".const $f = float 1e999\n"),
            "ParseError: prog.vmasm:1:19: error: 1e999 is out of range for "
            "float64");
}

TEST(AssemblerErrorTest, VMAsDestination) {
  EXPECT_EQ(asmError(".func f()\n  %vm = call g()\n  ret %vm\n.end\n"),
            "ParseError: prog.vmasm:2:3: error: %vm cannot be the destination "
            "of a call");
  EXPECT_EQ(asmError(".func f(x)\n  ret %vm\n.end\n"),
            "ParseError: prog.vmasm:2:7: error: 'ret' cannot return %vm");
  EXPECT_EQ(asmError(".func f(vm)\n  ret %vm\n.end\n"),
            "ParseError: prog.vmasm:1:9: error: a parameter cannot be named "
            "'vm' (%vm is the VM register; a quoted \"vm\" is a name only)");
}

TEST(AssemblerErrorTest, VoidIsTheVoidRegister) {
  EXPECT_EQ(asmError(".func f(void)\n  ret %void\n.end\n"),
            "ParseError: prog.vmasm:1:9: error: a parameter cannot be named "
            "'void' (%void is the void register; a quoted \"void\" is a name "
            "only)");
  // %void reads as None and drops a result; it takes no register number.
  auto Exe = assemble(".func f(x)\n  %void = call g(%void, %x)\n  ret %void\n"
                      ".end\n",
                      "v.vmasm");
  const FunctionInfo &F = Exe->function(0);
  EXPECT_EQ(F.RegisterFileSize, 1);
  InstrView Call = Exe->instr(F.StartInstr);
  EXPECT_EQ(Call.callDst(), kVoidRegister);
  EXPECT_EQ(Call.callArg(0).value(), kVoidRegister);
  EXPECT_EQ(Exe->instr(F.StartInstr + 1).retReg(), kVoidRegister);
  EXPECT_EQ(disassemble(*Exe).find("%void = call"), std::string::npos);
}

TEST(AssemblerErrorTest, UnknownDirective) {
  EXPECT_EQ(asmError(".funct main()\n"),
            "ParseError: prog.vmasm:1:1: error: unknown directive '.funct'");
}

TEST(AssemblerErrorTest, UnknownInstructionAndCharacter) {
  EXPECT_EQ(asmError(".func f(x)\n  jump %x\n.end\n"),
            "ParseError: prog.vmasm:2:3: error: unknown instruction 'jump'");
  EXPECT_EQ(asmError(".func f(x)\n  ret %x!\n.end\n"),
            "ParseError: prog.vmasm:2:9: error: unexpected character '!'");
  EXPECT_EQ(asmError(".func f(x)\n  ret %x %x\n.end\n"),
            "ParseError: prog.vmasm:2:10: error: expected end of line");
}

TEST(AssemblerErrorTest, MissingParenAfterArguments) {
  EXPECT_EQ(asmError(".func f(a, b)\n  %r = call f(%a %b)\n  ret %r\n.end\n"),
            "ParseError: prog.vmasm:2:18: error: expected ')' after the call "
            "arguments");
}

TEST(AssemblerErrorTest, FunctionDeclarations) {
  EXPECT_EQ(asmError(".func f(x)\n  ret %x\n.end\n.func f(x)\n  ret %x\n"
                     ".end\n"),
            "ParseError: prog.vmasm:4:7: error: function 'f' is defined twice "
            "(first at line 1)");
  EXPECT_EQ(asmError(".extern f\n.func f(x)\n  ret %x\n.end\n"),
            "ParseError: prog.vmasm:2:7: error: function 'f' is already "
            "declared with .extern at line 1");
  EXPECT_EQ(asmError(".func f(x, x)\n  ret %x\n.end\n"),
            "ParseError: prog.vmasm:1:12: error: duplicate parameter 'x' (a "
            "quoted \"x\" may repeat: it is a name only)");
  EXPECT_EQ(asmError(".func f(x)\n.end\n"),
            "ParseError: prog.vmasm:2:1: error: function 'f' has no "
            "instructions");
  // Repeating an .extern is harmless.
  EXPECT_NO_THROW(asmText(".extern g\n.extern g\n"));
}

TEST(AssemblerErrorTest, RegsDirective) {
  EXPECT_EQ(asmError(".func f(x)\n  .regs 2\n  %5 = call g()\n  ret %5\n"
                     ".end\n"),
            "ParseError: prog.vmasm:2:3: error: '.regs 2' is smaller than the "
            "6 registers function 'f' uses");
  EXPECT_EQ(asmError(".regs 4\n"),
            "ParseError: prog.vmasm:1:1: error: '.regs' outside a function");
}

TEST(AssemblerErrorTest, NpyFileMissing) {
  TempDir Dir;
  std::string E = errorOf([&] {
    assemble(".const $w = tensor float32 [2] npy \"missing.npy\"\n",
             Dir.file("prog.vmasm"));
  });
  std::string Expected = "ParseError: " + Dir.file("prog.vmasm") +
                         ":1:36: error: cannot load npy file \"missing.npy\": ";
  EXPECT_EQ(E.substr(0, Expected.size()), Expected) << E;
}

TEST(AssemblerErrorTest, NpyShapeOrDTypeMismatch) {
  TempDir Dir;
  Tensor T = Tensor::empty({3, 2}, dtype::Float32);
  std::memset(T.data(), 0, T.nbytes());
  writeNpy(T, Dir.file("w.npy"));
  const std::string File = Dir.file("prog.vmasm");
  EXPECT_EQ(errorOf([&] {
              assemble(".const $w = tensor float32 [2, 3] npy \"w.npy\"\n",
                       File);
            }),
            "ParseError: " + File +
                ":1:39: error: npy file \"w.npy\" holds a float32 [3, 2] "
                "tensor, but the constant says float32 [2, 3]");
  EXPECT_EQ(errorOf([&] {
              assemble(".const $w = tensor int32 [3, 2] npy \"w.npy\"\n",
                       File);
            }),
            "ParseError: " + File +
                ":1:37: error: npy file \"w.npy\" holds a float32 [3, 2] "
                "tensor, but the constant says int32 [3, 2]");
}

TEST(AssemblerErrorTest, TheFirstErrorInTheTextIsReported) {
  // The unknown label (line 2) is found only at .end, after the syntax
  // error on line 3 was seen; line 2 still wins.
  EXPECT_EQ(asmError(".func f(x)\n  goto nowhere\n  ret %x %x\n.end\n"),
            "ParseError: prog.vmasm:2:8: error: unknown label 'nowhere'");
  // A bad line still defines its label, so no misleading "unknown label".
  EXPECT_EQ(asmError(".func f(x)\n  goto L\nL: junk\n  ret %x\n.end\n"),
            "ParseError: prog.vmasm:3:4: error: expected end of line after "
            "the label (a label stands on its own line)");
  // A broken .const still defines its name.
  EXPECT_EQ(asmError(".func f()\n  %r = call g($t)\n  ret %r\n.end\n"
                     ".const $t = tensor int8 [1] [1000]\n"),
            "ParseError: prog.vmasm:5:30: error: 1000 is out of range for "
            "int8");
}

TEST(AssemblerErrorTest, FileNameIsUsedInMessages) {
  std::string E =
      errorOf([] { assemble("\n\n  bogus\n", "some/dir/model.vmasm"); });
  EXPECT_EQ(E, "ParseError: some/dir/model.vmasm:3:3: error: unknown "
               "instruction 'bogus'");
}

//===----------------------------------------------------------------------===//
// Verifier errors keep their kind and get the file, line and column of the
// instruction (of the register, for a read), and register names.
//===----------------------------------------------------------------------===//

TEST(AssemblerVerifyTest, ReadOfAnUnwrittenRegister) {
  std::string E = asmError(".func main(x)\n"
                           "  %y = call f(%z)\n"
                           "  ret %y\n"
                           ".end\n");
  EXPECT_EQ(E, "VerifyError: prog.vmasm:2:15: function 'main', instruction 0 "
               "(call 'f'): argument 1 reads register %z before it is written "
               "on every path that reaches it (%z is never written in "
               "'main')");
}

TEST(AssemblerVerifyTest, WrongArityCallOfAFunc) {
  std::string E = asmError(".func g(a, b)\n  ret %a\n.end\n"
                           ".func main(x)\n  %y = call g(%x)\n  ret %y\n"
                           ".end\n");
  EXPECT_EQ(E.rfind("VerifyError: prog.vmasm:5:3: function 'main', "
                    "instruction 0 (call 'g'): passes 1 arguments to 'g', "
                    "which takes 2",
                    0),
            0u)
      << E;
}

TEST(AssemblerVerifyTest, FunctionNotEndingInRetOrGoto) {
  std::string E = asmError(".func main(x)\n  %y = call f(%x)\n.end\n");
  EXPECT_EQ(E.rfind("VerifyError: prog.vmasm:2:3: function 'main', "
                    "instruction 0",
                    0),
            0u)
      << E;
  EXPECT_NE(E.find("'ret' or 'goto'"), std::string::npos) << E;
}

TEST(AssemblerVerifyTest, JumpOutOfTheFunction) {
  std::string E = asmError(".func main(x)\n  goto +5\n.end\n");
  EXPECT_EQ(E.rfind("VerifyError: prog.vmasm:2:3: function 'main', "
                    "instruction 0",
                    0),
            0u)
      << E;
}

//===----------------------------------------------------------------------===//
// Robustness: damaged programs give one Error, never a crash or another
// exception; whatever still assembles survives a dis/asm round trip.
//===----------------------------------------------------------------------===//

TEST(AssemblerRobustnessTest, MutatedInputsOnlyThrowErrors) {
  std::vector<std::string> Texts;
  for (const char *Name : {"fib", "loop", "consts", "closure", "forward",
                           "registers"}) {
    std::ifstream In(std::string(kInputs) + "/" + Name + ".vmasm");
    std::stringstream S;
    S << In.rdbuf();
    Texts.push_back(S.str());
    ASSERT_FALSE(Texts.back().empty()) << Name;
  }
  const std::string Alphabet = "%$@.,()[]=:\"\\-+0x9eE;#\n\t abnfLvm_";
  std::mt19937 Rng(4242);
  auto Pick = [&](size_t N) {
    return N ? std::uniform_int_distribution<size_t>(0, N - 1)(Rng) : 0;
  };
  int Assembled = 0, Rejected = 0;
  for (int Round = 0; Round < 3000; ++Round) {
    std::string T = Texts[Pick(Texts.size())];
    for (int M = 0, NumMutations = 1 + static_cast<int>(Pick(3));
         M < NumMutations; ++M) {
      size_t At = Pick(T.size() + 1);
      switch (Pick(4)) {
      case 0: // delete a few bytes
        T.erase(std::min(At, T.size()), 1 + Pick(8));
        break;
      case 1: // insert a byte
        T.insert(T.begin() + static_cast<std::ptrdiff_t>(At),
                 Alphabet[Pick(Alphabet.size())]);
        break;
      case 2: // replace a byte
        if (At < T.size())
          T[At] = Alphabet[Pick(Alphabet.size())];
        break;
      default: // duplicate a stretch
        T.insert(At, T.substr(Pick(T.size()), 1 + Pick(40)));
        break;
      }
    }
    std::shared_ptr<Executable> Exe;
    try {
      Exe = assemble(T, "fuzz.vmasm");
    } catch (const Error &E) {
      ++Rejected;
      EXPECT_TRUE(E.kind() == "ParseError" || E.kind() == "VerifyError")
          << E.kind() << ": " << E.message();
      continue;
    } catch (...) {
      ADD_FAILURE() << "a non-Error exception for:\n" << T;
      continue;
    }
    ++Assembled;
    std::string Text = disassemble(*Exe);
    try {
      EXPECT_TRUE(assemble(Text, "fuzz.vmasm")->equals(*Exe)) << Text;
    } catch (const Error &E) {
      ADD_FAILURE() << E.message() << "\n" << Text;
    }
  }
  EXPECT_GT(Assembled, 100);
  EXPECT_GT(Rejected, 100);
}

TEST(AssemblerTest, VerifierLimitsApplyToAssembledPrograms) {
  const char *Text = ".func f(x)\n  ret %x\n.end\n";
  EXPECT_NO_THROW(assemble(Text, "ok.vmasm"));
  VerifierLimits L;
  L.MaxFunctions = 0;
  try {
    assemble(Text, "small.vmasm", L);
    FAIL() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "VerifyError");
    EXPECT_EQ(E.message(), "small.vmasm: 1 functions is over the limit of 0");
  }
  // loadProgram passes LoadOptions::Limits on for .vmasm files too.
  auto Path = std::filesystem::temp_directory_path() /
              ("vmjit-limits-" + std::to_string(::getpid()) + ".vmasm");
  {
    std::ofstream Out(Path);
    Out << Text;
  }
  LoadOptions Opts;
  Opts.Limits = L;
  try {
    loadProgram(Path.string(), Opts);
    ADD_FAILURE() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "VerifyError");
    EXPECT_THAT(E.message(), ::testing::HasSubstr("over the limit of 0"));
  }
  Opts = {};
  Opts.MaxFileBytes = 4;
  try {
    loadProgram(Path.string(), Opts);
    ADD_FAILURE() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "FormatError");
    EXPECT_THAT(E.message(), ::testing::HasSubstr("over the limit of 4"));
  }
  std::filesystem::remove(Path);
}

namespace {

// One rule for label names (asmtext::isLabelName), shared with the
// binary loader's check of the debug names: what the assembler accepts
// always loads back (fuzz/regressions/assembler/assembler-label-named-goto).
TEST(AssemblerTest, AnInstructionKeywordCannotNameALabel) {
  for (const char *Name : {"goto", "if", "else", "call", "ret", "vm", "void"})
    EXPECT_EQ(
        asmError(fmt::format(".func main(n)\n{}:\n  ret %n\n.end\n", Name)),
        fmt::format("ParseError: prog.vmasm:2:1: error: '{}' cannot name "
                    "a label (call, ret, goto, if, else, vm and void are "
                    "reserved)",
                    Name))
        << Name;
  // Names that merely start like one are fine, and survive a round trip.
  auto Exe = asmText(".func main(n)\n  goto gotox\ngotox:\n  ret %n\n.end\n");
  auto Back = loadExecutableFromBytes(serializeExecutable(*Exe), "x.bin");
  EXPECT_EQ(Back->debugNames(0)->Labels.size(), 1u);
}

// One rule for tensor shapes (tensorElementCount), shared with both
// loaders (FuzzReplay.TheLoaderRefusesAShapeWhoseNonzeroDimensionsOverflow).
TEST(AssemblerTest, ATensorShapeWhoseNonzeroDimensionsOverflowIsRefused) {
  EXPECT_EQ(asmError(".const $w = tensor float32 [288230376151711744, 0] []\n"
                     ".func main()\n  ret %void\n.end\n"),
            "ParseError: prog.vmasm:1:28: error: tensor shape "
            "[288230376151711744, 0] has too many elements");
}

} // namespace
