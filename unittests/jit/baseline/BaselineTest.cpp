// Tests the baseline tier's stencils and patching: every instruction shape
// (each argument kind, pool and direct calls with and without a result,
// every scalar fast path and its slow path, on registers and immediates,
// into registers that held objects, forward and backward jumps,
// ret), at the extremes of what holes carry (the highest register, the
// widest immediates, a far constant, a call with hundreds of arguments).
// Each program runs in every mode and must give the interpreter's values
// and errors; tier 2 runs both of its lowering styles (promoted registers
// and flat, see jit/lowering.cpp).
#include "../CallErrors.h"
#include "vmjit/bytecode/builder.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/function_stats.h"
#include "vmjit/vm/virtual_machine.h"

#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;

namespace {

/// Every instruction shape of the text format.
const char *kShapes = R"(
.const $half = float 0.5
.const $seven = int 7
.func twice(x)
  %y = call scalar.mul(%x, 2)
  ret %y
.end
.func shapes(n)
  %i = call vm.builtin.copy(0)
  %s = call vm.builtin.copy(0)
  call vm.builtin.copy(%n)
  call twice(%n)
  goto +1
loop:
  %s = call scalar.add(%s, %i)
  %i = call scalar.add(%i, 1)
  %c = call scalar.lt(%i, %n)
  if %c else +2
  goto loop
  %d = call twice(%s)
  %t = call vm.builtin.make_tuple(%d, $seven, @twice, -5, $half)
  %f = call vm.builtin.tuple_getitem(%t, 2)
  %clo = call vm.builtin.make_closure(@twice)
  %g = call vm.builtin.invoke_closure(%vm, %clo, %d)
  %e = call vm.builtin.tuple_getitem(%t, 4)
  %z = call scalar.add(%g, %e)
  goto out
out:
  ret %z
.end
.func countdown(n)
back:
  %n = call scalar.sub(%n, 1)
  %c = call scalar.gt(%n, 0)
  if %c else done
  goto back
done:
  ret %n
.end
.func backif(n)
  %k = call vm.builtin.copy(%n)
top:
  %k = call scalar.sub(%k, 1)
  %c = call scalar.le(%k, 0)
  if %c else top
  ret %k
.end
.func scalars(a, b)
  %r0 = call scalar.add(%a, %b)
  %r1 = call scalar.sub(%a, %b)
  %r2 = call scalar.mul(%a, %b)
  %r3 = call scalar.div(%a, %b)
  %r4 = call scalar.mod(%a, %b)
  %r5 = call scalar.min(%a, %b)
  %r6 = call scalar.max(%a, %b)
  %r7 = call scalar.lt(%a, %b)
  %r8 = call scalar.le(%a, %b)
  %r9 = call scalar.gt(%a, %b)
  %r10 = call scalar.ge(%a, %b)
  %r11 = call scalar.eq(%a, %b)
  %r12 = call scalar.ne(%a, %b)
  %r13 = call scalar.neg(%a)
  %r14 = call scalar.not(%b)
  %t = call vm.builtin.make_tuple(%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14)
  ret %t
.end
.func immediates(a)
  %r0 = call scalar.add(%a, -3)
  %r1 = call scalar.sub(%a, -3)
  %r2 = call scalar.mul(%a, -3)
  %r3 = call scalar.div(%a, -3)
  %r4 = call scalar.mod(%a, -3)
  %r5 = call scalar.min(%a, -3)
  %r6 = call scalar.max(%a, -3)
  %r7 = call scalar.lt(%a, -3)
  %r8 = call scalar.le(%a, -3)
  %r9 = call scalar.gt(%a, -3)
  %r10 = call scalar.ge(%a, -3)
  %r11 = call scalar.eq(%a, -3)
  %r12 = call scalar.ne(%a, -3)
  %r14 = call scalar.add(%a, 2147483647)
  %r15 = call scalar.add(%a, -2147483648)
  %r16 = call scalar.add(%a, 2147483648)
  %r17 = call scalar.sub(%a, -2147483649)
  %t = call vm.builtin.make_tuple(%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12, %r14, %r15, %r16, %r17)
  ret %t
.end
.func divzero(a)
  %q = call scalar.div(%a, 0)
  ret %q
.end
.func intoobjects(a, b)
  %t = call vm.builtin.make_tuple(%a, %b)
  %u = call vm.builtin.make_tuple(%t)
  %t = call scalar.add(%a, %b)
  %u = call scalar.neg(%a)
  %a = call scalar.mul(%a, %a)
  %b = call scalar.sub(%b, 1)
  %r = call vm.builtin.make_tuple(%t, %u, %a, %b)
  ret %r
.end
)";

