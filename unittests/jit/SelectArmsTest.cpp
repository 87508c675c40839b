//===- SelectArmsTest.cpp - One math call for the two arms of a select ----===//
//
// jit/select_arms.h: TVM's tanh (both arms' exp computed, one kept) gets
// one exp on the selected input, vector or scalar, and its code gives the
// bits of the original for every float (NaNs of either sign, infinities,
// zeros, subnormals, random bit patterns); selects whose calls reach
// anything else, whose condition or inputs depend on the calls, whose
// calls differ or lie in another block are left alone; the tanh kernels
// of the models in ../shared/tvm-models (skipped where absent) are found.
//
//===----------------------------------------------------------------------===//

#include "ParsedIR.h"
#include "select_arms.h"
#include "vmjit/jit/engine.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <limits>
#include <random>

namespace vmjit::jittest {
namespace {

const std::filesystem::path kModels = VMJIT_TVM_MODELS;

/// TVM's tanh of four lanes, `k(in, out, kc)`: the edits replace text of
/// it. Its constants (2, -2, 1, -1, four lanes each) come from `kc`: IR
/// parsed here must hold no floating-point literal, which the test's LLVM
/// would make for the JIT library's own copy of LLVM to read.
const char *kTanh = R"(
define void @k(ptr %in, ptr %out, ptr %kc) {
entry:
  %x = load <4 x float>, ptr %in, align 4
  %two = load <4 x float>, ptr %kc, align 4
  %c1 = getelementptr inbounds i8, ptr %kc, i64 16
  %mtwo = load <4 x float>, ptr %c1, align 4
  %c2 = getelementptr inbounds i8, ptr %kc, i64 32
  %one = load <4 x float>, ptr %c2, align 4
  %c3 = getelementptr inbounds i8, ptr %kc, i64 48
  %mone = load <4 x float>, ptr %c3, align 4
  %a = fmul <4 x float> %x, %two
  %ea = call <4 x float> @llvm.exp.v4f32(<4 x float> %a)
  %n1 = fadd <4 x float> %ea, %mone
  %d1 = fadd <4 x float> %ea, %one
  %neg = fdiv <4 x float> %n1, %d1
  %b = fmul <4 x float> %x, %mtwo
  %eb = call <4 x float> @llvm.exp.v4f32(<4 x float> %b)
  %n2 = fsub <4 x float> %one, %eb
  %d2 = fadd <4 x float> %eb, %one
  %pos = fdiv <4 x float> %n2, %d2
  %c = fcmp oge <4 x float> %x, zeroinitializer
  %r = select <4 x i1> %c, <4 x float> %pos, <4 x float> %neg
  store <4 x float> %r, ptr %out, align 4
  ret void
}
declare <4 x float> @llvm.exp.v4f32(<4 x float>)
declare <4 x float> @llvm.log.v4f32(<4 x float>)
)";

/// The scalar form, as TVM writes it inside a loop.
const char *kScalarTanh = R"(
define float @k(float %x, float %two, float %three, float %one) {
entry:
  %a = fmul float %x, %two
  %ea = call float @llvm.exp.f32(float %a)
  %neg = fdiv float %ea, %three
  %b = fneg float %x
  %eb = call float @llvm.exp.f32(float %b)
  %pos = fsub float %one, %eb
  %c = fcmp oge float %x, %one
  %r = select i1 %c, float %pos, float %neg
  ret float %r
}
declare float @llvm.exp.f32(float)
)";

/// `IR` with every `From` replaced by `To`.
std::string edit(std::string IR, const std::string &From,
                 const std::string &To) {
  size_t At = IR.find(From);
  EXPECT_NE(At, std::string::npos) << From;
  while (At != std::string::npos) {
    IR.replace(At, From.size(), To);
    At = IR.find(From, At + To.size());
  }
  return IR;
}

unsigned mathCalls(const llvm::Module &M) {
  unsigned N = 0;
  for (const llvm::Function &F : M)
    for (const llvm::Instruction &I : llvm::instructions(F))
      if (const auto *C = llvm::dyn_cast<llvm::IntrinsicInst>(&I))
        N += C->getIntrinsicID() == llvm::Intrinsic::exp ||
             C->getIntrinsicID() == llvm::Intrinsic::log;
  return N;
}

/// How many selects of `IR` are rewritten, and the math calls left; the
/// module stays valid.
std::pair<unsigned, unsigned> rewritten(const std::string &IR) {
  Parsed P = parse(IR);
  if (!P.M)
    return {0, 0};
  unsigned N = jit::shareSelectedCalls(*P.M);
  std::string Errors;
  llvm::raw_string_ostream OS(Errors);
  EXPECT_FALSE(llvm::verifyModule(*P.M, &OS)) << Errors;
  return {N, mathCalls(*P.M)};
}

TEST(SelectArmsTest, TvmsTanhGetsOneExp) {
  EXPECT_EQ(rewritten(kTanh), std::make_pair(1u, 1u));
  EXPECT_EQ(rewritten(kScalarTanh), std::make_pair(1u, 1u));
  // Arms swapped: the same.
  EXPECT_EQ(rewritten(edit(kTanh, "%pos, <4 x float> %neg",
                           "%neg, <4 x float> %pos")),
            std::make_pair(1u, 1u));
}

/// An edit of kTanh that keeps its select as it is, and why.
struct Kept {
  const char *Why, *From, *To;
};

