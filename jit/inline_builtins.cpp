//===- inline_builtins.cpp - Special builtins inline ----------------------===//
//
// Tier 2's inline forms of the special builtins (vm/special_builtins.h):
// a guarded fast path each, the call as the fallback.
//
//===----------------------------------------------------------------------===//

#include "function_lowering.h"

#include <iterator>

namespace vmjit::jit::lower {

namespace {

/// The highest heap slot a match_shape call matchShapeInlinable accepts
/// stores or reads (StoreToHeap, AssertEqualToLoad), or -1.
int64_t matchShapeMaxSlot(InstrView I) {
  int64_t Max = -1;
  for (int64_t D = 0; D < I.callArg(2).value(); ++D) {
    const int64_t Code = I.callArg(3 + 2 * D).value();
    if (matchShapeUsesHeap(Code))
      Max = std::max(Max, I.callArg(4 + 2 * D).value());
  }
  return Max;
}

/// The int64 and float64 predicates of the scalar.* comparisons. Float
/// comparisons are ordered (false with a NaN) except `ne` (true with a
/// NaN), as in C++ and the interpreter's kernels.
std::optional<std::pair<CmpInst::Predicate, CmpInst::Predicate>>
comparisonPredicates(SpecialBuiltin W) {
  std::optional<scalar::Op> O = scalarOpOf(W);
  if (!O || !scalar::isComparison(*O))
    return std::nullopt;
  switch (*O) {
  case scalar::Op::Lt:
    return {{CmpInst::ICMP_SLT, CmpInst::FCMP_OLT}};
  case scalar::Op::Le:
    return {{CmpInst::ICMP_SLE, CmpInst::FCMP_OLE}};
  case scalar::Op::Gt:
    return {{CmpInst::ICMP_SGT, CmpInst::FCMP_OGT}};
  case scalar::Op::Ge:
    return {{CmpInst::ICMP_SGE, CmpInst::FCMP_OGE}};
  case scalar::Op::Eq:
    return {{CmpInst::ICMP_EQ, CmpInst::FCMP_OEQ}};
  default:
    return {{CmpInst::ICMP_NE, CmpInst::FCMP_UNE}};
  }
}

} // namespace

/// check_tensor_info's guard, ending in a branch to Pass (x is a tensor of
/// the rank and dtype asked for, the text a str or None: the builtin would
/// return x) or to Fail (anything else: the call raises the error). The
/// insertion point is left in Pass.
void FunctionLowering::emitCheckTensorInfo(int64_t PC, InstrView I,
                                           BasicBlock *Pass, BasicBlock *Fail) {
  const int64_t N = I.callNumArgs();
  // The kinds of the rank, the dtype and the text (constants when they
  // are immediates or constants of the pool).
  Value *Kinds =
      B.CreateAnd(argTypeIn(I.callArg(1), {kVMJITInt}),
                  argTypeIn(I.callArg(N - 1), {kVMJITNone, kVMJITStr,
                                               kVMJITSmallStr, kVMJITRawStr}));
  if (N == 4)
    Kinds = B.CreateAnd(Kinds,
                        argTypeIn(I.callArg(2), {kVMJITNone, kVMJITDataType}));
  if (const uint64_t W = checkedTensorWord(Exe, I);
      W && tensorFact(I.callArg(0)) == W) {
    // x is known to be such a tensor here (a guard or a check before):
    // only those kinds are left.
    B.CreateCondBr(Kinds, Pass, Fail, Likely);
    B.SetInsertPoint(Pass);
    return;
  }
  Val X = evalArg(I.callArg(0));
  Kinds =
      B.CreateAnd(Kinds, B.CreateICmpEQ(typeOf(X), B.getInt32(kVMJITTensor)));
  BasicBlock *Fields = BasicBlock::Create(C, fmt::format("i{}.fields", PC), Fn);
  B.CreateCondBr(Kinds, Fields, Fail, Likely);
  // The tensor's rank (any when ndim is -1) and dtype (any when None).
  // The arguments are read again: in flat functions no value lives across
  // blocks.
  B.SetInsertPoint(Fields);
  X = evalArg(I.callArg(0));
  Val NDim = evalArg(I.callArg(1));
  std::optional<Val> DType;
  if (N == 4)
    DType = evalArg(I.callArg(2));
  Value *Obj = B.CreateIntToPtr(X.Payload, Ptr);
  Value *Rank = B.CreateSExt(
      B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorNDim), Align(4)), I64);
  Value *Ok = B.CreateOr(B.CreateICmpEQ(NDim.Payload, B.getInt64(-1)),
                         B.CreateICmpEQ(Rank, NDim.Payload));
  if (DType) {
    Value *Have =
        B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorDType), Align(4));
    Ok = B.CreateAnd(
        Ok,
        B.CreateOr(B.CreateICmpEQ(typeOf(*DType), B.getInt32(kVMJITNone)),
                   B.CreateICmpEQ(Have, B.CreateTrunc(DType->Payload, I32))));
  }
  B.CreateCondBr(Ok, Pass, Fail, Likely);
  B.SetInsertPoint(Pass);
}

