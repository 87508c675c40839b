//===- select_arms.cpp - One math call for the two arms of a select -------===//
//
// See select_arms.h. For a select S and one of its arms, the candidate
// calls are found walking back from the arm through lane-wise arithmetic;
// a call qualifies when everything its value reaches (its "cone") is such
// arithmetic in S's block ending at that arm of S only. The rewrite moves
// both cones, in their order, to just before S (their other operands are
// defined earlier, so they still dominate), puts `select C, P, Q` and the
// one call before them, and replaces both calls by it.
//
//===----------------------------------------------------------------------===//

#include "select_arms.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Local.h"

#include <algorithm>
#include <vector>

namespace vmjit::jit {

using namespace llvm;

namespace {

/// The intrinsics rewritten: elementwise, no side effects, costly.
bool isMathCall(const Instruction *I) {
  const auto *C = dyn_cast<IntrinsicInst>(I);
  if (!C || C->arg_size() != 1)
    return false;
  switch (C->getIntrinsicID()) {
  case Intrinsic::exp:
  case Intrinsic::exp2:
  case Intrinsic::exp10:
  case Intrinsic::log:
  case Intrinsic::log2:
  case Intrinsic::log10:
  case Intrinsic::sin:
  case Intrinsic::cos:
    return true;
  default:
    return false;
  }
}

/// Floating-point arithmetic that combines its operands one lane at a
/// time and does nothing else.
bool isLaneWise(const Instruction *I) {
  switch (I->getOpcode()) {
  case Instruction::FAdd:
  case Instruction::FSub:
  case Instruction::FMul:
  case Instruction::FDiv:
  case Instruction::FRem:
  case Instruction::FNeg:
    return true;
  default:
    return false;
  }
}

/// Everything `Call`'s value reaches, the call first, when that is
/// lane-wise arithmetic in S's block ending at operand `Arm` of S alone;
/// empty otherwise.
SetVector<Instruction *> coneOf(Instruction *Call, SelectInst *S,
                                unsigned Arm) {
  SetVector<Instruction *> Cone;
  Cone.insert(Call);
  for (size_t K = 0; K < Cone.size(); ++K) {
    for (Use &U : Cone[K]->uses()) {
      auto *User = cast<Instruction>(U.getUser());
      if (User == S) {
        if (U.getOperandNo() != Arm)
          return {};
        continue;
      }
      // Before S (the cone moves to just before it), in its block.
      if (User->getParent() != S->getParent() || !isLaneWise(User) ||
          !User->comesBefore(S))
        return {};
      Cone.insert(User);
    }
  }
  return Cone;
}

/// The calls operand `Arm` of S depends on through lane-wise arithmetic
/// of S's block, each with its cone, when the cone qualifies.
std::vector<SetVector<Instruction *>> callsOfArm(SelectInst *S, unsigned Arm) {
  std::vector<SetVector<Instruction *>> Out;
  SetVector<Instruction *> Seen;
  std::vector<Value *> Work = {S->getOperand(Arm)};
  while (!Work.empty()) {
    auto *I = dyn_cast<Instruction>(Work.back());
    Work.pop_back();
    if (!I || I->getParent() != S->getParent() || !Seen.insert(I))
      continue;
    if (isMathCall(I)) {
      SetVector<Instruction *> Cone = coneOf(I, S, Arm);
      if (!Cone.empty())
        Out.push_back(std::move(Cone));
    } else if (isLaneWise(I)) {
      for (Value *Op : I->operands())
        Work.push_back(Op);
    }
  }
  return Out;
}

/// Whether one call can stand for both: the same function, type, flags,
/// attributes and accuracy, and no operand bundles.
bool sameCall(const Instruction *A, const Instruction *B) {
  const auto *CA = cast<IntrinsicInst>(A), *CB = cast<IntrinsicInst>(B);
  return CA->getIntrinsicID() == CB->getIntrinsicID() &&
         CA->getType() == CB->getType() &&
         !(CA->getFastMathFlags() != CB->getFastMathFlags()) &&
         CA->getAttributes() == CB->getAttributes() &&
         CA->getMetadata(LLVMContext::MD_fpmath) ==
             CB->getMetadata(LLVMContext::MD_fpmath) &&
         !CA->hasOperandBundles() && !CB->hasOperandBundles();
}

bool rewrite(SelectInst *S) {
  if (!S->getType()->isFPOrFPVectorTy())
    return false;
  std::vector<SetVector<Instruction *>> T = callsOfArm(S, 1),
                                        F = callsOfArm(S, 2);
  for (SetVector<Instruction *> &CT : T) {
    for (SetVector<Instruction *> &CF : F) {
      Instruction *A = CT[0], *B = CF[0];
      if (!sameCall(A, B))
        continue;
      // Both cones, in block order, just before S.
      std::vector<Instruction *> Moved(CT.begin(), CT.end());
      Moved.insert(Moved.end(), CF.begin(), CF.end());
      std::sort(Moved.begin(), Moved.end(), [](Instruction *X, Instruction *Y) {
        return X->comesBefore(Y);
      });
      Moved.erase(std::unique(Moved.begin(), Moved.end()), Moved.end());
      // Debug records of the moved values would describe them before they
      // are computed, and those of the calls a value of both arms.
      for (Instruction *I : Moved) {
        replaceDbgUsesWithUndef(I);
        I->moveBefore(S);
      }
      auto *Sel = SelectInst::Create(S->getCondition(), A->getOperand(0),
                                     B->getOperand(0), "arm.in", Moved.front());
      Instruction *One = A->clone();
      One->setOperand(0, Sel);
      One->setName("arm.call");
      One->insertAfter(Sel);
      A->replaceAllUsesWith(One);
      B->replaceAllUsesWith(One);
      A->eraseFromParent();
      B->eraseFromParent();
      return true;
    }
  }
  return false;
}

} // namespace

unsigned shareSelectedCalls(Module &M) {
  unsigned N = 0;
  for (Function &Fn : M) {
    std::vector<SelectInst *> Selects;
    for (Instruction &I : instructions(Fn))
      if (auto *S = dyn_cast<SelectInst>(&I))
        Selects.push_back(S);
    for (SelectInst *S : Selects)
      N += rewrite(S);
  }
  return N;
}

} // namespace vmjit::jit
