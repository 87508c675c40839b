//===- TransposeNestsTest.cpp - Transposes rewritten as 8x8 blocks --------===//
//
// jit/transpose_nests.h: loop nests shaped as TVM writes them (either loop
// order, unrolled or not, several element types) are rewritten, compiled
// and give exactly the transpose; nests that are not a whole transpose
// (a plain copy, arithmetic on the way, a row missing, an offset read,
// a side shorter than 8, one buffer, control flow that skips copies) are
// left alone; sizes that are not multiples of 8 get their edges copied one
// by one; overlapping buffers take the original nest at run time; the
// transposes of the mlp and the llm in ../shared/tvm-models (skipped where
// absent) are found.
//
//===----------------------------------------------------------------------===//

#include "ParsedIR.h"
#include "transpose_nests.h"
#include "vmjit/jit/engine.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <random>

namespace vmjit::jittest {
namespace {

using jit::CompiledUnit;
using jit::Engine;
using jit::EngineOptions;

const std::filesystem::path kModels = VMJIT_TVM_MODELS;

/// A nest `for i < OuterTrips: for j < InnerTrips step Unroll:` copying,
/// for each of the Unroll copies u (jj = j + u), In[LoadIndex] to
/// Out[StoreIndex]; indices are `I*A + JJ*B + K` for the given triples.
struct NestShape {
  std::string Elem = "float";
  int64_t OuterTrips, InnerTrips, Unroll = 1;
  std::array<int64_t, 3> Store, Load;
  /// Applied to the loaded value before the store ("" for none).
  std::string Op;
  /// The store writes through %in instead of %out.
  bool OneBuffer = false;
};

std::string nestIR(const NestShape &S) {
  std::string Body;
  for (int64_t U = 0; U < S.Unroll; ++U) {
    auto Index = [&](const char *Name, const std::array<int64_t, 3> &C) {
      return fmt::format("  %{0}a.{1} = mul i64 %i, {2}\n"
                         "  %{0}b.{1} = mul i64 %jj.{1}, {3}\n"
                         "  %{0}c.{1} = add i64 %{0}a.{1}, %{0}b.{1}\n"
                         "  %{0}.{1} = add i64 %{0}c.{1}, {4}\n",
                         Name, U, C[0], C[1], C[2]);
    };
    Body += fmt::format("  %jj.{} = add i64 %j, {}\n", U, U);
    Body += Index("s", S.Store) + Index("l", S.Load);
    Body += fmt::format(
        "  %pl.{0} = getelementptr inbounds {1}, ptr %in, i64 %l.{0}\n"
        "  %v.{0} = load {1}, ptr %pl.{0}, align 1\n"
        "  %ps.{0} = getelementptr inbounds {1}, ptr {2}, i64 %s.{0}\n",
        U, S.Elem, S.OneBuffer ? "%in" : "%out");
    std::string Value = fmt::format("%v.{}", U);
    if (!S.Op.empty()) {
      Body += fmt::format("  %w.{} = {} {} {}\n", U, S.Op, S.Elem, Value);
      Value = fmt::format("%w.{}", U);
    }
    Body +=
        fmt::format("  store {} {}, ptr %ps.{}, align 1\n", S.Elem, Value, U);
  }
  return fmt::format(R"(
define void @k(ptr %in, ptr %out) {{
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
{}  %j.next = add i64 %j, {}
  %j.done = icmp eq i64 %j.next, {}
  br i1 %j.done, label %outer.latch, label %inner
outer.latch:
  %i.next = add i64 %i, 1
  %i.done = icmp eq i64 %i.next, {}
  br i1 %i.done, label %exit, label %outer
exit:
  ret void
}}
)",
                     Body, S.Unroll, S.InnerTrips, S.OuterTrips);
}

/// Out (R x C) = In (C x R) transposed, rows of Out in the outer loop,
/// the inner loop unrolled by `Unroll` (TVM's transpose_compute_).
NestShape rowsOfOut(int64_t R, int64_t C, int64_t Unroll = 4) {
  return {"float", R, C, Unroll, {C, 1, 0}, {1, R, 0}, "", false};
}

/// The same transpose, the inner loop walking down Out's columns.
NestShape columnsOfOut(int64_t R, int64_t C) {
  return {"float", C, R, 1, {1, C, 0}, {R, 1, 0}, "", false};
}

/// How many nests of the module `IR` are rewritten; it stays valid.
unsigned rewritten(const std::string &IR) {
  Parsed P = parse(IR);
  if (!P.M)
    return 0;
  unsigned N = jit::rewriteTransposeNests(*P.M);
  std::string Errors;
  llvm::raw_string_ostream OS(Errors);
  EXPECT_FALSE(llvm::verifyModule(*P.M, &OS)) << Errors;
  return N;
}
unsigned rewritten(const NestShape &S) { return rewritten(nestIR(S)); }

using KernelFn = void(void *, void *);

/// `S` rewritten and compiled; the unit holds the code of `k` and
/// `loops_ran`, an i32 the original nest's header sets to 1 (so a run
/// shows which code ran).
std::unique_ptr<CompiledUnit> compileRewritten(const NestShape &S,
                                               unsigned &Count) {
  Parsed P = parse(nestIR(S));
  Count = jit::rewriteTransposeNests(*P.M);
  llvm::Type *I32 = llvm::Type::getInt32Ty(*P.Ctx);
  auto *Ran = new llvm::GlobalVariable(
      *P.M, I32, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantInt::get(I32, 0), "loops_ran");
  for (llvm::BasicBlock &BB : *P.M->getFunction("k"))
    if (BB.getName() == "outer")
      llvm::IRBuilder<>(&*BB.getFirstInsertionPt())
          .CreateStore(llvm::ConstantInt::get(I32, 1), Ran);
  EngineOptions Opts;
  Opts.OptLevel = 2;
  return Engine::create(Opts)->compile(std::move(P.Ctx), std::move(P.M), {},
                                       {"k", "loops_ran"}, "");
}

/// What the nest of `S` computes, run element by element over `Memory`
/// (bytes; In at InAt, Out at OutAt) as its loops say.
void simulate(const NestShape &S, size_t Bytes, std::vector<char> &Memory,
              size_t InAt, size_t OutAt) {
  for (int64_t I = 0; I < S.OuterTrips; ++I)
    for (int64_t J = 0; J < S.InnerTrips; J += S.Unroll)
      for (int64_t U = 0; U < S.Unroll; ++U) {
        const int64_t JJ = J + U;
        const int64_t St = I * S.Store[0] + JJ * S.Store[1] + S.Store[2];
        const int64_t Ld = I * S.Load[0] + JJ * S.Load[1] + S.Load[2];
        std::memmove(&Memory[OutAt + St * Bytes], &Memory[InAt + Ld * Bytes],
                     Bytes);
      }
}

/// Runs the compiled, rewritten `S` on random bytes with In at byte InAt
/// and Out at OutAt of one buffer of `Size` elements of `Bytes` bytes, and
/// expects exactly what the original loops compute there, computed by the
/// new code where the arrays are apart and by the nest where they overlap.
void expectSameAsLoops(const NestShape &S, size_t Bytes, size_t Size,
                       size_t InAt, size_t OutAt, unsigned Expected) {
  unsigned Count = 0;
  std::unique_ptr<CompiledUnit> U = compileRewritten(S, Count);
  EXPECT_EQ(Count, Expected);
  auto *K = reinterpret_cast<KernelFn *>(U->address("k"));
  ASSERT_NE(K, nullptr);
  std::vector<char> Memory(Size * Bytes + 64);
  std::mt19937 Rng(7);
  for (char &C : Memory)
    C = static_cast<char>(Rng());
  // 64-byte aligned, as TVM's buffers are.
  const size_t Base =
      (64 - reinterpret_cast<uintptr_t>(Memory.data()) % 64) % 64;
  std::vector<char> Want(Memory);
  simulate(S, Bytes, Want, Base + InAt, Base + OutAt);
  K(&Memory[Base + InAt], &Memory[Base + OutAt]);
  EXPECT_EQ(std::memcmp(Memory.data(), Want.data(), Memory.size()), 0);
  const size_t ArrayBytes = S.OuterTrips * S.InnerTrips * Bytes;
  const bool Overlap = InAt < OutAt + ArrayBytes && OutAt < InAt + ArrayBytes;
  auto *LoopsRan = reinterpret_cast<const int32_t *>(U->address("loops_ran"));
  ASSERT_NE(LoopsRan, nullptr);
  EXPECT_EQ(*LoopsRan, Count == 0 || Overlap ? 1 : 0);
}

TEST(TransposeNestsTest, TvmsNestIsRewrittenAndTransposes) {
  // Out 24 x 40 from In 40 x 24, separate buffers (Out after In).
  const int64_t R = 24, C = 40;
  expectSameAsLoops(rowsOfOut(R, C), 4, 2 * R * C, 0, 4 * R * C, 1);
  expectSameAsLoops(rowsOfOut(R, C, 1), 4, 2 * R * C, 4 * R * C, 0, 1);
  expectSameAsLoops(rowsOfOut(64, 8, 2), 4, 2 * 64 * 8, 0, 4 * 64 * 8, 1);
}

TEST(TransposeNestsTest, EdgesPastTheBlocksAreCopied) {
  // Rows, columns or both not multiples of 8 (unrolled by 4, and by 1).
  for (auto [R, C] : {std::pair<int64_t, int64_t>{12, 24},
                      {16, 20},
                      {13, 12},
                      {8, 8},
                      {9, 31}}) {
    SCOPED_TRACE(fmt::format("{} x {}", R, C));
    const int64_t Unroll = C % 4 == 0 ? 4 : 1;
    expectSameAsLoops(rowsOfOut(R, C, Unroll), 4, 2 * R * C, 0, 4 * R * C, 1);
    expectSameAsLoops(columnsOfOut(R, C), 4, 2 * R * C, 4 * R * C, 0, 1);
  }
}

TEST(TransposeNestsTest, EitherLoopOrder) {
  expectSameAsLoops(columnsOfOut(16, 32), 4, 2 * 16 * 32, 0, 4 * 16 * 32, 1);
}

TEST(TransposeNestsTest, ElementTypes) {
  for (auto [Elem, Bytes] : {std::pair<const char *, size_t>{"i16", 2},
                             {"half", 2},
                             {"i8", 1},
                             {"double", 8},
                             {"i64", 8}}) {
    SCOPED_TRACE(Elem);
    NestShape S = rowsOfOut(16, 24);
    S.Elem = Elem;
    expectSameAsLoops(S, Bytes, 2 * 16 * 24, 0, Bytes * 16 * 24, 1);
  }
}

TEST(TransposeNestsTest, OverlappingBuffersRunTheLoops) {
  // The same memory, and Out 8 elements past In: the nest's own order.
  const int64_t R = 16, C = 16;
  expectSameAsLoops(rowsOfOut(R, C), 4, R * C, 0, 0, 1);
  expectSameAsLoops(rowsOfOut(R, C), 4, R * C + 8, 0, 4 * 8, 1);
  expectSameAsLoops(rowsOfOut(R, C), 4, R * C + 8, 4 * 8, 0, 1);
}

TEST(TransposeNestsTest, WhatIsNotATransposeStays) {
  const int64_t R = 16, C = 24;
  EXPECT_EQ(rewritten(rowsOfOut(R, C)), 1u);
  NestShape Copy = rowsOfOut(R, C);
  Copy.Load = Copy.Store; // a plain copy
  EXPECT_EQ(rewritten(Copy), 0u);
  NestShape Negated = rowsOfOut(R, C);
  Negated.Op = "fneg";
  EXPECT_EQ(rewritten(Negated), 0u);
  NestShape RowMissing = rowsOfOut(R, C);
  RowMissing.OuterTrips = R - 1;
  EXPECT_EQ(rewritten(RowMissing), 0u);
  NestShape Offset = rowsOfOut(R, C);
  Offset.Load[2] = 1;
  EXPECT_EQ(rewritten(Offset), 0u);
  NestShape Scaled = rowsOfOut(R, C);
  Scaled.Load = {2, 2 * R, 0}; // every other element
  EXPECT_EQ(rewritten(Scaled), 0u);
  EXPECT_EQ(rewritten(rowsOfOut(7, 24)), 0u); // a side shorter than 8
  EXPECT_EQ(rewritten(rowsOfOut(16, 4)), 0u);
  NestShape Bits = rowsOfOut(R, C);
  Bits.Elem = "i1"; // a vector of i1 is packed bits in memory
  EXPECT_EQ(rewritten(Bits), 0u);
  NestShape OneBuffer = rowsOfOut(R, C);
  OneBuffer.OneBuffer = true;
  EXPECT_EQ(rewritten(OneBuffer), 0u);
}

/// A 16 x 16 float transpose nest: %outer (i from 0, back from %latch)
/// continues with `Loops`, which define %j, enter %copy and leave to
/// %exit; %copy copies In[j][i] to Out[i][j] and branches to %after.
std::string controlFlowNest(const std::string &Loops) {
  return R"(
define void @k(ptr %in, ptr %out) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
)" + Loops +
         R"(
copy:
  %l1 = mul i64 %j, 16
  %l = add i64 %l1, %i
  %pl = getelementptr inbounds float, ptr %in, i64 %l
  %v = load float, ptr %pl, align 4
  %s1 = mul i64 %i, 16
  %s = add i64 %s1, %j
  %ps = getelementptr inbounds float, ptr %out, i64 %s
  store float %v, ptr %ps, align 4
  br label %after
exit:
  ret void
}
)";
}