/// Whether heap `Heap`, a tensor, is what the shape builtins take as the
/// heap (heapArg: a compact rank-1 int64 CPU tensor; here without
/// strides) with a slot at MaxSlot (when not negative): loads and compares
/// in the current block.
Value *FunctionLowering::heapUsable(Val Heap, int64_t MaxSlot) {
  Value *H = B.CreateIntToPtr(Heap.Payload, Ptr);
  auto Field = [&](Type *Ty, int64_t Offset) {
    return B.CreateAlignedLoad(Ty, bytePtr(H, kTensorDLTensorOffset + Offset),
                               Align(Ty == Ptr ? 8 : 4));
  };
  uint32_t Int64;
  const DLDataType I64Type{kDLInt, 64, 1};
  std::memcpy(&Int64, &I64Type, 4);
  Value *Len =
      B.CreateAlignedLoad(I64, Field(Ptr, offsetof(DLTensor, shape)), Align(8));
  return B.CreateAnd(
      B.CreateAnd(
          B.CreateICmpEQ(Field(I32, offsetof(DLTensor, dtype)),
                         B.getInt32(Int64)),
          B.CreateICmpEQ(Field(I32, offsetof(DLTensor, ndim)), B.getInt32(1))),
      B.CreateAnd(
          B.CreateAnd(B.CreateIsNull(Field(Ptr, offsetof(DLTensor, strides))),
                      B.CreateICmpEQ(Field(I32, offsetof(DLTensor, device)),
                                     B.getInt32(kDLCPU))),
          B.CreateICmpSGT(Len, B.getInt64(MaxSlot))));
}

/// Pointer field `Offset` of the frame's allocation site at instruction PC
/// (NativeContext::Sites, which the caller checked is set), loaded in the
/// current block.
Value *FunctionLowering::siteField(int64_t PC, int64_t Offset) {
  Value *Sites =
      B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetSites), Align(8));
  Value *Site =
      bytePtr(Sites, static_cast<int64_t>(sizeof(vm::AllocSite)) * PC);
  return B.CreateAlignedLoad(Ptr, bytePtr(Site, Offset), Align(8));
}

/// Ends the current block in the heap argument's guard: a tensor goes to
/// Pass when heapUsable accepts it, to Fail otherwise; anything else (the
/// caller's kind check let only None through) goes to Pass.
void FunctionLowering::emitHeapGuard(int64_t PC, Arg HeapArg, int64_t MaxSlot,
                                     BasicBlock *Pass, BasicBlock *Fail) {
  BasicBlock *Fields = BasicBlock::Create(C, fmt::format("i{}.heap", PC), Fn);
  B.CreateCondBr(
      B.CreateICmpEQ(typeOf(evalArg(HeapArg)), B.getInt32(kVMJITTensor)),
      Fields, Pass, Likely);
  B.SetInsertPoint(Fields);
  B.CreateCondBr(heapUsable(evalArg(HeapArg), MaxSlot), Pass, Fail, Likely);
}

/// The first slot of heap `Heap` (a tensor heapUsable accepted).
Value *FunctionLowering::heapSlots(Val Heap) {
  Value *H = B.CreateIntToPtr(Heap.Payload, Ptr);
  Value *Data = B.CreateAlignedLoad(
      Ptr, bytePtr(H, kTensorDLTensorOffset + offsetof(DLTensor, data)),
      Align(8));
  Value *Offset = B.CreateAlignedLoad(
      I64, bytePtr(H, kTensorDLTensorOffset + offsetof(DLTensor, byte_offset)),
      Align(8));
  return B.CreateGEP(B.getInt8Ty(), Data, Offset);
}