TEST(SelectArmsTest, CallsThatReachAnythingElseStay) {
  const Kept Cases[] = {
      {"a call's value stored as well", "  ret void",
       "  store <4 x float> %ea, ptr %in\n  ret void"},
      {"an arm's value used beside the select", "  ret void",
       "  store <4 x float> %pos, ptr %in\n  ret void"},
      {"the condition computed from a call", "fcmp oge <4 x float> %x,",
       "fcmp oge <4 x float> %ea,"},
      {"one call's input computed from the other's value",
       "%b = fmul <4 x float> %x,", "%b = fmul <4 x float> %n1,"},
      {"both arms the same value", "%c, <4 x float> %pos, <4 x float> %neg",
       "%c, <4 x float> %pos, <4 x float> %pos"},
      {"two different functions", "%eb = call <4 x float> @llvm.exp.v4f32",
       "%eb = call <4 x float> @llvm.log.v4f32"},
      {"different flags", "%eb = call <4 x float>",
       "%eb = call afn <4 x float>"},
      {"a call's value used after the select (even unused)",
       "  store <4 x float> %r, ptr %out, align 4",
       "  store <4 x float> %r, ptr %out, align 4\n"
       "  %late = fadd <4 x float> %ea, %r"},
      {"a lane moved on the way", "%neg = fdiv <4 x float> %n1, %d1",
       "%q = fdiv <4 x float> %n1, %d1\n  %neg = shufflevector <4 x float> "
       "%q, <4 x float> %q, <4 x i32> <i32 1, i32 0, i32 3, i32 2>"},
  };
  for (const Kept &K : Cases)
    EXPECT_EQ(rewritten(edit(kTanh, K.From, K.To)), std::make_pair(0u, 2u))
        << K.Why;
}

TEST(SelectArmsTest, ACallInAnotherBlockStays) {
  std::string IR = edit(kScalarTanh, "  %b = fneg float %x",
                        "  br label %next\nnext:\n  %b = fneg float %x");
  EXPECT_EQ(rewritten(IR), std::make_pair(0u, 2u));
}

using TanhFn = void(const float *, float *, const float *);

/// `kTanh` compiled, rewritten or not.
std::unique_ptr<jit::CompiledUnit> compileTanh(bool Rewrite) {
  Parsed P = parse(kTanh);
  if (Rewrite) {
    EXPECT_EQ(jit::shareSelectedCalls(*P.M), 1u);
  }
  jit::EngineOptions Opts;
  Opts.OptLevel = 2;
  return jit::Engine::create(Opts)->compile(std::move(P.Ctx), std::move(P.M),
                                            {}, {"k"}, "");
}

TEST(SelectArmsTest, TheRewrittenTanhGivesTheOriginalsBitsForEveryFloat) {
  auto Before = compileTanh(false), After = compileTanh(true);
  ASSERT_TRUE(Before && After);
  auto *KB = reinterpret_cast<TanhFn *>(Before->address("k"));
  auto *KA = reinterpret_cast<TanhFn *>(After->address("k"));
  ASSERT_TRUE(KB && KA);
  std::vector<uint32_t> Bits = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000, // zeros, infinities
      0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345, // NaNs of both signs
      0x00000001, 0x80000001, 0x007fffff, 0x807fffff, // subnormals
      0x3f800000, 0xbf800000, 0x42b17218, 0xc2cff1b5, // +-1, exp's limits
      0x41200000, 0xc1200000, 0x3c23d70a, 0xbc23d70a};
  std::mt19937 Rng(42);
  while (Bits.size() < (1u << 18))
    Bits.push_back(static_cast<uint32_t>(Rng()));
  const float C[16] = {2, 2, 2, 2, -2, -2, -2, -2, 1, 1, 1, 1, -1, -1, -1, -1};
  for (size_t K = 0; K < Bits.size(); K += 4) {
    float In[4], OutB[4], OutA[4];
    std::memcpy(In, &Bits[K], sizeof In);
    KB(In, OutB, C);
    KA(In, OutA, C);
    ASSERT_EQ(std::memcmp(OutB, OutA, sizeof OutB), 0)
        << "inputs " << std::hex << Bits[K] << " " << Bits[K + 1] << " "
        << Bits[K + 2] << " " << Bits[K + 3];
  }
}

/// How many selects of a model's kernels are rewritten.
unsigned modelSelects(const std::string &Model) {
  auto Buf =
      llvm::MemoryBuffer::getFile((kModels / Model / "model.bc").string());
  if (!Buf)
    return 0;
  llvm::LLVMContext Ctx;
  auto M = llvm::parseBitcodeFile((*Buf)->getMemBufferRef(), Ctx);
  if (!M) {
    llvm::consumeError(M.takeError());
    ADD_FAILURE() << Model << ": bitcode not read";
    return 0;
  }
  unsigned N = jit::shareSelectedCalls(**M);
  EXPECT_FALSE(llvm::verifyModule(**M, &llvm::errs()));
  return N;
}

TEST(SelectArmsTest, TheTanhKernelsOfTheModelsAreFound) {
  if (!std::filesystem::exists(kModels / "many_small" / "model.bc"))
    GTEST_SKIP() << "no " << (kModels / "many_small").string();
  // many_small's tanh kernel (called eight times).
  EXPECT_EQ(modelSelects("many_small"), 1u);
  // mlp computes no exp.
  EXPECT_EQ(modelSelects("mlp"), 0u);
}

} // namespace
} // namespace vmjit::jittest