TEST(TransposeNestsTest, NestsThatSkipCopiesStay) {
  // The trip counts are constant, but not every header run copies: the
  // loops must run each copy exactly as often as their headers.
  const std::string Inner =
      "inner:\n"
      "  %j = phi i64 [ 0, %outer ], [ %j.next, %after ]\n";
  const std::string InnerAfterPre =
      "pre:\n  br label %inner\n"
      "inner:\n  %j = phi i64 [ 0, %pre ], [ %j.next, %after ]\n";
  // Block `Name`: the next `Iv`, on to `Head` until 16, then to `Exit`.
  auto Latch = [](const char *Name, const char *Iv, const char *Exit,
                  const char *Head) {
    return fmt::format("{0}:\n  %{1}.next = add i64 %{1}, 1\n"
                       "  %{1}.done = icmp eq i64 %{1}.next, 16\n"
                       "  br i1 %{1}.done, label %{2}, label %{3}\n",
                       Name, Iv, Exit, Head);
  };
  const std::string InnerLatch = Latch("after", "j", "latch", "inner");
  const std::string OuterLatch = Latch("latch", "i", "exit", "outer");
  struct Case {
    const char *What;
    std::string Loops;
    unsigned Rewritten;
  };
  const Case Cases[] = {
      {"the well-formed nest (a check of the helper)",
       "  br label %inner\n" + Inner + "  br label %copy\n" + InnerLatch +
           OuterLatch,
       1},
      {"the inner loop tested at its top: 15 copies a row",
       "  br label %inner\n" + Inner +
           "  %more = icmp ult i64 %j, 15\n"
           "  br i1 %more, label %copy, label %latch\n"
           "after:\n  %j.next = add i64 %j, 1\n  br label %inner\n" +
           OuterLatch,
       0},
      {"a copy under a condition (not for j == 3)",
       "  br label %inner\n" + Inner +
           "  %skip = icmp eq i64 %j, 3\n"
           "  br i1 %skip, label %after, label %copy\n" +
           InnerLatch + OuterLatch,
       0},
      {"the inner loop skipped for i == 5",
       "  %skip = icmp eq i64 %i, 5\n"
       "  br i1 %skip, label %latch, label %pre\n" +
           InnerAfterPre + "  br label %copy\n" + InnerLatch + OuterLatch,
       0},
      {"an early exit from the inner loop before the copy at j == 15",
       "  br label %inner\n" + Inner +
           "  %leave = icmp eq i64 %j, 15\n"
           "  br i1 %leave, label %latch, label %copy\n" +
           InnerLatch + OuterLatch,
       0},
      {"the outer loop tested at its top (TVM's unoptimized loops): 15 rows",
       "  %more = icmp ult i64 %i, 15\n"
       "  br i1 %more, label %pre, label %exit\n" +
           InnerAfterPre + "  br label %copy\n" + InnerLatch +
           "latch:\n  %i.next = add i64 %i, 1\n  br label %outer\n",
       0},
  };
  for (const Case &C : Cases) {
    SCOPED_TRACE(C.What);
    EXPECT_EQ(rewritten(controlFlowNest(C.Loops)), C.Rewritten);
  }
}