/// match_shape's guard for a call matchShapeInlinable accepts, ending in a
/// branch to Pass (every check holds: the builtin would return None, and
/// the heap slots of code 1 are written) or to Fail (the call, which
/// raises; any slot written already it writes again with the same value).
/// The insertion point is left in Pass.
void FunctionLowering::emitMatchShape(int64_t PC, InstrView I, BasicBlock *Pass,
                                      BasicBlock *Fail) {
  const int64_t N = I.callNumArgs();
  const int64_t Dims = I.callArg(2).value();
  const int64_t MaxSlot = matchShapeMaxSlot(I);
  Val X = evalArg(I.callArg(0)), Heap = evalArg(I.callArg(1));
  // The heap: a tensor, or None when no slot is used.
  Value *HeapKind = MaxSlot >= 0
                        ? B.CreateICmpEQ(typeOf(Heap), B.getInt32(kVMJITTensor))
                        : typeIn(typeOf(Heap), {kVMJITNone, kVMJITTensor});
  // x known to be a tensor of that rank (tensor_facts.h) needs neither
  // check.
  const uint64_t Known = tensorFact(I.callArg(0));
  const bool RankKnown = Known && vm::feedback::rankOf(Known) == Dims;
  Value *Kinds = B.CreateAnd(
      HeapKind,
      argTypeIn(I.callArg(N - 1), {kVMJITStr, kVMJITSmallStr, kVMJITRawStr}));
  if (!RankKnown)
    Kinds =
        B.CreateAnd(Kinds, B.CreateICmpEQ(typeOf(X), B.getInt32(kVMJITTensor)));
  BasicBlock *Fields = BasicBlock::Create(C, fmt::format("i{}.dims", PC), Fn);
  B.CreateCondBr(Kinds, Fields, Fail, Likely);
  // The rank, then the heap, then each dimension against its immediate or
  // its slot. The arguments are read again in each block: in flat
  // functions no value lives across blocks.
  B.SetInsertPoint(Fields);
  Value *Obj = B.CreateIntToPtr(evalArg(I.callArg(0)).Payload, Ptr);
  BasicBlock *Values = BasicBlock::Create(C, fmt::format("i{}.vals", PC), Fn);
  BasicBlock *RankOk = BasicBlock::Create(C, fmt::format("i{}.rank", PC), Fn);
  if (RankKnown) {
    B.CreateBr(RankOk);
  } else {
    Value *Rank =
        B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorNDim), Align(4));
    B.CreateCondBr(B.CreateICmpEQ(Rank, B.getInt32(static_cast<int32_t>(Dims))),
                   RankOk, Fail, Likely);
  }
  B.SetInsertPoint(RankOk);
  emitHeapGuard(PC, I.callArg(1), MaxSlot, Values, Fail);
  B.SetInsertPoint(Values);
  Obj = B.CreateIntToPtr(evalArg(I.callArg(0)).Payload, Ptr);
  Value *Shape =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetTensorShape), Align(8));
  Value *Slots = MaxSlot >= 0 ? heapSlots(evalArg(I.callArg(1))) : nullptr;
  Value *All = B.getTrue();
  for (int64_t D = 0; D < Dims; ++D) {
    const auto Code = static_cast<MatchShapeCode>(I.callArg(3 + 2 * D).value());
    const int64_t Imm = I.callArg(4 + 2 * D).value();
    if (Code == MatchShapeCode::NoOp)
      continue;
    Value *Dim = B.CreateAlignedLoad(I64, bytePtr(Shape, 8 * D), Align(8));
    if (Code == MatchShapeCode::StoreToHeap) {
      B.CreateAlignedStore(Dim, bytePtr(Slots, 8 * Imm), Align(8));
      continue;
    }
    Value *Want =
        Code == MatchShapeCode::AssertEqualToImm
            ? static_cast<Value *>(B.getInt64(Imm))
            : B.CreateAlignedLoad(I64, bytePtr(Slots, 8 * Imm), Align(8));
    All = B.CreateAnd(All, B.CreateICmpEQ(Dim, Want));
  }
  B.CreateCondBr(All, Pass, Fail, Likely);
  B.SetInsertPoint(Pass);
}