/// What the holes carry at their extremes: register `Top` (65535: byte
/// offset 2^20 - 16), the widest immediates, constant 2999, 300 arguments.
std::shared_ptr<Executable> extremes(RegName Top) {
  ExecutableBuilder B;
  const int64_t Add = B.declarePacked("scalar.add");
  const int64_t Copy = B.declarePacked("vm.builtin.copy");
  const int64_t Tuple = B.declarePacked("vm.builtin.make_tuple");
  const int64_t Get = B.declarePacked("vm.builtin.tuple_getitem");
  std::vector<int64_t> Consts;
  for (int64_t K = 0; K < 3000; ++K)
    Consts.push_back(B.addConstant(Any(K * 1000)));
  FunctionBuilder &F = B.beginFunction("high", {"x"});
  F.emitCall(Top, Copy, {Arg::reg(0)});
  F.emitCall(Top - 1, Add, {Arg::reg(Top), Arg::imm(Arg::kMaxValue)});
  F.emitCall(Top - 2, Add, {Arg::reg(Top - 1), Arg::imm(Arg::kMinValue)});
  F.emitCall(Top - 3, Add, {Arg::reg(Top - 2), Arg::constant(Consts.back())});
  F.emitRet(Top - 3);
  B.endFunction();
  FunctionBuilder &G = B.beginFunction("wide", {"i"});
  std::vector<Arg> Args;
  for (int64_t K = 0; K < 300; ++K)
    Args.push_back(K % 3 == 0   ? Arg::reg(0)
                   : K % 3 == 1 ? Arg::imm(K)
                                : Arg::constant(Consts[static_cast<size_t>(K)]));
  G.emitCall(1, Tuple, Args);
  G.emitCall(2, Get, {Arg::reg(1), Arg::reg(0)});
  G.emitRet(2);
  B.endFunction();
  return B.finish();
}

/// A mode, and for tier 2 whether every function is lowered flat.
struct ModeParam {
  ExecMode Mode;
  bool Flat = false;
};

std::unique_ptr<VirtualMachine> makeVM(std::shared_ptr<Executable> Exe,
                                       ModeParam M) {
  auto VM = VirtualMachine::create(std::move(Exe));
  JITOptions O;
  O.Mode = M.Mode;
  O.PromoteLimit = M.Flat ? 0 : -1;
  // Flat code would lose to tier 1, which keeps such functions; without
  // tier 1 they reach tier 2 and its flat code is what runs.
  O.UseBaseline = !M.Flat;
  O.Threshold = 1;
  O.Background = false;
  enableJIT(*VM, O);
  return VM;
}

/// The value (as text) or the error of F(Args) on a VM of mode `M`, called
/// twice (tiered mode climbs on the way).
std::string outcome(VirtualMachine &VM, const char *F,
                    std::vector<Any> Args) {
  std::string Out;
  std::vector<AnyView> Views(Args.begin(), Args.end());
  for (int Rep = 0; Rep < 2; ++Rep) {
    try {
      Any R = VM.invoke(F, Views);
      Out += jittest::describe(R) + "; ";
    } catch (const Error &E) {
      Out += E.format() + "; ";
    }
  }
  return Out;
}

