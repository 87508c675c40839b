//===- transpose_nests.cpp - 2-D transposes rewritten as 8x8 blocks -------===//
//
// See transpose_nests.h. The geometry, in elements: Out is R x C, In is
// C x R, Out[x][y] = In[y][x], so a copy's Out offset is x*C + y and its In
// offset y*R + x. One loop moves x by dx an iteration (Out's stride dx*C,
// In's dx), the other y by dy (Out's stride dy, In's dy*R); the body holds
// dx*dy copies (an unrolled nest), each starting at its own (x0, y0) with
// x0 < dx, y0 < dy. With trip counts N_x*dx = R, N_y*dy = C and distinct
// (x0, y0), the copies write every (x, y) exactly once, from In[y][x].
//
//===----------------------------------------------------------------------===//

#include "transpose_nests.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/Triple.h"

#include <array>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

using namespace llvm;

namespace vmjit::jit {
namespace {

/// The side of the blocks moved through registers, in elements.
constexpr int64_t kBlock = 8;
/// Bounds that keep the geometry's products (and the array's bytes) far
/// from overflow.
constexpr int64_t kMaxExtent = int64_t(1) << 30;
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// An address Base + Start + OuterStep*i + InnerStep*j, in bytes, for the
/// outer loop's iteration i and the inner loop's j.
struct AffineAddress {
  Value *Base;
  int64_t Start, OuterStep, InnerStep;
};

/// One copy of the nest's body.
struct Copy {
  AffineAddress Store, Load;
};

/// The copies of a nest, their element type, and the least alignment its
/// loads and its stores claim.
struct NestBody {
  std::vector<Copy> Copies;
  Type *Elem = nullptr;
  Align LoadAlign, StoreAlign;
};

/// A nest proven a transpose: Out (Rows x Cols) gets In (Cols x Rows)
/// transposed.
struct TransposeNest {
  BasicBlock *Preheader, *Header, *Exiting, *Exit;
  Value *In, *Out;
  Type *Elem;
  int64_t ElemBytes;
  Align InAlign, OutAlign;
  int64_t Rows, Cols;
};

std::optional<int64_t> constantOf(const SCEV *S) {
  if (auto *C = dyn_cast<SCEVConstant>(S))
    if (C->getAPInt().getSignificantBits() <= 40)
      return C->getAPInt().getSExtValue();
  return std::nullopt;
}

/// `Ptr` as Base + an affine function of the two loops' iterations.
std::optional<AffineAddress> affineAddress(ScalarEvolution &SE, Value *Ptr,
                                           const Loop *Outer,
                                           const Loop *Inner) {
  const SCEV *S = SE.getSCEV(Ptr);
  auto *Base = dyn_cast<SCEVUnknown>(SE.getPointerBase(S));
  if (!Base)
    return std::nullopt;
  auto *InnerRec = dyn_cast<SCEVAddRecExpr>(SE.removePointerBase(S));
  if (!InnerRec || InnerRec->getLoop() != Inner || !InnerRec->isAffine())
    return std::nullopt;
  std::optional<int64_t> InnerStep =
      constantOf(InnerRec->getStepRecurrence(SE));
  std::optional<int64_t> OuterStep = 0;
  std::optional<int64_t> Start;
  if (auto *OuterRec = dyn_cast<SCEVAddRecExpr>(InnerRec->getStart())) {
    if (OuterRec->getLoop() != Outer || !OuterRec->isAffine())
      return std::nullopt;
    OuterStep = constantOf(OuterRec->getStepRecurrence(SE));
    Start = constantOf(OuterRec->getStart());
  } else {
    Start = constantOf(InnerRec->getStart());
  }
  if (!InnerStep || !OuterStep || !Start)
    return std::nullopt;
  return AffineAddress{Base->getValue(), *Start, *OuterStep, *InnerStep};
}

/// An instruction of the nest that is neither a copy's load or store: it
/// must touch no memory and have no other effect.
bool isBookkeeping(const Instruction &I) {
  if (isa<DbgInfoIntrinsic>(I))
    return true;
  return !isa<CallBase>(I) && !I.mayReadOrWriteMemory() &&
         !I.mayHaveSideEffects();
}

/// The copies of the nest Outer/Inner: every memory operation a simple
/// load in Inner whose one use is a simple store there, of the same type.
std::optional<NestBody> nestCopies(ScalarEvolution &SE, const Loop *Outer,
                                   const Loop *Inner) {
  NestBody Body;
  std::vector<Copy> &Copies = Body.Copies;
  Type *&Elem = Body.Elem;
  Body.LoadAlign = Body.StoreAlign = Align(uint64_t(1) << 32);
  unsigned Loads = 0;
  for (BasicBlock *BB : Outer->blocks()) {
    const bool InInner = Inner->contains(BB);
    for (Instruction &I : *BB) {
      for (User *U : I.users())
        if (!Outer->contains(cast<Instruction>(U)->getParent()))
          return std::nullopt; // used after the nest
      if (isBookkeeping(I))
        continue;
      auto *Load = dyn_cast<LoadInst>(&I);
      auto *Store = dyn_cast<StoreInst>(&I);
      if (!InInner || (Load && (!Load->isSimple() || !Load->hasOneUse())))
        return std::nullopt;
      if (Load) {
        ++Loads;
        continue;
      }
      if (!Store || !Store->isSimple())
        return std::nullopt;
      auto *Source = dyn_cast<LoadInst>(Store->getValueOperand());
      if (!Source || !Inner->contains(Source->getParent()) ||
          (Elem && Source->getType() != Elem))
        return std::nullopt;
      Elem = Source->getType();
      auto S = affineAddress(SE, Store->getPointerOperand(), Outer, Inner);
      auto L = affineAddress(SE, Source->getPointerOperand(), Outer, Inner);
      if (!S || !L)
        return std::nullopt;
      Copies.push_back({*S, *L});
      Body.LoadAlign = std::min(Body.LoadAlign, Source->getAlign());
      Body.StoreAlign = std::min(Body.StoreAlign, Store->getAlign());
    }
  }
  if (Copies.empty() || Loads != Copies.size())
    return std::nullopt;
  return Body;
}

/// Strides (elements) and trip count of one loop of the nest.
struct LoopWalk {
  int64_t Store, Load, Trips;
};

/// Rows x Cols of Out when loop `X` moves x and `Y` moves y and the copies
/// (offsets in elements) cover the transpose exactly; else nothing.
std::optional<std::pair<int64_t, int64_t>>
transposeShape(const LoopWalk &X, const LoopWalk &Y,
               const std::vector<std::pair<int64_t, int64_t>> &Starts) {
  const int64_t Dx = X.Load, Dy = Y.Store;
  if (Dx <= 0 || Dy <= 0 || Dx > kMaxExtent || Dy > kMaxExtent ||
      Y.Load % Dy != 0 || X.Store % Dx != 0)
    return std::nullopt;
  const int64_t Rows = Y.Load / Dy, Cols = X.Store / Dx;
  if (Rows < kBlock || Cols < kBlock || Rows > kMaxExtent ||
      Cols > kMaxExtent || Rows * Cols > kMaxElements || X.Trips * Dx != Rows ||
      Y.Trips * Dy != Cols || static_cast<int64_t>(Starts.size()) != Dx * Dy)
    return std::nullopt;
  SmallSet<std::pair<int64_t, int64_t>, 16> Seen;
  for (auto [StoreStart, LoadStart] : Starts) {
    if (StoreStart < 0)
      return std::nullopt;
    const int64_t X0 = StoreStart / Cols, Y0 = StoreStart % Cols;
    if (X0 >= Dx || Y0 >= Dy || LoadStart != Y0 * Rows + X0 ||
        !Seen.insert({X0, Y0}).second)
      return std::nullopt;
  }
  return std::make_pair(Rows, Cols);
}

/// Whether every run of `L`'s header runs all of `L`'s blocks (then the
/// trip count is how often each copy of the body runs, and an inner loop
/// runs on every iteration): `L` is left only from its latch, which every
/// block of `L` dominates. Top-tested loops, early exits and conditional
/// blocks fail.
bool runsWholeBodies(const DominatorTree &DT, const Loop *L) {
  BasicBlock *Latch = L->getLoopLatch();
  if (!Latch || L->getExitingBlock() != Latch)
    return false;
  return llvm::all_of(L->blocks(),
                      [&](BasicBlock *BB) { return DT.dominates(BB, Latch); });
}

/// A pointer usable at the end of `Preheader`.
bool availableAt(Value *V, const BasicBlock *Preheader,
                 const DominatorTree &DT) {
  if (!V->getType()->isPointerTy() ||
      V->getType()->getPointerAddressSpace() != 0)
    return false;
  auto *I = dyn_cast<Instruction>(V);
  return !I || DT.dominates(I, Preheader->getTerminator());
}

std::optional<TransposeNest> matchNest(ScalarEvolution &SE,
                                       const DominatorTree &DT,
                                       const DataLayout &DL,
                                       const Loop *Outer) {
  if (Outer->getSubLoops().size() != 1)
    return std::nullopt;
  const Loop *Inner = Outer->getSubLoops().front();
  BasicBlock *Preheader = Outer->getLoopPreheader();
  BasicBlock *Exiting = Outer->getExitingBlock();
  BasicBlock *Exit = Outer->getExitBlock();
  // Loop-simplify form but for dedicated exits: TVM's kernels leave the
  // nest to the block that returns, shared with their error paths.
  if (!Inner->getSubLoops().empty() || !Preheader || !Outer->getLoopLatch() ||
      !Inner->getLoopPreheader() || !Inner->getLoopLatch() || !Exiting || !Exit)
    return std::nullopt;
  auto *Br = dyn_cast<BranchInst>(Preheader->getTerminator());
  if (!Br || Br->isConditional() || !runsWholeBodies(DT, Outer) ||
      !runsWholeBodies(DT, Inner))
    return std::nullopt;
  const int64_t OuterTrips = SE.getSmallConstantTripCount(Outer);
  const int64_t InnerTrips = SE.getSmallConstantTripCount(Inner);
  if (OuterTrips == 0 || InnerTrips == 0)
    return std::nullopt;
  std::optional<NestBody> Body = nestCopies(SE, Outer, Inner);
  if (!Body)
    return std::nullopt;
  Type *Elem = Body->Elem;
  const std::vector<Copy> *Copies = &Body->Copies;
  // Whole bytes: a vector of i1 would be packed bits, not 8 elements.
  const int64_t Bytes = DL.getTypeStoreSize(Elem);
  if (Bytes <= 0 || !isPowerOf2_64(Bytes) ||
      Bytes != int64_t(DL.getTypeAllocSize(Elem)) ||
      int64_t(DL.getTypeSizeInBits(Elem)) != 8 * Bytes ||
      !(Elem->isIntegerTy() || Elem->isFloatingPointTy()))
    return std::nullopt;

  // Every copy walks with the same strides; offsets in elements.
  const Copy &First = Copies->front();
  std::vector<std::pair<int64_t, int64_t>> Starts;
  for (const Copy &C : *Copies) {
    if (C.Store.Base != First.Store.Base || C.Load.Base != First.Load.Base ||
        C.Store.OuterStep != First.Store.OuterStep ||
        C.Store.InnerStep != First.Store.InnerStep ||
        C.Load.OuterStep != First.Load.OuterStep ||
        C.Load.InnerStep != First.Load.InnerStep ||
        C.Store.Start % Bytes != 0 || C.Load.Start % Bytes != 0)
      return std::nullopt;
    Starts.emplace_back(C.Store.Start / Bytes, C.Load.Start / Bytes);
  }
  for (int64_t Step : {First.Store.OuterStep, First.Store.InnerStep,
                       First.Load.OuterStep, First.Load.InnerStep})
    if (Step % Bytes != 0)
      return std::nullopt;
  const LoopWalk OuterWalk{First.Store.OuterStep / Bytes,
                           First.Load.OuterStep / Bytes, OuterTrips};
  const LoopWalk InnerWalk{First.Store.InnerStep / Bytes,
                           First.Load.InnerStep / Bytes, InnerTrips};
  auto Shape = transposeShape(OuterWalk, InnerWalk, Starts);
  if (!Shape)
    Shape = transposeShape(InnerWalk, OuterWalk, Starts);
  Value *In = First.Load.Base, *Out = First.Store.Base;
  if (!Shape || In == Out || !availableAt(In, Preheader, DT) ||
      !availableAt(Out, Preheader, DT))
    return std::nullopt;
  TransposeNest N;
  N.Preheader = Preheader;
  N.Header = Outer->getHeader();
  N.Exiting = Exiting;
  N.Exit = Exit;
  N.In = In;
  N.Out = Out;
  N.Elem = Elem;
  N.ElemBytes = Bytes;
  N.InAlign = Body->LoadAlign;
  N.OutAlign = Body->StoreAlign;
  std::tie(N.Rows, N.Cols) = *Shape;
  return N;
}

/// Transposes the 8 vectors `R` (rows of a block) in place, in three
/// rounds of two-input shuffles (unpack, pair, halves).
void transposeBlock(IRBuilder<> &B, std::array<Value *, kBlock> &R) {
  using Mask = std::array<int, kBlock>;
  auto Round = [&](const Mask &Lo, const Mask &Hi, unsigned Span) {
    std::array<Value *, kBlock> Next;
    for (unsigned Group = 0; Group < kBlock; Group += 2 * Span)
      for (unsigned K = 0; K < Span; ++K) {
        Value *A = R[Group + K], *C = R[Group + K + Span];
        Next[Group + 2 * K] = B.CreateShuffleVector(A, C, Lo);
        Next[Group + 2 * K + 1] = B.CreateShuffleVector(A, C, Hi);
      }
    R = Next;
  };
  // Unpack rows 2k and 2k+1; then pairs of pairs; then 128-bit halves.
  Round({0, 8, 1, 9, 4, 12, 5, 13}, {2, 10, 3, 11, 6, 14, 7, 15}, 1);
  Round({0, 1, 8, 9, 4, 5, 12, 13}, {2, 3, 10, 11, 6, 7, 14, 15}, 2);
  Round({0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}, 4);
  // The last round leaves columns 0 4 1 5 2 6 3 7 in R.
  R = {R[0], R[2], R[4], R[6], R[1], R[3], R[5], R[7]};
}

/// Emits `for (I = Begin; I < End; I += Step) Body(I)` where `B` inserts
/// (its block ends in the loop) and leaves `B` after the loop; nothing when
/// the range is empty. `Body` may emit loops of its own.
void emitLoop(IRBuilder<> &B, BasicBlock *Before, int64_t Begin, int64_t End,
              int64_t Step, const Twine &Name,
              function_ref<void(Value *)> Body) {
  if (Begin >= End)
    return;
  LLVMContext &Ctx = B.getContext();
  Function *F = Before->getParent();
  BasicBlock *Entry = B.GetInsertBlock();
  auto *Head = BasicBlock::Create(Ctx, Name, F, Before);
  B.CreateBr(Head);
  B.SetInsertPoint(Head);
  PHINode *I = B.CreatePHI(B.getInt64Ty(), 2, Name);
  I->addIncoming(B.getInt64(Begin), Entry);
  Body(I);
  Value *Next = B.CreateAdd(I, B.getInt64(Step));
  I->addIncoming(Next, B.GetInsertBlock());
  auto *After = BasicBlock::Create(Ctx, Name + ".end", F, Before);
  B.CreateCondBr(B.CreateICmpSLT(Next, B.getInt64(End)), Head, After);
  B.SetInsertPoint(After);
}

/// The code that replaces the nest, where `B` inserts: In's rows y and
/// columns x in 8x8 blocks, then the columns past the last whole block
/// (all rows) and the rows past it (the other columns) element by element.
void emitTranspose(IRBuilder<> &B, const TransposeNest &N) {
  auto At = [&](Value *Base, Value *Row, int64_t RowLength, Value *Col) {
    Value *Index = B.CreateAdd(B.CreateMul(Row, B.getInt64(RowLength)), Col);
    return B.CreateGEP(N.Elem, Base, Index);
  };
  auto *Vec = FixedVectorType::get(N.Elem, kBlock);
  const int64_t BlockRows = N.Rows / kBlock * kBlock;
  const int64_t BlockCols = N.Cols / kBlock * kBlock;
  auto Block = [&](Value *Y, Value *X) {
    std::array<Value *, kBlock> R;
    for (int64_t K = 0; K < kBlock; ++K)
      R[K] = B.CreateAlignedLoad(
          Vec, At(N.In, B.CreateAdd(Y, B.getInt64(K)), N.Rows, X), N.InAlign);
    transposeBlock(B, R);
    for (int64_t K = 0; K < kBlock; ++K)
      B.CreateAlignedStore(R[K],
                           At(N.Out, B.CreateAdd(X, B.getInt64(K)), N.Cols, Y),
                           N.OutAlign);
  };
  auto Element = [&](Value *Y, Value *X) {
    Value *V = B.CreateAlignedLoad(N.Elem, At(N.In, Y, N.Rows, X), N.InAlign);
    B.CreateAlignedStore(V, At(N.Out, X, N.Cols, Y), N.OutAlign);
  };
  BasicBlock *Before = N.Header;
  emitLoop(B, Before, 0, BlockCols, kBlock, "transpose.y", [&](Value *Y) {
    emitLoop(B, Before, 0, BlockRows, kBlock, "transpose.x",
             [&](Value *X) { Block(Y, X); });
  });
  if (BlockRows < N.Rows)
    emitLoop(B, Before, 0, N.Cols, 1, "transpose.edge.y", [&](Value *Y) {
      emitLoop(B, Before, BlockRows, N.Rows, 1, "transpose.edge.x",
               [&](Value *X) { Element(Y, X); });
    });
  emitLoop(B, Before, BlockCols, N.Cols, 1, "transpose.tail.y", [&](Value *Y) {
    emitLoop(B, Before, 0, BlockRows, 1, "transpose.tail.x",
             [&](Value *X) { Element(Y, X); });
  });
}

/// The rewritten transpose in front of the nest: taken when In and Out do
/// not overlap; the nest stays for when they do.
void rewrite(const TransposeNest &N) {
  LLVMContext &Ctx = N.Header->getContext();
  auto *Start =
      BasicBlock::Create(Ctx, "transpose", N.Header->getParent(), N.Header);
  Instruction *Term = N.Preheader->getTerminator();
  IRBuilder<> B(Term);
  B.SetCurrentDebugLocation(Term->getDebugLoc());
  Type *I64 = B.getInt64Ty();
  const int64_t Bytes = N.Rows * N.Cols * N.ElemBytes;
  Value *InAt = B.CreatePtrToInt(N.In, I64);
  Value *OutAt = B.CreatePtrToInt(N.Out, I64);
  // |Out - In| >= Bytes, computed without wrapping around.
  Value *Distance =
      B.CreateSelect(B.CreateICmpUGE(OutAt, InAt), B.CreateSub(OutAt, InAt),
                     B.CreateSub(InAt, OutAt));
  Value *Apart =
      B.CreateICmpUGE(Distance, B.getInt64(Bytes), "transpose.apart");
  B.CreateCondBr(Apart, Start, N.Header);
  Term->eraseFromParent();

  B.SetInsertPoint(Start);
  emitTranspose(B, N);
  B.CreateBr(N.Exit);
  // The exit's phis take from the new code what they take from the nest
  // (values from before it: nothing of the nest is used after it).
  for (PHINode &Phi : N.Exit->phis())
    Phi.addIncoming(Phi.getIncomingValueForBlock(N.Exiting),
                    B.GetInsertBlock());
}

} // namespace

unsigned rewriteTransposeNests(Module &M) {
  TargetLibraryInfoImpl TLII{Triple(M.getTargetTriple())};
  unsigned Count = 0;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    std::vector<TransposeNest> Nests;
    {
      DominatorTree DT(F);
      LoopInfo LI(DT);
      TargetLibraryInfo TLI(TLII, &F);
      AssumptionCache AC(F);
      ScalarEvolution SE(F, TLI, AC, DT, LI);
      for (const Loop *L : LI.getLoopsInPreorder())
        if (auto N = matchNest(SE, DT, M.getDataLayout(), L))
          Nests.push_back(*N);
    }
    // Nests are disjoint, and a rewrite changes only its own preheader.
    for (const TransposeNest &N : Nests)
      rewrite(N);
    Count += Nests.size();
  }
  return Count;
}

} // namespace vmjit::jit