/// AllocSites::makeShape's hit inline, for a call makeShapeInlinable
/// accepts: a branch to Pass when the site's shape is held by no one else,
/// has the rank asked for and its dimensions in the object, and the heap
/// is usable (None when no slot is read), with the dimensions written into
/// it; to Fail (the call through the site) otherwise. Returns the shape,
/// with its new reference, in Pass (the insertion point).
Val FunctionLowering::emitMakeShapeHit(int64_t PC, InstrView I,
                                       BasicBlock *Pass, BasicBlock *Fail) {
  const int64_t Dims = I.callArg(1).value();
  int64_t MaxSlot = -1;
  for (int64_t D = 0; D < Dims; ++D)
    if (I.callArg(2 + 2 * D).value() ==
        static_cast<int64_t>(MakeShapeCode::LoadShape))
      MaxSlot = std::max(MaxSlot, I.callArg(3 + 2 * D).value());
  auto Shape = [&] { return siteField(PC, kOffsetSiteObj); };
  auto Block = [&](const char *What) {
    return BasicBlock::Create(C, fmt::format("i{}.{}", PC, What), Fn);
  };
  // The frame's sites (null until its first call through a site sets
  // them), the heap's kind and the site's shape.
  Value *Sites =
      B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetSites), Align(8));
  Value *HeapType = typeOf(evalArg(I.callArg(0)));
  Value *Kinds = B.CreateAnd(
      B.CreateIsNotNull(Sites),
      MaxSlot >= 0 ? B.CreateICmpEQ(HeapType, B.getInt32(kVMJITTensor))
                   : typeIn(HeapType, {kVMJITNone, kVMJITTensor}));
  BasicBlock *HasSite = Block("site");
  B.CreateCondBr(Kinds, HasSite, Fail, Likely);
  B.SetInsertPoint(HasSite);
  BasicBlock *Count = Block("count");
  B.CreateCondBr(B.CreateIsNotNull(Shape()), Count, Fail, Likely);
  // Held by the site alone (acquire, as combinedCount), of rank n, its
  // dimensions in the object.
  B.SetInsertPoint(Count);
  Value *Sh = Shape();
  LoadInst *Refs = B.CreateAlignedLoad(I64, Sh, Align(8));
  Refs->setAtomic(AtomicOrdering::Acquire);
  Value *Data = B.CreateAlignedLoad(
      Ptr, bytePtr(Sh, ShapeObjLayout::CellOffset), Align(8));
  Value *Size = B.CreateAlignedLoad(
      I64, bytePtr(Sh, ShapeObjLayout::CellOffset + 8), Align(8));
  Value *Mine = B.CreateAnd(
      B.CreateICmpEQ(Refs, B.getInt64(vm::kSoleReference)),
      B.CreateAnd(
          B.CreateICmpEQ(Size, B.getInt64(Dims)),
          B.CreateICmpEQ(Data, bytePtr(Sh, ShapeObjLayout::InlineOffset))));
  BasicBlock *Write = Block("write"), *Heap = Block("heapkind");
  B.CreateCondBr(Mine, Heap, Fail, Likely);
  B.SetInsertPoint(Heap);
  emitHeapGuard(PC, I.callArg(0), MaxSlot, Write, Fail);
  // The dimensions written, the count raised by a store (the site holds
  // every reference).
  B.SetInsertPoint(Write);
  Sh = Shape();
  Value *Slots = MaxSlot >= 0 ? heapSlots(evalArg(I.callArg(0))) : nullptr;
  for (int64_t D = 0; D < Dims; ++D) {
    const int64_t Imm = I.callArg(3 + 2 * D).value();
    Value *Dim =
        I.callArg(2 + 2 * D).value() ==
                static_cast<int64_t>(MakeShapeCode::UseImm)
            ? static_cast<Value *>(B.getInt64(Imm))
            : B.CreateAlignedLoad(I64, bytePtr(Slots, 8 * Imm), Align(8));
    B.CreateAlignedStore(Dim, bytePtr(Sh, ShapeObjLayout::InlineOffset + 8 * D),
                         Align(8));
  }
  StoreInst *Raised =
      B.CreateAlignedStore(B.getInt64(vm::kSoleReference + 1), Sh, Align(8));
  Raised->setAtomic(AtomicOrdering::Monotonic);
  B.CreateBr(Pass);
  B.SetInsertPoint(Pass);
  return {B.getInt64(kVMJITShape), B.CreatePtrToInt(Shape(), I64)};
}

/// vm::reusedConstantView inline, for a call allocTensorHitInlinable
/// accepts: a branch to Pass when the site's view can be handed out again,
/// to Fail (the call through the site) otherwise. Returns the view, with
/// its new reference, in Pass (the insertion point). Each block reads
/// what it needs again (flat functions keep no value across blocks).
Val FunctionLowering::emitAllocTensorHit(int64_t PC, InstrView I,
                                         BasicBlock *Pass, BasicBlock *Fail) {
  auto View = [&] { return siteField(PC, kOffsetSiteObj); };
  // The frame's sites (null until its first alloc_tensor call sets them).
  Value *Sites =
      B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetSites), Align(8));
  BasicBlock *HasSites = BasicBlock::Create(C, fmt::format("i{}.site", PC), Fn);
  B.CreateCondBr(B.CreateIsNotNull(Sites), HasSites, Fail, Likely);
  // A view, and the storage argument the object it lives in.
  B.SetInsertPoint(HasSites);
  Value *Storage = B.CreatePtrToInt(siteField(PC, kOffsetSiteStorage), I64);
  Val S = evalArg(I.callArg(0));
  Value *Same = B.CreateAnd(
      B.CreateAnd(
          B.CreateIsNotNull(View()),
          B.CreateICmpUGE(typeOf(S), B.getInt32(kVMJITStaticObjectBegin))),
      B.CreateICmpEQ(S.Payload, Storage));
  BasicBlock *Count = BasicBlock::Create(C, fmt::format("i{}.count", PC), Fn);
  B.CreateCondBr(Same, Count, Fail, Likely);
  // Only the site holds the view (acquire: a last reference may have gone
  // on another thread); then it holds every reference, and the new one is
  // a plain store (Object::incRefExclusive).
  B.SetInsertPoint(Count);
  LoadInst *Refs = B.CreateAlignedLoad(I64, View(), Align(8));
  Refs->setAtomic(AtomicOrdering::Acquire);
  B.CreateCondBr(B.CreateICmpEQ(Refs, B.getInt64(vm::kSoleReference)), Pass,
                 Fail, Likely);
  B.SetInsertPoint(Pass);
  Value *T = View();
  StoreInst *Raised =
      B.CreateAlignedStore(B.getInt64(vm::kSoleReference + 1), T, Align(8));
  Raised->setAtomic(AtomicOrdering::Monotonic);
  return {B.getInt64(kVMJITTensor), B.CreatePtrToInt(T, I64)};
}