class BaselineTest : public ::testing::TestWithParam<ModeParam> {
protected:
  void SetUp() override {
    if (GetParam().Mode == ExecMode::Baseline && !baselineAvailable())
      GTEST_SKIP() << "no baseline tier on this target";
  }
};

/// Runs F on each argument list in bytecode and in the parameter's mode.
void expectSameAsInterpreter(std::shared_ptr<Executable> Exe, ModeParam M,
                             const char *F,
                             std::vector<std::vector<Any>> Calls) {
  auto Interp = makeVM(Exe, {ExecMode::Bytecode});
  auto Native = makeVM(Exe, M);
  for (std::vector<Any> &Args : Calls)
    EXPECT_EQ(outcome(*Native, F, Args), outcome(*Interp, F, Args)) << F;
  if (M.Mode != ExecMode::Baseline)
    return;
  // Every call ran tier-1 code (a function tier 1 refused would have run
  // in the interpreter and agreed trivially).
  for (const FunctionStats &S : collectFunctionStats(*Native))
    if (S.Name == F) {
      EXPECT_EQ(S.BaselineCalls, 2 * Calls.size()) << F;
      EXPECT_EQ(S.InterpretedCalls, 0u) << F;
    }
}

/// Tier-1 code bytes of `Exe`'s function F, after one call of it with Arg
/// in baseline mode: {all, hot}.
std::pair<size_t, size_t> baselineBytes(std::shared_ptr<Executable> Exe,
                                        const char *F, Any Arg) {
  auto VM = makeVM(std::move(Exe), {ExecMode::Baseline});
  std::vector<AnyView> Views = {AnyView(Arg)};
  VM->invoke(F, Views);
  for (const FunctionStats &S : collectFunctionStats(*VM))
    if (S.Name == F && S.JIT && S.JIT->Baseline)
      return {S.JIT->BaselineBytes, S.JIT->BaselineHotBytes};
  ADD_FAILURE() << F << " has no tier-1 code";
  return {0, 0};
}

} // namespace

TEST_P(BaselineTest, EveryInstructionShape) {
  auto Exe = assemble(kShapes, "shapes.vmasm");
  expectSameAsInterpreter(Exe, GetParam(), "shapes",
                          {{Any(int64_t(0))}, {Any(int64_t(1))},
                           {Any(int64_t(100))}, {Any(1.5)}, {Any(true)}});
  expectSameAsInterpreter(Exe, GetParam(), "countdown",
                          {{Any(int64_t(5))}, {Any(int64_t(-3))}});
  expectSameAsInterpreter(Exe, GetParam(), "backif",
                          {{Any(int64_t(7))}, {Any(int64_t(0))}, {Any(0.5)}});
  auto VM = makeVM(Exe, GetParam());
  // 2 * (0 + 1 + ... + 99) doubled again by the closure, plus 0.5.
  EXPECT_EQ(VM->call("shapes", 100).cast<double>(), 19800.5);
}

TEST_P(BaselineTest, EveryScalarFastAndSlowPath) {
  auto Exe = assemble(kShapes, "shapes.vmasm");
  const int64_t Min = std::numeric_limits<int64_t>::min();
  std::vector<std::vector<Any>> Calls = {
      {Any(int64_t(7)), Any(int64_t(-2))},   // int fast paths
      {Any(int64_t(-7)), Any(int64_t(2))},   // truncating division
      {Any(int64_t(7)), Any(int64_t(0))},    // division by zero: error
      {Any(Min), Any(int64_t(-1))},          // overflow: error
      {Any(Min), Any(int64_t(1))},           // wrapping neg
      {Any(int64_t(3)), Any(2.5)},           // float slow path
      {Any(true), Any(int64_t(0))},          // bools
      {Any(1.5), Any(false)},                // scalar.not on a bool
      {Any(int64_t(1)), Any(String("x"))},   // type error
  };
  expectSameAsInterpreter(Exe, GetParam(), "scalars", Calls);
  // The same with the second operand an immediate (tier 1's fused
  // stencils take those that fit in 32 bits, the others the argument
  // stencils), the division by zero raising from the out-of-line path.
  const std::vector<std::vector<Any>> Firsts = {
      {Any(int64_t(7))}, {Any(int64_t(-8))}, {Any(Min)},
      {Any(2.5)},        {Any(true)},        {Any(String("x"))}};
  expectSameAsInterpreter(Exe, GetParam(), "immediates", Firsts);
  expectSameAsInterpreter(Exe, GetParam(), "divzero", Firsts);
}

