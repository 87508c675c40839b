//===- direct_context.cpp - A direct entry's context kept in values -------===//

#include "direct_context.h"
#include "context_layout.h"
#include "direct_call.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include <cstdint>
#include <utility>

using namespace llvm;

namespace vmjit::jit {

namespace {

/// The constant offset of `P` from the object it points into, and that
/// object.
std::pair<const Value *, int64_t> baseAndOffset(const Value *P,
                                                const DataLayout &DL) {
  APInt Off(64, 0);
  const Value *Base = P->stripAndAccumulateConstantOffsets(DL, Off, true);
  return {Base, Off.getSExtValue()};
}

/// The uses of a context alloca, by what becomes of them.
struct ContextUses {
  SmallVector<std::pair<LoadInst *, Value *>, 8> Loads; ///< and their value
  SmallVector<CallInst *, 4> DirectCalls;
  SmallVector<CallInst *, 8> Readers; ///< calls that get the fields
};

class UseScan {
public:
  UseScan(AllocaInst *Ctx, ArrayRef<StoreInst *> Fields, StoreInst *ErrorPC)
      : Ctx(Ctx), DL(Ctx->getModule()->getDataLayout()) {
    Own.insert(ErrorPC);
    for (StoreInst *S : Fields) {
      Own.insert(S);
      ByOffset[baseAndOffset(S->getPointerOperand(), DL).second] =
          S->getValueOperand();
    }
  }

  /// Sorts every use of Ctx into Out; false at a use it does not know.
  bool scan(ContextUses &Out) {
    SmallVector<std::pair<Value *, int64_t>, 8> Work{{Ctx, 0}};
    while (!Work.empty()) {
      auto [P, Off] = Work.pop_back_val();
      for (User *U : P->users())
        if (!sort(U, P, Off, Work, Out))
          return false;
    }
    return true;
  }

private:
  bool sort(User *U, Value *P, int64_t Off,
            SmallVectorImpl<std::pair<Value *, int64_t>> &Work,
            ContextUses &Out) {
    if (auto *GEP = dyn_cast<GetElementPtrInst>(U)) {
      APInt A(64, 0);
      if (GEP->getPointerOperand() != P ||
          !GEP->accumulateConstantOffset(DL, A))
        return false;
      Work.push_back({GEP, Off + A.getSExtValue()});
      return true;
    }
    if (auto *L = dyn_cast<LoadInst>(U)) {
      // The sites of a frame are set by the allocation helpers: kept as
      // they are.
      auto It = ByOffset.find(Off);
      Type *Ty = L->getType();
      if (Off == kOffsetSites || It == ByOffset.end() || !L->isSimple() ||
          !(Ty->isPointerTy() || Ty->isIntegerTy(64)))
        return false;
      Out.Loads.push_back({L, It->second});
      return true;
    }
    if (auto *S = dyn_cast<StoreInst>(U)) {
      // The address itself stored escapes; the code may store only the
      // error pc.
      return S->getPointerOperand() == P &&
             (Own.count(S) || Off == kOffsetErrorPC);
    }
    if (auto *Call = dyn_cast<CallInst>(U)) {
      if (P != Ctx || Call->getCalledOperand() == P)
        return false;
      unsigned Passed = 0;
      for (Value *A : Call->args())
        Passed += A == Ctx;
      if (Call->getMetadata(kDirectCallMetadata) && Passed == 1 &&
          Call->getArgOperand(0) == Ctx)
        Out.DirectCalls.push_back(Call);
      else if (!is_contained(Out.Readers, Call))
        Out.Readers.push_back(Call);
      return true;
    }
    return false;
  }

  AllocaInst *Ctx;
  const DataLayout &DL;
  SmallPtrSet<StoreInst *, 16> Own;
  DenseMap<int64_t, Value *> ByOffset;
};

/// Stores field `S` before `At`. A field that is a copy of the root's
/// (a load of the same offset from `Root`) is loaded again there rather
/// than kept live across the code's calls.
void storeFieldBefore(StoreInst *S, Value *Root, Instruction *At,
                      const DataLayout &DL) {
  auto *Copy = cast<StoreInst>(S->clone());
  Copy->insertBefore(At);
  auto *L = dyn_cast<LoadInst>(S->getValueOperand());
  if (!L || baseAndOffset(L->getPointerOperand(), DL) !=
                std::make_pair(static_cast<const Value *>(Root),
                               baseAndOffset(S->getPointerOperand(), DL).second))
    return;
  auto *Again = cast<LoadInst>(L->clone());
  Again->insertBefore(Copy);
  Copy->setOperand(0, Again);
}

/// V as a value of type `Ty` (a pointer or an i64), before `At`.
Value *asType(Value *V, Type *Ty, Instruction *At) {
  if (V->getType() == Ty)
    return V;
  if (Ty->isPointerTy())
    return new IntToPtrInst(V, Ty, "", At->getIterator());
  return new PtrToIntInst(V, Ty, "", At->getIterator());
}

} // namespace

bool keepContextOutOfMemory(AllocaInst *Ctx, Value *Root,
                            const ContextFill &Fill) {
  const std::vector<StoreInst *> &Fields = Fill.Fields;
  ContextUses Uses;
  if (!UseScan(Ctx, Fields, Fill.ErrorPC).scan(Uses))
    return false;
  for (auto [L, V] : Uses.Loads) {
    L->replaceAllUsesWith(asType(V, L->getType(), L));
    L->eraseFromParent();
  }
  for (CallInst *Call : Uses.DirectCalls)
    Call->setArgOperand(0, Root);
  const DataLayout &DL = Ctx->getModule()->getDataLayout();
  for (CallInst *Call : Uses.Readers) {
    for (StoreInst *S : Fields)
      storeFieldBefore(S, Root, Call, DL);
    if (Call != Fill.FrameLine)
      Fill.ErrorPC->clone()->insertBefore(Call);
  }
  for (StoreInst *S : Fields)
    S->eraseFromParent();
  Fill.ErrorPC->eraseFromParent();
  return true;
}

} // namespace vmjit::jit