/// The transpose nests of `Model`'s bitcode (which must exist).
unsigned rewrittenInModel(const std::string &Model) {
  auto Buffer =
      llvm::MemoryBuffer::getFile((kModels / Model / "model.bc").string());
  if (!Buffer) {
    ADD_FAILURE() << "cannot read " << Model << "/model.bc";
    return 0;
  }
  llvm::LLVMContext Ctx;
  auto M = llvm::parseBitcodeFile((*Buffer)->getMemBufferRef(), Ctx);
  if (!M) {
    ADD_FAILURE() << llvm::toString(M.takeError());
    return 0;
  }
  unsigned N = jit::rewriteTransposeNests(**M);
  EXPECT_FALSE(llvm::verifyModule(**M, &llvm::errs()));
  return N;
}

TEST(TransposeNestsTest, TheModelsTransposesAreFound) {
  for (const char *Model : {"mlp", "llm", "decoder"})
    if (!std::filesystem::exists(kModels / Model / "model.bc"))
      GTEST_SKIP() << "no " << (kModels / Model / "model.bc").string();
  // The mlp's two weight transposes; the llm's five (inlined into their
  // packed entries, which leave them to a return shared with the errors).
  EXPECT_EQ(rewrittenInModel("mlp"), 2u);
  EXPECT_EQ(rewrittenInModel("llm"), 5u);
  EXPECT_EQ(rewrittenInModel("decoder"), 0u);
}

} // namespace
} // namespace vmjit::jittest