//===----------------------------------------------------------------------===//
// The emitters, a row per special builtin
//===----------------------------------------------------------------------===//

namespace {

/// How tier 2 emits one special builtin's inline form: Guarded ones get
/// the fast, slow (the call) and join blocks; the others (a register
/// clear, a copy) replace the call whole. Null: no inline form.
struct InlineEmitter {
  SpecialBuiltin Id;
  bool Guarded;
  void (FunctionLowering::*Emit)(InlinePaths &P);
};

using FL = FunctionLowering;

constexpr InlineEmitter kInlineEmitters[] = {
    {SpecialBuiltin::None, false, nullptr},
    {SpecialBuiltin::Copy, false, &FL::inlineCopy},
    {SpecialBuiltin::ReadIfCond, true, &FL::inlineReadIfCond},
    {SpecialBuiltin::TupleGetItem, true, &FL::inlineTupleGetItem},
    {SpecialBuiltin::NullValue, false, &FL::inlineNullValue},
#define VMJIT_SCALAR_EMITTER(Enum, Name, Arity)                                \
  {SpecialBuiltin::Scalar##Enum, true,                                         \
   Arity == 1 ? &FL::inlineScalarUnary : &FL::inlineScalarBinary},
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_EMITTER)
#undef VMJIT_SCALAR_EMITTER
        {SpecialBuiltin::CheckTensorInfo, true, &FL::inlineCheckTensorInfo},
    {SpecialBuiltin::MatchShape, true, &FL::inlineMatchShape},
    {SpecialBuiltin::AllocTensor, true, &FL::inlineAllocTensor},
    {SpecialBuiltin::AllocStorage, false, nullptr},
    {SpecialBuiltin::MakeShape, true, &FL::inlineMakeShape},
};

constexpr bool emittersInOrder() {
  if (std::size(kInlineEmitters) != vm::kNumSpecialBuiltins)
    return false;
  for (int K = 0; K < vm::kNumSpecialBuiltins; ++K)
    if (static_cast<int>(kInlineEmitters[K].Id) != K)
      return false;
  return true;
}
static_assert(emittersInOrder(), "an emitter row per special builtin");

} // namespace

bool FunctionLowering::emitInline(int64_t PC, InstrView I,
                                  SpecialBuiltin What) {
  // A call of a form the builtin's inline form does not take stays a call
  // (which raises the arity error); nothing may be emitted before this
  // check. Flat functions inline only what keeps no value across blocks
  // and needs no `select` (vm::SpecialBuiltinInfo::Flat).
  const InlineEmitter &E = kInlineEmitters[static_cast<size_t>(What)];
  if (!E.Emit || !vm::inlineFormApplies(What, I) ||
      (Flat && !vm::specialBuiltin(What).Flat))
    return false;
  Key.record("inline", What, PC);
  InlinePaths P{PC, I, What};
  if (!E.Guarded) {
    (this->*E.Emit)(P);
    return true;
  }
  // A guarded fast path, and the call as the fallback.
  P.Fast = BasicBlock::Create(C, fmt::format("i{}.fast", PC), Fn);
  P.Slow = BasicBlock::Create(C, fmt::format("i{}.slow", PC), Fn);
  P.Join = BasicBlock::Create(C, fmt::format("i{}.join", PC), Fn);
  (this->*E.Emit)(P);
  emitInlineFallback(P);
  return true;
}