TEST_P(BaselineTest, ScalarResultsReplaceObjectsAndOperands) {
  // The destination holds a tuple (released by the out-of-line path of a
  // fused stencil) or is the operand itself.
  auto Exe = assemble(kShapes, "shapes.vmasm");
  expectSameAsInterpreter(Exe, GetParam(), "intoobjects",
                          {{Any(int64_t(6)), Any(int64_t(-4))},
                           {Any(1.5), Any(int64_t(2))},
                           {Any(int64_t(3)), Any(String("x"))}});
}

TEST_P(BaselineTest, HolesAtTheirExtremes) {
  // 65536 registers: tier 2 lowers it flat (it would not promote them).
  auto Exe = extremes(65535);
  expectSameAsInterpreter(Exe, GetParam(), "high",
                          {{Any(int64_t(0))}, {Any(int64_t(5))}, {Any(2.0)}});
  expectSameAsInterpreter(Exe, GetParam(), "wide",
                          {{Any(int64_t(0))}, {Any(int64_t(1))},
                           {Any(int64_t(299))}, {Any(int64_t(300))}});
  auto VM = makeVM(Exe, GetParam());
  // x + max + min = x - 1, plus constant 2999 (2999000).
  EXPECT_EQ(VM->call("high", 5).cast<int64_t>(), 5 - 1 + 2999000);
  EXPECT_EQ(VM->call("wide", 1).cast<int64_t>(), 1);
  EXPECT_EQ(VM->call("wide", 2).cast<int64_t>(), 2000);
}

TEST(BaselineCodeSize, ScalarCallsAreAtMost80BytesOfHotCode) {
  // docs/jit.md, "Tier 1 code size": a two-operand scalar Call on
  // registers, or on a register and an immediate, is one fused stencil of
  // at most 80 bytes; its slow path is laid out after the function.
  if (!baselineAvailable())
    GTEST_SKIP() << "no baseline tier on this target";
  constexpr int64_t N = 1000;
  for (bool Imm : {false, true}) {
    ExecutableBuilder B;
    const int64_t Add = B.declarePacked("scalar.add");
    FunctionBuilder &F = B.beginFunction("chain", {"x"});
    for (int64_t K = 0; K < N; ++K)
      F.emitCall(
          1 + (K + 1) % 8, Add,
          {Arg::reg(K == 0 ? 0 : 1 + K % 8), Imm ? Arg::imm(K) : Arg::reg(0)});
    F.emitRet(1 + N % 8);
    B.endFunction();
    auto [All, Hot] = baselineBytes(B.finish(), "chain", Any(int64_t(1)));
    EXPECT_LE(Hot, size_t(80 * N)) << (Imm ? "immediate" : "registers");
    EXPECT_GT(All, Hot); // the slow paths
  }
}

std::vector<ModeParam> modeParams() {
  std::vector<ModeParam> Out;
  for (ExecMode M : kAllExecModes)
    Out.push_back({M});
  Out.push_back({ExecMode::Compiled, /*Flat=*/true});
  Out.push_back({ExecMode::Tiered, /*Flat=*/true});
  return Out;
}

INSTANTIATE_TEST_SUITE_P(Modes, BaselineTest, ::testing::ValuesIn(modeParams()),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param.Mode)) +
                                  (Info.param.Flat ? "_flat" : "");
                         });