void FunctionLowering::emitInlineFallback(InlinePaths &P) {
  // The real call (it raises the proper error for bad operand types,
  // division by zero, an index out of range), where the kinds leave a way
  // to it.
  if (pred_empty(P.Slow)) {
    P.Slow->eraseFromParent();
    B.SetInsertPoint(P.Join);
    return;
  }
  B.SetInsertPoint(P.Slow);
  emitCallPath(P.PC, P.I);
  const std::optional<scalar::Op> Scalar = scalarOpOf(P.What);
  const vm::RegName Dst = P.I.callDst();
  if (Scalar && scalar::returnsBool(*Scalar) && Dst != vm::kVoidRegister &&
      !Flat) {
    // The standard comparisons and `not` return a bool when they return:
    // the optimizer may know the kind after the join.
    Val R = loadReg(Dst);
    storeReg(Dst, {B.getInt64(kVMJITBool), R.Payload});
  }
  B.CreateBr(P.Join);
  B.SetInsertPoint(P.Join);
}

Value *FunctionLowering::intLikeType(Value *T) {
  // Flat style: the fast paths take ints only (bools and floats call).
  if (Flat)
    return B.CreateICmpEQ(T, B.getInt32(kVMJITInt));
  return B.CreateOr(B.CreateICmpEQ(T, B.getInt32(kVMJITInt)),
                    B.CreateICmpEQ(T, B.getInt32(kVMJITBool)));
}

Value *FunctionLowering::intOf(Val V, uint8_t K) {
  if (Flat || K == vm::kind::Int)
    return V.Payload;
  Value *IsBool = B.CreateICmpEQ(typeOf(V), B.getInt32(kVMJITBool));
  return B.CreateSelect(
      IsBool, B.CreateZExt(B.CreateICmpNE(V.Payload, B.getInt64(0)), I64),
      V.Payload);
}

Val FunctionLowering::boolVal(Value *Bit) {
  return Val{B.getInt64(kVMJITBool), B.CreateZExt(Bit, I64)};
}

void FunctionLowering::finishInline(InlinePaths &P, Val R) {
  if (P.I.callDst() != vm::kVoidRegister)
    moveInto(P.I.callDst(), R);
  B.CreateBr(P.Join);
}

void FunctionLowering::inlineNullValue(InlinePaths &P) {
  // TVM's compiler emits it after the last use of every value: the
  // register is cleared (the old value released), no call is made.
  if (P.I.callDst() != vm::kVoidRegister)
    moveInto(P.I.callDst(), constVal(kVMJITNone, 0));
}

void FunctionLowering::inlineCopy(InlinePaths &P) {
  const vm::RegName Dst = P.I.callDst();
  if (Dst == vm::kVoidRegister)
    return;
  Val X = evalArg(P.I.callArg(0));
  if (Flat) {
    // One store of the copy: retained and moved from the same slot.
    store(ResSlot, X);
    refSlot(ResSlot, /*Retain=*/true);
    moveFromSlot(Dst, ResSlot);
    return;
  }
  if (kindsOf(P.I.callArg(0)) == vm::kind::Any)
    incRefIfObject(X);
  moveInto(Dst, X);
}

void FunctionLowering::inlineReadIfCond(InlinePaths &P) {
  Val X = evalArg(P.I.callArg(0));
  if (intLike(kindsOf(P.I.callArg(0))))
    B.CreateBr(P.Fast);
  else
    B.CreateCondBr(intLikeType(typeOf(X)), P.Fast, P.Slow, Likely);
  B.SetInsertPoint(P.Fast);
  if (Flat)
    X = evalArg(P.I.callArg(0));
  finishInline(P, boolVal(B.CreateICmpNE(X.Payload, B.getInt64(0))));
}

void FunctionLowering::inlineTupleGetItem(InlinePaths &P) {
  Val T = evalArg(P.I.callArg(0)), Ix = evalArg(P.I.callArg(1));
  BasicBlock *Bounds =
      BasicBlock::Create(C, fmt::format("i{}.bounds", P.PC), Fn);
  Value *Types = B.CreateAnd(B.CreateICmpEQ(typeOf(T), B.getInt32(kVMJITArray)),
                             B.CreateICmpEQ(typeOf(Ix), B.getInt32(kVMJITInt)));
  B.CreateCondBr(Types, Bounds, P.Slow, Likely);
  B.SetInsertPoint(Bounds);
  Value *Obj = B.CreateIntToPtr(T.Payload, Ptr);
  Value *Size =
      B.CreateAlignedLoad(I64, bytePtr(Obj, kOffsetArraySize), Align(8));
  // Unsigned compare: a negative index is out of range too.
  B.CreateCondBr(B.CreateICmpULT(Ix.Payload, Size), P.Fast, P.Slow, Likely);
  B.SetInsertPoint(P.Fast);
  Value *Data =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetArrayData), Align(8));
  Val E = load(bytePtr(Data, B.CreateMul(Ix.Payload, B.getInt64(16))));
  incRefIfObject(E);
  finishInline(P, E);
}

void FunctionLowering::inlineCheckTensorInfo(InlinePaths &P) {
  emitCheckTensorInfo(P.PC, P.I, P.Fast, P.Slow);
  const vm::RegName Dst = P.I.callDst();
  if (Dst == vm::kVoidRegister) {
    B.CreateBr(P.Join);
    return;
  }
  Val X = evalArg(P.I.callArg(0)); // x, read again (flat functions)
  if (!Flat) {
    incRefIfObject(X);
    return finishInline(P, X);
  }
  // As copy's: one store, retained and moved from the same slot.
  store(ResSlot, X);
  refSlot(ResSlot, /*Retain=*/true);
  moveFromSlot(Dst, ResSlot);
  B.CreateBr(P.Join);
}

void FunctionLowering::inlineMatchShape(InlinePaths &P) {
  emitMatchShape(P.PC, P.I, P.Fast, P.Slow);
  finishInline(P, constVal(kVMJITNone, 0));
}

void FunctionLowering::inlineAllocTensor(InlinePaths &P) {
  finishInline(P, emitAllocTensorHit(P.PC, P.I, P.Fast, P.Slow));
}

void FunctionLowering::inlineMakeShape(InlinePaths &P) {
  finishInline(P, emitMakeShapeHit(P.PC, P.I, P.Fast, P.Slow));
}

void FunctionLowering::inlineScalarUnary(InlinePaths &P) {
  const bool Not = P.What == SpecialBuiltin::ScalarNot;
  Val X = evalArg(P.I.callArg(0));
  Value *T = typeOf(X);
  const uint8_t KX = kindsOf(P.I.callArg(0));
  if (Not || Flat || intLike(KX)) {
    // Ints and bools inline; anything else calls.
    if (intLike(KX))
      B.CreateBr(P.Fast);
    else
      B.CreateCondBr(intLikeType(T), P.Fast, P.Slow, Likely);
    B.SetInsertPoint(P.Fast);
    if (Flat)
      X = evalArg(P.I.callArg(0));
    if (Not)
      return finishInline(P,
                          boolVal(B.CreateICmpEQ(intOf(X, KX), B.getInt64(0))));
    return finishInline(
        P, {B.getInt64(kVMJITInt), B.CreateSub(B.getInt64(0), intOf(X, KX))});
  }
  // neg: ints and bools, then floats.
  BasicBlock *FloatBB = BasicBlock::Create(C, fmt::format("i{}.f", P.PC), Fn);
  BasicBlock *NotInt = BasicBlock::Create(C, fmt::format("i{}.ni", P.PC), Fn);
  B.CreateCondBr(intLikeType(T), P.Fast, NotInt, Likely);
  B.SetInsertPoint(NotInt);
  B.CreateCondBr(B.CreateICmpEQ(T, B.getInt32(kVMJITFloat)), FloatBB, P.Slow);
  B.SetInsertPoint(P.Fast);
  finishInline(P,
               {B.getInt64(kVMJITInt), B.CreateSub(B.getInt64(0), intOf(X))});
  B.SetInsertPoint(FloatBB);
  Value *D = B.CreateBitCast(X.Payload, B.getDoubleTy());
  finishInline(
      P, {B.getInt64(kVMJITFloat), B.CreateBitCast(B.CreateFNeg(D), I64)});
}

BasicBlock *FunctionLowering::scalarOperandTest(InlinePaths &P, Val Lhs,
                                                Val Rhs, bool IntsOnly) {
  if (IntsOnly) {
    B.CreateBr(P.Fast);
    return nullptr;
  }
  Value *TA = typeOf(Lhs), *TB = typeOf(Rhs);
  if (Flat) {
    B.CreateCondBr(B.CreateAnd(intLikeType(TA), intLikeType(TB)), P.Fast,
                   P.Slow, Likely);
    return nullptr;
  }
  BasicBlock *FloatBB = BasicBlock::Create(C, fmt::format("i{}.f", P.PC), Fn);
  BasicBlock *NotInt = BasicBlock::Create(C, fmt::format("i{}.ni", P.PC), Fn);
  B.CreateCondBr(B.CreateAnd(intLikeType(TA), intLikeType(TB)), P.Fast, NotInt,
                 Likely);
  B.SetInsertPoint(NotInt);
  auto Numeric = [&](Value *T) {
    return B.CreateOr(intLikeType(T),
                      B.CreateICmpEQ(T, B.getInt32(kVMJITFloat)));
  };
  B.CreateCondBr(B.CreateAnd(Numeric(TA), Numeric(TB)), FloatBB, P.Slow);
  return FloatBB;
}

void FunctionLowering::inlineScalarBinary(InlinePaths &P) {
  Val Lhs = evalArg(P.I.callArg(0)), Rhs = evalArg(P.I.callArg(1));
  const uint8_t KA = kindsOf(P.I.callArg(0)), KB = kindsOf(P.I.callArg(1));
  // Ints and bools for certain: the int path alone, no type test.
  const bool IntsOnly = intLike(KA) && intLike(KB);
  BasicBlock *FloatBB = scalarOperandTest(P, Lhs, Rhs, IntsOnly);
  // int64 (bool counts as int).
  B.SetInsertPoint(P.Fast);
  if (Flat) {
    Lhs = evalArg(P.I.callArg(0));
    Rhs = evalArg(P.I.callArg(1));
  }
  emitScalarInt(P, intOf(Lhs, KA), intOf(Rhs, KB));
  if (!FloatBB)
    return;
  // float64 when either is a float.
  B.SetInsertPoint(FloatBB);
  auto ToDouble = [&](Val V) {
    Value *IsFloat = B.CreateICmpEQ(typeOf(V), B.getInt32(kVMJITFloat));
    return B.CreateSelect(IsFloat, B.CreateBitCast(V.Payload, B.getDoubleTy()),
                          B.CreateSIToFP(intOf(V), B.getDoubleTy()));
  };
  emitScalarFloat(P, ToDouble(Lhs), ToDouble(Rhs));
}

void FunctionLowering::emitScalarInt(InlinePaths &P, Value *X, Value *Y) {
  auto IntRes = [&](Value *R) { finishInline(P, {B.getInt64(kVMJITInt), R}); };
  switch (P.What) {
  case SpecialBuiltin::ScalarAdd:
    return IntRes(B.CreateAdd(X, Y));
  case SpecialBuiltin::ScalarSub:
    return IntRes(B.CreateSub(X, Y));
  case SpecialBuiltin::ScalarMul:
    return IntRes(B.CreateMul(X, Y));
  case SpecialBuiltin::ScalarDiv:
  case SpecialBuiltin::ScalarMod: {
    // Division by zero and INT64_MIN / -1 take the call, which raises.
    Value *Bad =
        B.CreateOr(B.CreateICmpEQ(Y, B.getInt64(0)),
                   B.CreateAnd(B.CreateICmpEQ(Y, B.getInt64(-1)),
                               B.CreateICmpEQ(X, B.getInt64(INT64_MIN))));
    BasicBlock *Do = BasicBlock::Create(C, fmt::format("i{}.div", P.PC), Fn);
    B.CreateCondBr(Bad, P.Slow, Do, Unlikely);
    B.SetInsertPoint(Do);
    if (Flat) {
      X = evalArg(P.I.callArg(0)).Payload;
      Y = evalArg(P.I.callArg(1)).Payload;
    }
    return IntRes(P.What == SpecialBuiltin::ScalarDiv ? B.CreateSDiv(X, Y)
                                                      : B.CreateSRem(X, Y));
  }
  case SpecialBuiltin::ScalarMin:
    return IntRes(B.CreateSelect(B.CreateICmpSLT(Y, X), Y, X));
  case SpecialBuiltin::ScalarMax:
    return IntRes(B.CreateSelect(B.CreateICmpSGT(Y, X), Y, X));
  default:
    // The comparisons.
    return finishInline(
        P, boolVal(B.CreateICmp(comparisonPredicates(P.What)->first, X, Y)));
  }
}

void FunctionLowering::emitScalarFloat(InlinePaths &P, Value *X, Value *Y) {
  auto FloatRes = [&](Value *D) {
    finishInline(P, {B.getInt64(kVMJITFloat), B.CreateBitCast(D, I64)});
  };
  switch (P.What) {
  case SpecialBuiltin::ScalarAdd:
    return FloatRes(B.CreateFAdd(X, Y));
  case SpecialBuiltin::ScalarSub:
    return FloatRes(B.CreateFSub(X, Y));
  case SpecialBuiltin::ScalarMul:
    return FloatRes(B.CreateFMul(X, Y));
  case SpecialBuiltin::ScalarDiv:
    return FloatRes(B.CreateFDiv(X, Y));
  case SpecialBuiltin::ScalarMod:
    return FloatRes(B.CreateFRem(X, Y)); // fmod
  case SpecialBuiltin::ScalarMin:
    return FloatRes(B.CreateSelect(B.CreateFCmpOLT(Y, X), Y, X));
  case SpecialBuiltin::ScalarMax:
    return FloatRes(B.CreateSelect(B.CreateFCmpOGT(Y, X), Y, X));
  default:
    return finishInline(
        P, boolVal(B.CreateFCmp(comparisonPredicates(P.What)->second, X, Y)));
  }
}

} // namespace vmjit::jit::lower
