//===- lowering.cpp - Bytecode to LLVM IR ----------------------------------===//
//
// See include/vmjit/jit/lowering.h for the shape of the generated code.
// Two styles: promoted (small functions: registers become SSA values, the
// optimizer sees everything) and flat (the rest: every block reads what it
// needs from the register file and no SSA value lives across a block, so
// even O0 code keeps no spill slot per site; releases, retains and the
// frame's release at exit are helper calls; int-only fast paths).
// Values are handled as their two 8-byte words (type word, payload word),
// the same way the interpreter copies them: no 16-byte vector copies, which
// would stall on store forwarding right after a callee wrote a result.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/lowering.h"
#include "closure_call.h"
#include "context_layout.h"
#include "direct_call.h"
#include "kind_inference.h"
#include "liveness.h"
#include "runtime_helpers.h"
#include "tensor_facts.h"
#include "vmjit/jit/engine.h"
#include "vmjit/kernels/scalar_ops.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/c_api.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/shape_codes.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/alloc_sites.h"
#include "vmjit/vm/bytecode.h"
#include "vmjit/vm/feedback.h"
#include "vmjit/vm/native_code.h"

#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

using namespace llvm;

namespace vmjit::jit {

// LLVM's Function, not the runtime's packed Function.
using llvm::Function;

namespace scalar = kernels::scalar;

namespace {

using vm::Arg;
using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

/// The two words of a value, as SSA values.
struct Val {
  Value *W0; // type index in the low 32 bits (and the small-string length)
  Value *W1; // payload
};

// Layouts pinned beside their types (vm/native_code.h, runtime/function.h).
constexpr int64_t kOffsetSiteObj = offsetof(vm::AllocSite, Obj);
constexpr int64_t kOffsetSiteStorage = offsetof(vm::AllocSite, Storage);
constexpr int64_t kOffsetFuncCell = kFunctionEntryOffset;
constexpr int64_t kOffsetDirectCode = offsetof(DirectTarget, Code);
constexpr int64_t kOffsetDirectEntry = offsetof(DirectTarget, Entry);
constexpr int64_t kOffsetArrayData = ArrayObjLayout::DataOffset;
constexpr int64_t kOffsetArraySize = ArrayObjLayout::SizeOffset;
constexpr int64_t kOffsetTensorNDim =
    kTensorDLTensorOffset + offsetof(DLTensor, ndim);
constexpr int64_t kOffsetTensorDType =
    kTensorDLTensorOffset + offsetof(DLTensor, dtype);
constexpr int64_t kOffsetTensorShape =
    kTensorDLTensorOffset + offsetof(DLTensor, shape);

/// The highest heap slot a match_shape call matchShapeInlinable accepts
/// stores or reads (codes 1 and 3), or -1.
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

class FunctionLowering {
public:
  FunctionLowering(Module &M, const vm::Executable &Exe, int64_t FuncIndex,
                   const std::vector<CalleeBinding> &Callees,
                   const LoweringOptions &Opts, LoweredModule &Out,
                   const std::map<int64_t, std::string> &UnitSymbols)
      : M(M), C(M.getContext()), B(C), Exe(Exe), FuncIndex(FuncIndex),
        F(Exe.function(FuncIndex)), Callees(Callees), Opts(Opts),
        KeyText(Out.KeyText), Out(Out), UnitSymbols(UnitSymbols) {
    I64 = Type::getInt64Ty(C);
    I32 = Type::getInt32Ty(C);
    Ptr = PointerType::getUnqual(C);
    SafeCallTy = FunctionType::get(I32, {Ptr, Ptr, I32, Ptr}, false);
    MDBuilder MDB(C);
    Unlikely = MDB.createBranchWeights(1, 1 << 20);
    Likely = MDB.createBranchWeights(1 << 20, 1);
  }

  Function *lower(const std::string &Symbol);

private:
  /// A runtime helper (jit/runtime_helpers.h), declared on first use.
  FunctionCallee helperFn(const char *Name, Type *Ret,
                          ArrayRef<Type *> Params) {
    return M.getOrInsertFunction(Name, FunctionType::get(Ret, Params, false));
  }
  // Addresses.
  Value *bytePtr(Value *Base, int64_t Offset) {
    if (Offset == 0)
      return Base;
    return B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Base, Offset);
  }
  Value *bytePtr(Value *Base, Value *Offset) {
    return B.CreateInBoundsGEP(B.getInt8Ty(), Base, Offset);
  }
  Value *regPtr(int64_t R) { return bytePtr(regs(), 16 * R); }
  /// The function's pointer arguments. In the flat style each block reads
  /// them from a stack slot (a volatile load, so nothing promotes it back):
  /// no value lives across blocks, and register allocation stays local to
  /// blocks, linear in the function's size at any codegen level.
  Value *arg(int K) {
    if (!ArgSlots[K])
      return Args[K];
    Value *&Cached = ArgCache[B.GetInsertBlock()][K];
    if (!Cached) {
      LoadInst *L = B.CreateAlignedLoad(Ptr, ArgSlots[K], Align(8));
      L->setVolatile(true);
      Cached = L;
    }
    return Cached;
  }
  Value *ctx() { return arg(0); }
  Value *regs() { return arg(1); }
  Value *consts() { return arg(2); }
  Value *funcs() { return arg(3); }
  /// Registers live in allocas (promoted to SSA values by the pipeline)
  /// while the function runs: loaded from the register file on entry,
  /// stored back on every exit. Nothing else reads a frame's register file
  /// while its code runs (callees get copies in the argument stack).
  Val loadReg(int64_t R) {
    if (Shadow.empty())
      return load(regPtr(R));
    auto [A0, A1] = Shadow[static_cast<size_t>(R)];
    return {B.CreateAlignedLoad(I64, A0, Align(8)),
            B.CreateAlignedLoad(I64, A1, Align(8))};
  }
  void storeReg(int64_t R, Val V) {
    if (Shadow.empty())
      return store(regPtr(R), V);
    auto [A0, A1] = Shadow[static_cast<size_t>(R)];
    B.CreateAlignedStore(V.W0, A0, Align(8));
    B.CreateAlignedStore(V.W1, A1, Align(8));
  }
  /// Before returning: releases every register's value and leaves the
  /// register file all None, as the register stack expects of a frame that
  /// ends (so its owner pops it without looking at the values). Registers
  /// whose type the optimizer knows (ints, bools) cost nothing here.
  /// Whether registers become SSA values (see loadReg): worth it for loops,
  /// but the optimizer's time grows steeply with blocks x registers, so
  /// only for small functions.
  bool promote() const { return !lowersFlat(F, Opts); }
  void releaseAll() {
    if (Flat) {
      B.CreateCall(helperFn(helper::vmjit_jit_release_frame, B.getVoidTy(),
                            {Ptr, I64}),
                   {regs(), B.getInt64(F.RegisterFileSize)});
      return;
    }
    for (int64_t R = 0; R < F.RegisterFileSize; ++R) {
      releaseIfObject(loadReg(R));
      B.CreateAlignedStore(B.getInt64(kVMJITNone), regPtr(R), Align(8))
          ->setMetadata(kFrameClearMetadata, MDNode::get(C, {}));
    }
  }

  Val load(Value *P) {
    return {B.CreateAlignedLoad(I64, P, Align(8)),
            B.CreateAlignedLoad(I64, bytePtr(P, 8), Align(8))};
  }
  void store(Value *P, Val V) {
    B.CreateAlignedStore(V.W0, P, Align(8));
    B.CreateAlignedStore(V.W1, bytePtr(P, 8), Align(8));
  }
  Value *typeOf(Val V) { return B.CreateTrunc(V.W0, I32); }
  /// Whether a type index (typeOf) is one of Types.
  Value *typeIn(Value *Type, std::initializer_list<int32_t> Types) {
    Value *In = B.getFalse();
    for (int32_t T : Types)
      In = B.CreateOr(In, B.CreateICmpEQ(Type, B.getInt32(T)));
    return In;
  }
  /// Whether argument A's type is one of `Types`: a constant for an
  /// immediate or a constant of the pool (whose type then joins the cache
  /// key, which covers the code's words, not the pool), else a test of its
  /// type word.
  Value *argTypeIn(Arg A, std::initializer_list<int32_t> Types) {
    int32_t Known = -1;
    if (A.kind() == ArgKind::Immediate) {
      Known = kVMJITInt;
    } else if (A.kind() == ArgKind::ConstIdx) {
      Known = Exe.constants()[static_cast<size_t>(A.value())].typeIndex();
      KeyText += fmt::format("t{}={};", A.value(), Known);
    }
    if (Known < 0)
      return typeIn(typeOf(evalArg(A)), Types);
    return B.getInt1(std::find(Types.begin(), Types.end(), Known) !=
                     Types.end());
  }
  Val constVal(int32_t Type, uint64_t Payload) {
    return {B.getInt64(static_cast<uint32_t>(Type)), B.getInt64(Payload)};
  }

  // Reference counting of values held in the two words.
  Value *isObject(Val V) {
    return B.CreateICmpSGE(typeOf(V), B.getInt32(kVMJITStaticObjectBegin));
  }
  void incRefIfObject(Val V);
  void releaseIfObject(Val V);
  /// Moves an owned value into register `Dst`, releasing the old value.
  void moveInto(int64_t Dst, Val New);
  /// Flat style: moves the owned value in `Slot` into register `Dst`,
  /// releasing the old value, with nothing live across the blocks.
  void moveFromSlot(int64_t Dst, Value *Slot);
  /// Flat style: releases (Retain: retains) the value in `Slot` if it
  /// holds an object.
  void refSlot(Value *Slot, bool Retain);

  // Arguments.
  Val evalArg(Arg A);
  bool embeddable(int64_t ConstIdx) const;

  // Instructions.
  void countCall(int64_t Callee);
  void lowerCall(int64_t PC, InstrView I);
  /// The call itself: args to the stack, call, check, move the result.
  void emitCallPath(int64_t PC, InstrView I);
  /// The call of a function of the unit through the pool entry `Obj`:
  /// its direct entry while the pool holds its code from this unit, else
  /// the pool entry's. Returns the return code.
  Value *emitDirectCall(int64_t PC, int64_t Callee, int64_t N, Value *Obj);
  /// Calls Callee's direct entry with the arguments at `Args` when `Obj`
  /// (a pool entry) holds this unit's code of Callee; branches to
  /// `Otherwise` when it does not or when the entry refuses. Returns the
  /// entry's return code (0 or -1), the insertion point after the call.
  Value *tryDirectCall(int64_t PC, int64_t Callee, Value *Obj, Value *Args,
                       BasicBlock *Otherwise);
  /// tryDirectCall's target once the slot's code (`Current`) is known: of
  /// a function of the unit, its direct entry when Current is this unit's
  /// code; of another unit's, the direct entry in its cell (direct_call.h:
  /// DirectTarget) when that goes with Current. Otherwise branches to
  /// `Otherwise`.
  FunctionCallee unitEntry(int64_t PC, int64_t Callee, Value *Current,
                           BasicBlock *Otherwise);
  FunctionCallee cellEntry(int64_t PC, int64_t Callee, Value *Current,
                           BasicBlock *Otherwise);
  /// The call as bound (a site helper, a builtin's entry, the pool or a
  /// direct entry) of the arguments on the stack; returns the return code.
  Value *emitBoundCall(int64_t PC, InstrView I);
  /// invoke_closure of a closure the function makes (closure_call.h):
  /// the target's direct entry when the closure is one of it, else the
  /// bound call.
  Value *emitClosureCall(int64_t PC, InstrView I, const ClosureCall &CC);
  /// The closure call tier 2 makes direct at this call, if any.
  std::optional<ClosureCall> closureCall(InstrView I) const;
  /// A byte-sized external global: an absolute symbol bound at link time.
  GlobalVariable *externalByte(const std::string &Name);
  /// Whether a call of `Callee` with N arguments may be direct.
  bool callsDirect(int64_t Callee, int64_t N) const;
  /// The arguments (by position) the call at PC passes as object rvalue
  /// references (LoweringOptions::OwnedArguments): registers that may hold
  /// an object, named once in the call, whose value no later instruction
  /// reads; at most kMaxOwnedArgs.
  std::vector<int64_t> ownedArgs(int64_t PC, InstrView I) const;
  static constexpr size_t kMaxOwnedArgs = 16;
  bool emitInline(int64_t PC, InstrView I, SpecialBuiltin What);
  Value *heapUsable(Val Heap, int64_t MaxSlot);
  Value *heapSlots(Val Heap);
  Value *siteField(int64_t PC, int64_t Offset);
  void emitHeapGuard(int64_t PC, Arg HeapArg, int64_t MaxSlot, BasicBlock *Pass,
                     BasicBlock *Fail);
  Val emitMakeShapeHit(int64_t PC, InstrView I, BasicBlock *Pass,
                       BasicBlock *Fail);
  Val emitAllocTensorHit(int64_t PC, InstrView I, BasicBlock *Pass,
                         BasicBlock *Fail);
  void emitCheckTensorInfo(int64_t PC, InstrView I, BasicBlock *Pass,
                           BasicBlock *Fail);
  void emitMatchShape(int64_t PC, InstrView I, BasicBlock *Pass,
                      BasicBlock *Fail);
  void lowerRet(InstrView I);
  void lowerIf(int64_t PC, InstrView I);

  // Speculation.
  /// Takes the unlikely branch to `Fail` unless `V` holds a value of
  /// scalar kind `K`; after it, V's type word is that kind's constant.
  void guardKind(Val &V, uint8_t K, BasicBlock *Fail);
  /// Takes the unlikely branch to `Fail` unless `V` holds a tensor of the
  /// rank and dtype of `Word` (vm::feedback::tensorWord); after it, V's
  /// type word is the tensor's constant.
  void guardTensor(Val &V, uint64_t Word, BasicBlock *Fail);
  /// The rank and dtype of the tensor argument A of the instruction being
  /// lowered holds (tensor_facts.h), or 0.
  uint64_t tensorFact(Arg A) const;
  /// A block that deoptimizes at `Site`, resuming tier 1 at `ResumePC`;
  /// `WriteBack`: the registers' values go back to the frame first (not
  /// needed at an entry, where the frame holds them still).
  BasicBlock *deoptBlock(int64_t Site, int64_t ResumePC, bool WriteBack);
  /// Whether register R, not written by the call at `Site`, is read no
  /// more after it and holds a scalar there (nothing to release): a
  /// deoptimization after the call leaves it None rather than keeping its
  /// value alive across the call for that.
  bool deadScalarAfter(int64_t Site, int64_t R) const {
    return !Live.empty() && !Kinds.empty() &&
           !Live[static_cast<size_t>(Site)][static_cast<size_t>(R)] &&
           Exe.instr(F.StartInstr + Site).opcode() == vm::Opcode::Call &&
           Exe.instr(F.StartInstr + Site).callDst() != R &&
           scalarKinds(
               argKinds(Exe, Kinds[static_cast<size_t>(Site)], Arg::reg(R)));
  }
  /// The deopt of a call's entry (a parameter's guard failed).
  BasicBlock *entryDeoptBlock();
  /// The entry at pc `PC`: every register loaded from the frame, those
  /// whose kind speculation knows there guarded (`Guard`), then PC.
  BasicBlock *entryAt(int64_t PC, bool Guard);
  /// The entry of a call (pc 0, only the parameters set).
  void emitCallEntry();
  bool genericEntry(int64_t PC) const;
  void emitSpecKey();
  /// The tensor facts rest on the dtype constants of the function's
  /// check_tensor_info calls (checkedTensorWord): part of the cache key.
  void emitTensorFactsKey();
  /// The kinds argument A of the instruction being lowered can have, as
  /// far as the lowering may trust them (scalar sets, kind_inference.h);
  /// kind::Any when nothing is known.
  uint8_t kindsOf(Arg A) const;
  /// Whether every kind in K is an int or a bool, as trusted.
  bool intLike(uint8_t K) const {
    return K != 0 && (K & ~(vm::kind::Int | vm::kind::Bool)) == 0;
  }
  /// The block a jump from PC by Offset goes to: the target itself, or
  /// for a backward jump a block that first counts the step.
  BasicBlock *jumpTarget(int64_t PC, int64_t Offset);

  void branchToError(Value *Failed, int64_t PC, BasicBlock *Cont);
  /// The block that leaves through the error exit with pc `PC`.
  BasicBlock *errorSite(int64_t PC);
  BasicBlock *next(int64_t PC) { return Blocks[static_cast<size_t>(PC + 1)]; }

  Module &M;
  LLVMContext &C;
  IRBuilder<> B;
  const vm::Executable &Exe;
  const int64_t FuncIndex;
  const vm::FunctionInfo &F;
  const std::vector<CalleeBinding> &Callees;
  const LoweringOptions &Opts;
  std::string &KeyText;
  LoweredModule &Out;
  /// The symbol of every function of the unit.
  const std::map<int64_t, std::string> &UnitSymbols;

  Type *I64, *I32;
  PointerType *Ptr;
  FunctionType *SafeCallTy;
  MDNode *Unlikely, *Likely;

  Function *Fn = nullptr;
  /// ctx, regs, consts, funcs (read them through arg()).
  Value *Args[4] = {};
  AllocaInst *ArgSlots[4] = {};
  std::map<BasicBlock *, std::array<Value *, 4>> ArgCache;
  Value *EntryPC;
  Value *ArgStack = nullptr, *ResSlot = nullptr;
  /// The object slots of owned arguments (ownedArgs): the callee takes
  /// the object and leaves its slot null.
  Value *OwnStack = nullptr;
  /// Which registers later instructions read (OwnedArguments only).
  LiveTable Live;
  std::vector<BasicBlock *> Blocks;
  std::vector<std::pair<Value *, Value *>> Shadow;
  BasicBlock *ErrBB = nullptr;
  PHINode *ErrPC = nullptr;
  /// Ctx->Control, loaded once on entry (null without backward jumps, or
  /// in the flat style, which loads it where it steps).
  Value *StepCtl = nullptr;
  /// The flat style (see the top of this file): registers not promoted.
  bool Flat = false;
  /// What this function speculates (null: nothing), and the kinds of its
  /// registers under those assumptions.
  const FunctionSpeculation *Spec = nullptr;
  KindTable Kinds;
  TensorFacts Tensors;
  /// The instruction being lowered.
  int64_t CurPC = 0;
};

void FunctionLowering::incRefIfObject(Val V) {
  assert(!Flat && "flat code retains through refSlot");
  BasicBlock *Inc = BasicBlock::Create(C, "incref", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "incref.done", Fn);
  B.CreateCondBr(isObject(V), Inc, Done);
  B.SetInsertPoint(Inc);
  B.CreateAtomicRMW(AtomicRMWInst::Add, B.CreateIntToPtr(V.W1, Ptr),
                    B.getInt64(1), MaybeAlign(8), AtomicOrdering::Monotonic);
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

void FunctionLowering::releaseIfObject(Val V) {
  assert(!Flat && "flat code releases through refSlot/moveFromSlot");
  BasicBlock *Dec = BasicBlock::Create(C, "release", Fn);
  BasicBlock *Last = BasicBlock::Create(C, "release.last", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "release.done", Fn);
  B.CreateCondBr(isObject(V), Dec, Done);
  B.SetInsertPoint(Dec);
  Value *Obj = B.CreateIntToPtr(V.W1, Ptr);
  Value *Old = B.CreateAtomicRMW(AtomicRMWInst::Sub, Obj, B.getInt64(1),
                                 MaybeAlign(8), AtomicOrdering::Release);
  Value *WasLast = B.CreateICmpEQ(B.CreateTrunc(Old, I32), B.getInt32(1));
  B.CreateCondBr(WasLast, Last, Done, Unlikely);
  B.SetInsertPoint(Last);
  FunctionCallee Destroy =
      helperFn(helper::vmjit_jit_destroy, B.getVoidTy(), {Ptr, I64});
  B.CreateCall(Destroy, {Obj, Old});
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

void FunctionLowering::moveInto(int64_t Dst, Val New) {
  if (Flat) {
    store(ResSlot, New);
    moveFromSlot(Dst, ResSlot);
    return;
  }
  Val Old = loadReg(Dst);
  storeReg(Dst, New);
  // (A register whose kinds are scalar holds no object.)
  if (kindsOf(Arg::reg(Dst)) == vm::kind::Any)
    releaseIfObject(Old);
}

void FunctionLowering::moveFromSlot(int64_t Dst, Value *Slot) {
  BasicBlock *Rel = BasicBlock::Create(C, "move.release", Fn);
  BasicBlock *Plain = BasicBlock::Create(C, "move", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "move.done", Fn);
  Value *OldType = B.CreateAlignedLoad(I32, regPtr(Dst), Align(8));
  B.CreateCondBr(B.CreateICmpSGE(OldType,
                                 B.getInt32(kVMJITStaticObjectBegin)),
                 Rel, Plain);
  B.SetInsertPoint(Rel);
  Value *Old = B.CreateAlignedLoad(Ptr, bytePtr(regPtr(Dst), 8), Align(8));
  store(regPtr(Dst), load(Slot));
  B.CreateCall(helperFn(helper::vmjit_jit_release, B.getVoidTy(), {Ptr}),
               {Old});
  B.CreateBr(Done);
  B.SetInsertPoint(Plain);
  store(regPtr(Dst), load(Slot));
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

void FunctionLowering::refSlot(Value *Slot, bool Retain) {
  BasicBlock *Do = BasicBlock::Create(C, Retain ? "retain" : "release", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "ref.done", Fn);
  Value *Type = B.CreateAlignedLoad(I32, Slot, Align(8));
  B.CreateCondBr(
      B.CreateICmpSGE(Type, B.getInt32(kVMJITStaticObjectBegin)), Do, Done);
  B.SetInsertPoint(Do);
  Value *Obj = B.CreateAlignedLoad(Ptr, bytePtr(Slot, 8), Align(8));
  B.CreateCall(helperFn(Retain ? helper::vmjit_jit_retain
                               : helper::vmjit_jit_release,
                        B.getVoidTy(), {Ptr}),
               {Obj});
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

bool FunctionLowering::embeddable(int64_t ConstIdx) const {
  int32_t T = Exe.constants()[static_cast<size_t>(ConstIdx)].typeIndex();
  return T == kVMJITInt || T == kVMJITBool || T == kVMJITFloat ||
         T == kVMJITNone;
}

Val FunctionLowering::evalArg(Arg A) {
  int64_t V = A.value();
  switch (A.kind()) {
  case ArgKind::Register:
    if (V == vm::kVMRegister)
      return {B.getInt64(kVMJITOpaquePtr),
              B.CreatePtrToInt(B.CreateAlignedLoad(Ptr, ctx(), Align(8)), I64)};
    if (V == vm::kVoidRegister)
      return constVal(kVMJITNone, 0); // %void reads as None
    return loadReg(V);
  case ArgKind::Immediate:
    return constVal(kVMJITInt, static_cast<uint64_t>(V));
  case ArgKind::ConstIdx: {
    if (embeddable(V)) {
      // Scalars are part of the code (and of its cache key).
      const VMJITAny &R = Exe.constants()[static_cast<size_t>(V)].raw();
      uint64_t W0, W1;
      std::memcpy(&W0, &R, 8);
      std::memcpy(&W1, reinterpret_cast<const char *>(&R) + 8, 8);
      KeyText += fmt::format("k{}={:x}.{:x};", V, W0, W1);
      return {B.getInt64(W0), B.getInt64(W1)};
    }
    return load(bytePtr(consts(), 16 * V));
  }
  case ArgKind::FuncIdx: {
    Value *Entry = B.CreateAlignedLoad(Ptr, bytePtr(funcs(), 8 * V), Align(8));
    return {B.getInt64(kVMJITFunction), B.CreatePtrToInt(Entry, I64)};
  }
  }
  return constVal(kVMJITNone, 0);
}

void FunctionLowering::branchToError(Value *Failed, int64_t PC,
                                     BasicBlock *Cont) {
  BasicBlock *Here = B.GetInsertBlock();
  B.CreateCondBr(Failed, errorSite(PC), Cont, Unlikely);
  if (!Flat)
    ErrPC->addIncoming(B.getInt64(PC), Here);
}

BasicBlock *FunctionLowering::errorSite(int64_t PC) {
  if (!Flat)
    return ErrBB;
  // Flat: the pc is stored on the cold path, not carried in a PHI (whose
  // copies O0 code would make on every hot path).
  IRBuilderBase::InsertPointGuard Guard(B);
  BasicBlock *Site = BasicBlock::Create(C, fmt::format("i{}.err", PC), Fn);
  B.SetInsertPoint(Site);
  B.CreateAlignedStore(B.getInt64(PC), bytePtr(ctx(), kOffsetErrorPC),
                       Align(8));
  B.CreateBr(ErrBB);
  return Site;
}

void FunctionLowering::emitCallPath(int64_t PC, InstrView I) {
  const int64_t N = I.callNumArgs();
  const std::vector<int64_t> Owned = ownedArgs(PC, I);
  for (int64_t K = 0, O = 0; K < N; ++K) {
    Val V = evalArg(I.callArg(K));
    if (O < static_cast<int64_t>(Owned.size()) && Owned[O] == K) {
      // An object goes as {ObjectRValueRef, &slot}, the slot holding it;
      // the register is dead from here and left None.
      Value *Slot = bytePtr(OwnStack, 8 * O++);
      Value *Obj = isObject(V);
      B.CreateAlignedStore(B.CreateSelect(Obj, V.W1, B.getInt64(0)), Slot,
                           Align(8));
      V = {B.CreateSelect(Obj, B.getInt64(kVMJITObjectRValueRef), V.W0),
           B.CreateSelect(Obj, B.CreatePtrToInt(Slot, I64), V.W1)};
      storeReg(I.callArg(K).value(), constVal(kVMJITNone, 0));
    }
    store(bytePtr(ArgStack, 16 * K), V);
  }
  std::optional<ClosureCall> CC = closureCall(I);
  Value *Rc = CC ? emitClosureCall(PC, I, *CC) : emitBoundCall(PC, I);
  // What a callee did not take (it failed before its frame) is released.
  for (size_t O = 0; O < Owned.size(); ++O) {
    Value *Left =
        B.CreateAlignedLoad(I64, bytePtr(OwnStack, 8 * int64_t(O)), Align(8));
    Value *Kept = B.CreateICmpNE(Left, B.getInt64(0));
    releaseIfObject(
        {B.CreateSelect(Kept, B.getInt64(kVMJITObject), B.getInt64(kVMJITNone)),
         Left});
  }
  BasicBlock *Ok = BasicBlock::Create(C, fmt::format("i{}.ok", PC), Fn);
  branchToError(B.CreateICmpNE(Rc, B.getInt32(0)), PC, Ok);
  B.SetInsertPoint(Ok);
  if (Flat) {
    if (I.callDst() == vm::kVoidRegister)
      refSlot(ResSlot, /*Retain=*/false);
    else
      moveFromSlot(I.callDst(), ResSlot);
    return;
  }
  Val Result = load(ResSlot);
  if (I.callDst() == vm::kVoidRegister)
    releaseIfObject(Result);
  else
    moveInto(I.callDst(), Result);
}

Value *FunctionLowering::emitBoundCall(int64_t PC, InstrView I) {
  const int64_t Callee = I.callFunc();
  const int64_t N = I.callNumArgs();
  const CalleeBinding &Bind = Callees[static_cast<size_t>(Callee)];
  const char *Helper = Opts.InlineBuiltins ? siteHelper(Bind.Inline) : nullptr;
  auto PoolEntry = [&] {
    return B.CreateAlignedLoad(Ptr, bytePtr(funcs(), 8 * Callee), Align(8));
  };
  // A direct entry writes the result slot whenever it returns 0
  // (emitDirectCall sets it None only for the pool).
  if (!Helper && Bind.How == CalleeBinding::Pool && callsDirect(Callee, N))
    return emitDirectCall(PC, Callee, N, PoolEntry());
  // A safe call's result slot starts None.
  store(ResSlot, constVal(kVMJITNone, 0));
  if (Helper) {
    // Through the VM's cache of this call site.
    KeyText += fmt::format("site{}@{};", static_cast<int>(Bind.Inline), PC);
    FunctionCallee Site = helperFn(Helper, I32, {Ptr, I64, Ptr, I32, Ptr});
    return B.CreateCall(
        Site, {ctx(), B.getInt64(PC), ArgStack, B.getInt32(N), ResSlot});
  }
  if (Bind.How == CalleeBinding::Direct) {
    std::string Name = fmt::format("__vmjit_callee_{}", Callee);
    std::string SelfName = fmt::format("__vmjit_self_{}", Callee);
    FunctionCallee Target = M.getOrInsertFunction(Name, SafeCallTy);
    GlobalVariable *Self = M.getGlobalVariable(SelfName);
    if (!Self)
      Self = new GlobalVariable(M, B.getInt8Ty(), /*isConstant=*/true,
                                GlobalValue::ExternalLinkage, nullptr,
                                SelfName);
    return B.CreateCall(Target, {Self, ArgStack, B.getInt32(N), ResSlot});
  }
  Value *Obj = PoolEntry();
  Value *Entry =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetFuncCell), Align(8));
  return B.CreateCall(SafeCallTy, Entry,
                      {Obj, ArgStack, B.getInt32(N), ResSlot});
}

bool FunctionLowering::callsDirect(int64_t Callee, int64_t N) const {
  if (!Opts.DirectCalls || Flat || Exe.function(Callee).NumParams != N)
    return false;
  // In the unit, or in another whose code exports a direct entry.
  return UnitSymbols.count(Callee)
             ? directCallable(Exe, Callee, Callees)
             : static_cast<bool>(
                   Out.ExportsDirect[static_cast<size_t>(Callee)]);
}

std::vector<int64_t> FunctionLowering::ownedArgs(int64_t PC,
                                                 InstrView I) const {
  const int64_t Callee = I.callFunc();
  const CalleeBinding &Bind = Callees[static_cast<size_t>(Callee)];
  // Only bytecode functions (every entry of theirs, enterFrame and the
  // direct entries) take rvalue references; kernels and builtins get views.
  if (!Opts.OwnedArguments || Live.empty() || Bind.How != CalleeBinding::Pool ||
      (Opts.InlineBuiltins && siteHelper(Bind.Inline)) ||
      Exe.function(Callee).Kind != vm::FunctionKind::Bytecode)
    return {};
  const std::vector<bool> &After = Live[static_cast<size_t>(PC)];
  std::vector<int64_t> Owned;
  for (int64_t K = 0; K < I.callNumArgs(); ++K) {
    Arg A = I.callArg(K);
    if (A.kind() != ArgKind::Register || vm::isSpecialRegister(A.value()) ||
        scalarKinds(kindsOf(A)))
      continue;
    const int64_t R = A.value();
    // The old value of the destination is dead after the call anyway.
    if (After[static_cast<size_t>(R)] && R != I.callDst())
      continue;
    int Uses = 0;
    for (int64_t J = 0; J < I.callNumArgs(); ++J)
      Uses +=
          I.callArg(J).kind() == ArgKind::Register && I.callArg(J).value() == R;
    if (Uses == 1 && Owned.size() < kMaxOwnedArgs)
      Owned.push_back(K);
  }
  return Owned;
}

GlobalVariable *FunctionLowering::externalByte(const std::string &Name) {
  GlobalVariable *G = M.getGlobalVariable(Name);
  if (!G)
    G = new GlobalVariable(M, B.getInt8Ty(), /*isConstant=*/true,
                           GlobalValue::ExternalLinkage, nullptr, Name);
  return G;
}

Value *FunctionLowering::tryDirectCall(int64_t PC, int64_t Callee, Value *Obj,
                                       Value *Args, BasicBlock *Otherwise) {
  BasicBlock *CheckSlot =
      BasicBlock::Create(C, fmt::format("i{}.direct.slot", PC), Fn);
  BasicBlock *CheckCode =
      BasicBlock::Create(C, fmt::format("i{}.direct.code", PC), Fn);
  // The pool entry is native code of this manager's slot for Callee (entry
  // and slot) ...
  Value *Entry =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetFuncCell), Align(8));
  B.CreateCondBr(B.CreateICmpEQ(Entry, externalByte(kNativeEntrySymbol)),
                 CheckSlot, Otherwise, Likely);
  B.SetInsertPoint(CheckSlot);
  Value *Slot = B.CreateAlignedLoad(
      Ptr, bytePtr(Obj, vm::kNativeFunctionSlotOffset), Align(8));
  B.CreateCondBr(B.CreateICmpEQ(Slot, externalByte(codeSlotSymbol(Callee))),
                 CheckCode, Otherwise, Likely);
  // ... and the slot holds the code the direct entry goes with.
  B.SetInsertPoint(CheckCode);
  LoadInst *Current = B.CreateAlignedLoad(Ptr, Slot, Align(8));
  Current->setAtomic(AtomicOrdering::Monotonic);
  FunctionCallee Direct = UnitSymbols.count(Callee)
                              ? unitEntry(PC, Callee, Current, Otherwise)
                              : cellEntry(PC, Callee, Current, Otherwise);
  // The context passed is the callee's root (its shared fields), its depth
  // the caller's (a direct entry's copy of code passes its own root).
  Value *Depth =
      B.CreateAlignedLoad(I64, bytePtr(ctx(), kOffsetDepth), Align(8));
  CallInst *Rc =
      B.CreateCall(Direct, {ctx(), consts(), funcs(), Args, ResSlot, Depth});
  Rc->setMetadata(kDirectCallMetadata, MDNode::get(C, {}));
  // 1: the direct entry refused (a limit, an observer): Otherwise decides.
  BasicBlock *Called =
      BasicBlock::Create(C, fmt::format("i{}.direct.called", PC), Fn);
  B.CreateCondBr(B.CreateICmpEQ(Rc, B.getInt32(1)), Otherwise, Called,
                 Unlikely);
  B.SetInsertPoint(Called);
  return Rc;
}

FunctionCallee FunctionLowering::unitEntry(int64_t PC, int64_t Callee,
                                           Value *Current,
                                           BasicBlock *Otherwise) {
  const std::string &Symbol = UnitSymbols.at(Callee);
  Out.DirectCallees.insert(Callee);
  KeyText += fmt::format("direct{}@{};", Callee, PC);
  FunctionCallee Code = M.getOrInsertFunction(
      Symbol, FunctionType::get(I32, {Ptr, Ptr, Ptr, Ptr, I64}, false));
  BasicBlock *Call = BasicBlock::Create(C, fmt::format("i{}.direct", PC), Fn);
  B.CreateCondBr(B.CreateICmpEQ(Current, Code.getCallee()), Call, Otherwise,
                 Likely);
  B.SetInsertPoint(Call);
  return directEntryDecl(M, Symbol);
}

FunctionCallee FunctionLowering::cellEntry(int64_t PC, int64_t Callee,
                                           Value *Current,
                                           BasicBlock *Otherwise) {
  Out.CellCallees.insert(Callee);
  KeyText += fmt::format("cell{}@{};", Callee, PC);
  BasicBlock *CheckCode =
      BasicBlock::Create(C, fmt::format("i{}.cell.code", PC), Fn);
  BasicBlock *Call = BasicBlock::Create(C, fmt::format("i{}.cell", PC), Fn);
  LoadInst *Target = B.CreateAlignedLoad(
      Ptr, externalByte(directCellSymbol(Callee)), Align(8));
  Target->setAtomic(AtomicOrdering::Acquire);
  B.CreateCondBr(B.CreateICmpNE(Target, ConstantPointerNull::get(Ptr)),
                 CheckCode, Otherwise, Likely);
  B.SetInsertPoint(CheckCode);
  Value *Code =
      B.CreateAlignedLoad(Ptr, bytePtr(Target, kOffsetDirectCode), Align(8));
  B.CreateCondBr(B.CreateICmpEQ(Code, Current), Call, Otherwise, Likely);
  B.SetInsertPoint(Call);
  Value *Entry =
      B.CreateAlignedLoad(Ptr, bytePtr(Target, kOffsetDirectEntry), Align(8));
  return FunctionCallee(
      directEntryType(C), Entry);
}

Value *FunctionLowering::emitDirectCall(int64_t PC, int64_t Callee, int64_t N,
                                        Value *Obj) {
  BasicBlock *Pool = BasicBlock::Create(C, fmt::format("i{}.pool", PC), Fn);
  BasicBlock *Join = BasicBlock::Create(C, fmt::format("i{}.called", PC), Fn);
  Value *DirectRc = tryDirectCall(PC, Callee, Obj, ArgStack, Pool);
  BasicBlock *Direct = B.GetInsertBlock();
  B.CreateBr(Join);
  B.SetInsertPoint(Pool);
  store(ResSlot, constVal(kVMJITNone, 0));
  Value *Entry =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetFuncCell), Align(8));
  Value *PoolRc =
      B.CreateCall(SafeCallTy, Entry, {Obj, ArgStack, B.getInt32(N), ResSlot});
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
  PHINode *Rc = B.CreatePHI(I32, 2, "rc");
  Rc->addIncoming(DirectRc, Direct);
  Rc->addIncoming(PoolRc, Pool);
  return Rc;
}

std::optional<ClosureCall> FunctionLowering::closureCall(InstrView I) const {
  if (!Opts.InlineBuiltins)
    return std::nullopt;
  std::optional<ClosureCall> CC = closureCallAt(Exe, FuncIndex, Callees, I);
  if (CC && !callsDirect(CC->Target, I.callNumArgs() - 2 + CC->NumCaptured))
    return std::nullopt;
  return CC;
}

Value *FunctionLowering::emitClosureCall(int64_t PC, InstrView I,
                                         const ClosureCall &CC) {
  const int64_t N = I.callNumArgs();
  KeyText += fmt::format("closure{}.{}@{};", CC.Target, CC.NumCaptured, PC);
  auto Block = [&](const char *What) {
    return BasicBlock::Create(C, fmt::format("i{}.{}", PC, What), Fn);
  };
  BasicBlock *IsFunc = Block("closure"), *Of = Block("closure.target"),
             *Copy = Block("closure.captured"), *Generic = Block("generic"),
             *Join = Block("closure.called");
  // The closure as passed (argument 1): a function object whose entry is
  // a closure's (only then may the fields below be read) ...
  Val F = load(bytePtr(ArgStack, 16));
  B.CreateCondBr(B.CreateICmpEQ(typeOf(F), B.getInt32(kVMJITFunction)), IsFunc,
                 Generic, Likely);
  B.SetInsertPoint(IsFunc);
  Value *Obj = B.CreateIntToPtr(F.W1, Ptr);
  Value *Entry =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetFuncCell), Align(8));
  B.CreateCondBr(B.CreateICmpEQ(Entry, externalByte(kClosureEntrySymbol)), Of,
                 Generic, Likely);
  // ... of the pool's target, with as many captured values as made.
  B.SetInsertPoint(Of);
  Value *Target = B.CreateAlignedLoad(
      Ptr, bytePtr(Obj, vm::kClosureTargetOffset), Align(8));
  Value *Pool =
      B.CreateAlignedLoad(Ptr, bytePtr(funcs(), 8 * CC.Target), Align(8));
  Value *Captured = B.CreateAlignedLoad(
      Ptr, bytePtr(Obj, vm::kClosureCapturedOffset), Align(8));
  Value *Size =
      B.CreateAlignedLoad(I64, bytePtr(Captured, kOffsetArraySize), Align(8));
  B.CreateCondBr(B.CreateAnd(B.CreateICmpEQ(Target, Pool),
                             B.CreateICmpEQ(Size, B.getInt64(CC.NumCaptured))),
                 Copy, Generic, Likely);
  // The target's arguments: the call's own (from the stack's third slot
  // on), then the captured values, lent.
  B.SetInsertPoint(Copy);
  Value *Data =
      B.CreateAlignedLoad(Ptr, bytePtr(Captured, kOffsetArrayData), Align(8));
  for (int64_t K = 0; K < CC.NumCaptured; ++K)
    store(bytePtr(ArgStack, 16 * (N + K)), load(bytePtr(Data, 16 * K)));
  Value *DirectRc =
      tryDirectCall(PC, CC.Target, Pool, bytePtr(ArgStack, 32), Generic);
  BasicBlock *Direct = B.GetInsertBlock();
  B.CreateBr(Join);
  B.SetInsertPoint(Generic);
  Value *BoundRc = emitBoundCall(PC, I);
  BasicBlock *Bound = B.GetInsertBlock();
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
  PHINode *Rc = B.CreatePHI(I32, 2, "rc");
  Rc->addIncoming(DirectRc, Direct);
  Rc->addIncoming(BoundRc, Bound);
  return Rc;
}

/// Adds one to the VM's count of `Callee` (NativeContext::CallCounts).
void FunctionLowering::countCall(int64_t Callee) {
  Value *Counts =
      B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetCallCounts), Align(8));
  Value *Slot = bytePtr(Counts, 8 * Callee);
  Value *N = B.CreateAlignedLoad(I64, Slot, Align(8));
  B.CreateAlignedStore(B.CreateAdd(N, B.getInt64(1)), Slot, Align(8));
}

void FunctionLowering::lowerCall(int64_t PC, InstrView I) {
  const CalleeBinding &Bind = Callees[static_cast<size_t>(I.callFunc())];
  if (Bind.CountAtCall)
    countCall(I.callFunc());
  if (Opts.InlineBuiltins && Bind.Inline != SpecialBuiltin::None &&
      emitInline(PC, I, Bind.Inline)) {
    B.CreateBr(next(PC));
    return;
  }
  emitCallPath(PC, I);
  const vm::RegName Dst = I.callDst();
  if (Spec && Dst != vm::kVoidRegister && !Spec->Results.empty() &&
      guardableKind(Spec->Results[static_cast<size_t>(PC)])) {
    // The result's kind as speculated, or tier 1 from the next pc on.
    Val R = loadReg(Dst);
    guardKind(R, Spec->Results[static_cast<size_t>(PC)],
              deoptBlock(PC, PC + 1, /*WriteBack=*/true));
    storeReg(Dst, R);
  } else if (Spec && Dst != vm::kVoidRegister && !Spec->ResultTensors.empty() &&
             Spec->ResultTensors[static_cast<size_t>(PC)]) {
    // The tensor's rank and dtype as speculated, or tier 1 from PC + 1.
    Val R = loadReg(Dst);
    guardTensor(R, Spec->ResultTensors[static_cast<size_t>(PC)],
                deoptBlock(PC, PC + 1, /*WriteBack=*/true));
    storeReg(Dst, R);
  }
  B.CreateBr(next(PC));
}

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
  Value *Obj = B.CreateIntToPtr(X.W1, Ptr);
  Value *Rank = B.CreateSExt(
      B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorNDim), Align(4)),
      I64);
  Value *Ok = B.CreateOr(B.CreateICmpEQ(NDim.W1, B.getInt64(-1)),
                         B.CreateICmpEQ(Rank, NDim.W1));
  if (DType) {
    Value *Have =
        B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorDType), Align(4));
    Ok = B.CreateAnd(
        Ok, B.CreateOr(B.CreateICmpEQ(typeOf(*DType), B.getInt32(kVMJITNone)),
                       B.CreateICmpEQ(Have, B.CreateTrunc(DType->W1, I32))));
  }
  B.CreateCondBr(Ok, Pass, Fail, Likely);
  B.SetInsertPoint(Pass);
}

/// Whether heap `Heap`, a tensor, is what the shape builtins take as the
/// heap (heapArg: a compact rank-1 int64 CPU tensor; here without
/// strides) with a slot at MaxSlot (when not negative): loads and compares
/// in the current block.
Value *FunctionLowering::heapUsable(Val Heap, int64_t MaxSlot) {
  Value *H = B.CreateIntToPtr(Heap.W1, Ptr);
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
  Value *H = B.CreateIntToPtr(Heap.W1, Ptr);
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
  Value *Obj = B.CreateIntToPtr(evalArg(I.callArg(0)).W1, Ptr);
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
  Obj = B.CreateIntToPtr(evalArg(I.callArg(0)).W1, Ptr);
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
      B.CreateICmpEQ(S.W1, Storage));
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

bool FunctionLowering::emitInline(int64_t PC, InstrView I,
                                  SpecialBuiltin What) {
  const vm::RegName Dst = I.callDst();
  // A call of a form the builtin's inline form does not take stays a call
  // (which raises the arity error); nothing may be emitted before this
  // check. Flat functions inline only what keeps no value across blocks
  // and needs no `select` (vm::SpecialBuiltinInfo::Flat).
  const std::optional<scalar::Op> Scalar = scalarOpOf(What);
  if (!vm::inlineFormApplies(What, I) ||
      (Flat && !vm::specialBuiltin(What).Flat))
    return false;
  KeyText += fmt::format("inline{}@{};", static_cast<int>(What), PC);

  if (What == SpecialBuiltin::NullValue) {
    // TVM's compiler emits it after the last use of every value: the
    // register is cleared (the old value released), no call is made.
    if (Dst != vm::kVoidRegister)
      moveInto(Dst, constVal(kVMJITNone, 0));
    return true;
  }

  if (What == SpecialBuiltin::Copy) {
    if (Dst == vm::kVoidRegister)
      return true;
    Val X = evalArg(I.callArg(0));
    if (Flat) {
      // One store of the copy: retained and moved from the same slot.
      store(ResSlot, X);
      refSlot(ResSlot, /*Retain=*/true);
      moveFromSlot(Dst, ResSlot);
      return true;
    }
    if (kindsOf(I.callArg(0)) == vm::kind::Any)
      incRefIfObject(X);
    moveInto(Dst, X);
    return true;
  }

  // Everything else: a guarded fast path, and the call as the fallback.
  BasicBlock *Fast = BasicBlock::Create(C, fmt::format("i{}.fast", PC), Fn);
  BasicBlock *Slow = BasicBlock::Create(C, fmt::format("i{}.slow", PC), Fn);
  BasicBlock *Join = BasicBlock::Create(C, fmt::format("i{}.join", PC), Fn);

  // Flat style: the fast paths take ints only (bools and floats call).
  auto IntLike = [&](Value *T) -> Value * {
    if (Flat)
      return B.CreateICmpEQ(T, B.getInt32(kVMJITInt));
    return B.CreateOr(B.CreateICmpEQ(T, B.getInt32(kVMJITInt)),
                      B.CreateICmpEQ(T, B.getInt32(kVMJITBool)));
  };
  // An int's value; a bool reads as 0 or 1.
  auto IntOf = [&](Val V, uint8_t K = vm::kind::Any) -> Value * {
    if (Flat || K == vm::kind::Int)
      return V.W1;
    Value *IsBool = B.CreateICmpEQ(typeOf(V), B.getInt32(kVMJITBool));
    return B.CreateSelect(IsBool,
                          B.CreateZExt(B.CreateICmpNE(V.W1, B.getInt64(0)), I64),
                          V.W1);
  };
  auto BoolVal = [&](Value *Bit) {
    return Val{B.getInt64(kVMJITBool), B.CreateZExt(Bit, I64)};
  };
  // The fast path's result goes to Dst (if any), then to Join.
  auto Finish = [&](Val R) {
    if (Dst != vm::kVoidRegister)
      moveInto(Dst, R);
    B.CreateBr(Join);
  };

  switch (What) {
  case SpecialBuiltin::ReadIfCond: {
    Val X = evalArg(I.callArg(0));
    if (intLike(kindsOf(I.callArg(0))))
      B.CreateBr(Fast);
    else
      B.CreateCondBr(IntLike(typeOf(X)), Fast, Slow, Likely);
    B.SetInsertPoint(Fast);
    if (Flat)
      X = evalArg(I.callArg(0));
    Finish(BoolVal(B.CreateICmpNE(X.W1, B.getInt64(0))));
    break;
  }
  case SpecialBuiltin::TupleGetItem: {
    Val T = evalArg(I.callArg(0)), Ix = evalArg(I.callArg(1));
    BasicBlock *Bounds = BasicBlock::Create(C, fmt::format("i{}.bounds", PC), Fn);
    Value *Types =
        B.CreateAnd(B.CreateICmpEQ(typeOf(T), B.getInt32(kVMJITArray)),
                    B.CreateICmpEQ(typeOf(Ix), B.getInt32(kVMJITInt)));
    B.CreateCondBr(Types, Bounds, Slow, Likely);
    B.SetInsertPoint(Bounds);
    Value *Obj = B.CreateIntToPtr(T.W1, Ptr);
    Value *Size =
        B.CreateAlignedLoad(I64, bytePtr(Obj, kOffsetArraySize), Align(8));
    // Unsigned compare: a negative index is out of range too.
    B.CreateCondBr(B.CreateICmpULT(Ix.W1, Size), Fast, Slow, Likely);
    B.SetInsertPoint(Fast);
    Value *Data =
        B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetArrayData), Align(8));
    Val E = load(bytePtr(Data, B.CreateMul(Ix.W1, B.getInt64(16))));
    incRefIfObject(E);
    Finish(E);
    break;
  }
  case SpecialBuiltin::CheckTensorInfo:
    emitCheckTensorInfo(PC, I, Fast, Slow);
    if (Dst != vm::kVoidRegister) { // x, read again (flat functions)
      Val X = evalArg(I.callArg(0));
      if (Flat) {
        // As copy's: one store, retained and moved from the same slot.
        store(ResSlot, X);
        refSlot(ResSlot, /*Retain=*/true);
        moveFromSlot(Dst, ResSlot);
        B.CreateBr(Join);
      } else {
        incRefIfObject(X);
        Finish(X);
      }
    } else {
      B.CreateBr(Join);
    }
    break;
  case SpecialBuiltin::MatchShape:
    emitMatchShape(PC, I, Fast, Slow);
    Finish(constVal(kVMJITNone, 0));
    break;
  case SpecialBuiltin::AllocTensor:
    Finish(emitAllocTensorHit(PC, I, Fast, Slow));
    break;
  case SpecialBuiltin::MakeShape:
    Finish(emitMakeShapeHit(PC, I, Fast, Slow));
    break;
  case SpecialBuiltin::ScalarNeg:
  case SpecialBuiltin::ScalarNot: {
    Val X = evalArg(I.callArg(0));
    Value *T = typeOf(X);
    const uint8_t KX = kindsOf(I.callArg(0));
    if (What == SpecialBuiltin::ScalarNot || Flat || intLike(KX)) {
      // Ints and bools inline; anything else calls.
      if (intLike(KX))
        B.CreateBr(Fast);
      else
        B.CreateCondBr(IntLike(T), Fast, Slow, Likely);
      B.SetInsertPoint(Fast);
      if (Flat)
        X = evalArg(I.callArg(0));
      if (What == SpecialBuiltin::ScalarNot)
        Finish(BoolVal(B.CreateICmpEQ(IntOf(X, KX), B.getInt64(0))));
      else
        Finish(
            {B.getInt64(kVMJITInt), B.CreateSub(B.getInt64(0), IntOf(X, KX))});
      break;
    }
    BasicBlock *FloatBB = BasicBlock::Create(C, fmt::format("i{}.f", PC), Fn);
    BasicBlock *NotInt = BasicBlock::Create(C, fmt::format("i{}.ni", PC), Fn);
    B.CreateCondBr(IntLike(T), Fast, NotInt, Likely);
    B.SetInsertPoint(NotInt);
    B.CreateCondBr(B.CreateICmpEQ(T, B.getInt32(kVMJITFloat)), FloatBB, Slow);
    B.SetInsertPoint(Fast);
    Finish({B.getInt64(kVMJITInt), B.CreateSub(B.getInt64(0), IntOf(X))});
    B.SetInsertPoint(FloatBB);
    Value *D = B.CreateBitCast(X.W1, B.getDoubleTy());
    Finish({B.getInt64(kVMJITFloat),
            B.CreateBitCast(B.CreateFNeg(D), I64)});
    break;
  }
  default: {
    // Binary scalar operations.
    const auto Cmp = comparisonPredicates(What);
    Val A = evalArg(I.callArg(0)), Bv = evalArg(I.callArg(1));
    Value *TA = typeOf(A), *TB = typeOf(Bv);
    const uint8_t KA = kindsOf(I.callArg(0)), KB = kindsOf(I.callArg(1));
    // Ints and bools for certain: the int path alone, no type test.
    const bool IntsOnly = intLike(KA) && intLike(KB);
    BasicBlock *FloatBB = nullptr;
    if (IntsOnly) {
      B.CreateBr(Fast);
    } else if (Flat) {
      B.CreateCondBr(B.CreateAnd(IntLike(TA), IntLike(TB)), Fast, Slow,
                     Likely);
    } else {
      FloatBB = BasicBlock::Create(C, fmt::format("i{}.f", PC), Fn);
      BasicBlock *NotInt =
          BasicBlock::Create(C, fmt::format("i{}.ni", PC), Fn);
      B.CreateCondBr(B.CreateAnd(IntLike(TA), IntLike(TB)), Fast, NotInt,
                     Likely);
      B.SetInsertPoint(NotInt);
      auto Numeric = [&](Value *T) {
        return B.CreateOr(IntLike(T),
                          B.CreateICmpEQ(T, B.getInt32(kVMJITFloat)));
      };
      B.CreateCondBr(B.CreateAnd(Numeric(TA), Numeric(TB)), FloatBB, Slow);
    }

    // int64 (bool counts as int).
    B.SetInsertPoint(Fast);
    if (Flat) {
      A = evalArg(I.callArg(0));
      Bv = evalArg(I.callArg(1));
    }
    Value *X = IntOf(A, KA), *Y = IntOf(Bv, KB);
    switch (What) {
    case SpecialBuiltin::ScalarAdd:
      Finish({B.getInt64(kVMJITInt), B.CreateAdd(X, Y)});
      break;
    case SpecialBuiltin::ScalarSub:
      Finish({B.getInt64(kVMJITInt), B.CreateSub(X, Y)});
      break;
    case SpecialBuiltin::ScalarMul:
      Finish({B.getInt64(kVMJITInt), B.CreateMul(X, Y)});
      break;
    case SpecialBuiltin::ScalarDiv:
    case SpecialBuiltin::ScalarMod: {
      // Division by zero and INT64_MIN / -1 take the call, which raises.
      Value *Bad = B.CreateOr(
          B.CreateICmpEQ(Y, B.getInt64(0)),
          B.CreateAnd(B.CreateICmpEQ(Y, B.getInt64(-1)),
                      B.CreateICmpEQ(X, B.getInt64(INT64_MIN))));
      BasicBlock *Do = BasicBlock::Create(C, fmt::format("i{}.div", PC), Fn);
      B.CreateCondBr(Bad, Slow, Do, Unlikely);
      B.SetInsertPoint(Do);
      if (Flat) {
        X = evalArg(I.callArg(0)).W1;
        Y = evalArg(I.callArg(1)).W1;
      }
      Finish({B.getInt64(kVMJITInt), What == SpecialBuiltin::ScalarDiv
                                         ? B.CreateSDiv(X, Y)
                                         : B.CreateSRem(X, Y)});
      break;
    }
    case SpecialBuiltin::ScalarMin:
      Finish({B.getInt64(kVMJITInt),
              B.CreateSelect(B.CreateICmpSLT(Y, X), Y, X)});
      break;
    case SpecialBuiltin::ScalarMax:
      Finish({B.getInt64(kVMJITInt),
              B.CreateSelect(B.CreateICmpSGT(Y, X), Y, X)});
      break;
    default:
      if (!Cmp)
        return false;
      Finish(BoolVal(B.CreateICmp(Cmp->first, X, Y)));
      break;
    }

    if (Flat || IntsOnly)
      break;
    // float64 when either is a float.
    B.SetInsertPoint(FloatBB);
    auto ToDouble = [&](Val V) {
      Value *IsFloat = B.CreateICmpEQ(typeOf(V), B.getInt32(kVMJITFloat));
      return B.CreateSelect(IsFloat, B.CreateBitCast(V.W1, B.getDoubleTy()),
                            B.CreateSIToFP(IntOf(V), B.getDoubleTy()));
    };
    Value *FX = ToDouble(A), *FY = ToDouble(Bv);
    auto FloatRes = [&](Value *D) {
      Finish({B.getInt64(kVMJITFloat), B.CreateBitCast(D, I64)});
    };
    switch (What) {
    case SpecialBuiltin::ScalarAdd:
      FloatRes(B.CreateFAdd(FX, FY));
      break;
    case SpecialBuiltin::ScalarSub:
      FloatRes(B.CreateFSub(FX, FY));
      break;
    case SpecialBuiltin::ScalarMul:
      FloatRes(B.CreateFMul(FX, FY));
      break;
    case SpecialBuiltin::ScalarDiv:
      FloatRes(B.CreateFDiv(FX, FY));
      break;
    case SpecialBuiltin::ScalarMod:
      FloatRes(B.CreateFRem(FX, FY)); // fmod
      break;
    case SpecialBuiltin::ScalarMin:
      FloatRes(B.CreateSelect(B.CreateFCmpOLT(FY, FX), FY, FX));
      break;
    case SpecialBuiltin::ScalarMax:
      FloatRes(B.CreateSelect(B.CreateFCmpOGT(FY, FX), FY, FX));
      break;
    default:
      if (!Cmp)
        return false;
      Finish(BoolVal(B.CreateFCmp(Cmp->second, FX, FY)));
      break;
    }
    break;
  }
  }

  // The fallback: the real call (it raises the proper error for bad
  // operand types, division by zero, an index out of range), where the
  // kinds leave a way to it.
  if (pred_empty(Slow)) {
    Slow->eraseFromParent();
    B.SetInsertPoint(Join);
    return true;
  }
  B.SetInsertPoint(Slow);
  emitCallPath(PC, I);
  if (Scalar && scalar::returnsBool(*Scalar) && Dst != vm::kVoidRegister &&
      !Flat) {
    // The standard comparisons and `not` return a bool when they return:
    // the optimizer may know the kind after the join.
    Val R = loadReg(Dst);
    storeReg(Dst, {B.getInt64(kVMJITBool), R.W1});
  }
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
  return true;
}

void FunctionLowering::guardKind(Val &V, uint8_t K, BasicBlock *Fail) {
  const int32_t Type = vm::kind::typeIndexOf(K);
  BasicBlock *Pass = BasicBlock::Create(C, "guard.ok", Fn);
  B.CreateCondBr(B.CreateICmpEQ(typeOf(V), B.getInt32(Type)), Pass, Fail,
                 Likely);
  B.SetInsertPoint(Pass);
  V.W0 = B.getInt64(static_cast<uint32_t>(Type));
}

void FunctionLowering::guardTensor(Val &V, uint64_t Word, BasicBlock *Fail) {
  BasicBlock *Fields = BasicBlock::Create(C, "guard.tensor", Fn);
  BasicBlock *Pass = BasicBlock::Create(C, "guard.ok", Fn);
  B.CreateCondBr(B.CreateICmpEQ(typeOf(V), B.getInt32(kVMJITTensor)), Fields,
                 Fail, Likely);
  B.SetInsertPoint(Fields);
  Value *Obj = B.CreateIntToPtr(V.W1, Ptr);
  Value *Rank =
      B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorNDim), Align(4));
  Value *DType =
      B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorDType), Align(4));
  Value *Ok = B.CreateAnd(
      B.CreateICmpEQ(Rank, B.getInt32(vm::feedback::rankOf(Word))),
      B.CreateICmpEQ(DType, B.getInt32(vm::feedback::dtypeBitsOf(Word))));
  B.CreateCondBr(Ok, Pass, Fail, Likely);
  B.SetInsertPoint(Pass);
  V.W0 = B.getInt64(kVMJITTensor);
}

uint64_t FunctionLowering::tensorFact(Arg A) const {
  if (Tensors.empty() || A.kind() != ArgKind::Register ||
      vm::isSpecialRegister(A.value()))
    return 0;
  return Tensors[static_cast<size_t>(CurPC)][static_cast<size_t>(A.value())];
}

BasicBlock *FunctionLowering::deoptBlock(int64_t Site, int64_t ResumePC,
                                         bool WriteBack) {
  IRBuilderBase::InsertPointGuard Guard(B);
  BasicBlock *Deopt = BasicBlock::Create(C, fmt::format("deopt.{}", Site), Fn);
  B.SetInsertPoint(Deopt);
  if (WriteBack)
    for (int64_t R = 0; R < F.RegisterFileSize; ++R)
      store(regPtr(R),
            deadScalarAfter(Site, R) ? constVal(kVMJITNone, 0) : loadReg(R));
  GlobalVariable *Manager = M.getGlobalVariable(kDeoptManager);
  if (!Manager)
    Manager = new GlobalVariable(M, B.getInt8Ty(), /*isConstant=*/true,
                                 GlobalValue::ExternalLinkage, nullptr,
                                 kDeoptManager);
  FunctionCallee Helper =
      helperFn(kDeoptHelper, I32, {Ptr, Ptr, Ptr, Ptr, Ptr, I64, I64});
  CallInst *Rc =
      B.CreateCall(Helper, {Manager, ctx(), regs(), consts(), funcs(),
                            B.getInt64(Site), B.getInt64(ResumePC)});
  Rc->setTailCall();
  // The frame's context and registers are read and written only during
  // the call: neither escapes it (lets the optimizer forget stores to a
  // direct entry's stack frame that no one reads after the call).
  Rc->addParamAttr(1, Attribute::NoCapture);
  Rc->addParamAttr(2, Attribute::NoCapture);
  B.CreateRet(Rc);
  return Deopt;
}

bool FunctionLowering::genericEntry(int64_t PC) const {
  return !Spec ||
         std::find(Spec->GenericEntries.begin(), Spec->GenericEntries.end(),
                   PC) != Spec->GenericEntries.end();
}

uint8_t FunctionLowering::kindsOf(Arg A) const {
  if (Kinds.empty())
    return vm::kind::Any;
  const uint8_t K = argKinds(Exe, Kinds[static_cast<size_t>(CurPC)], A);
  // Only scalar sets are guarded where they come in; 0: unreachable here.
  return scalarKinds(K) ? K : vm::kind::Any;
}

BasicBlock *FunctionLowering::entryAt(int64_t PC, bool Guard) {
  IRBuilderBase::InsertPointGuard Keep(B);
  BasicBlock *Enter = BasicBlock::Create(C, fmt::format("enter.{}", PC), Fn);
  B.SetInsertPoint(Enter);
  BasicBlock *Deopt = nullptr;
  for (int64_t R = 0; R < F.RegisterFileSize; ++R) {
    Val V = load(regPtr(R));
    const uint8_t K =
        Guard && !Kinds.empty()
            ? Kinds[static_cast<size_t>(PC)][static_cast<size_t>(R)]
            : 0;
    if (scalarKinds(K)) {
      // What the inference says holds here; one kind becomes a constant.
      if (!Deopt)
        Deopt = deoptBlock(PC, PC, /*WriteBack=*/false);
      if (guardableKind(K)) {
        guardKind(V, K, Deopt);
      } else {
        Value *In = B.getFalse();
        for (uint8_t Bit = 1; Bit <= vm::kind::Float; Bit <<= 1)
          if (K & Bit)
            In = B.CreateOr(
                In, B.CreateICmpEQ(typeOf(V),
                                   B.getInt32(vm::kind::typeIndexOf(Bit))));
        BasicBlock *Pass = BasicBlock::Create(C, "guard.ok", Fn);
        B.CreateCondBr(In, Pass, Deopt, Likely);
        B.SetInsertPoint(Pass);
      }
    } else if (const uint64_t W = Guard && !Tensors.empty()
                                      ? Tensors[static_cast<size_t>(PC)]
                                               [static_cast<size_t>(R)]
                                      : 0) {
      if (!Deopt)
        Deopt = deoptBlock(PC, PC, /*WriteBack=*/false);
      guardTensor(V, W, Deopt);
    }
    storeReg(R, V);
  }
  B.CreateBr(Blocks[static_cast<size_t>(PC)]);
  return Enter;
}

BasicBlock *FunctionLowering::entryDeoptBlock() {
  BasicBlock *Deopt = deoptBlock(0, 0, /*WriteBack=*/false);
  // The parameters are in the frame as passed; a direct entry (only
  // functions that export one have callers that make direct calls) left
  // the other registers unset (entersWithParamsOnly): None for tier 1.
  if (!Out.ExportsDirect[static_cast<size_t>(FuncIndex)])
    return Deopt;
  IRBuilderBase::InsertPointGuard Guard(B);
  B.SetInsertPoint(Deopt, Deopt->getFirstInsertionPt());
  for (int64_t R = F.NumParams; R < F.RegisterFileSize; ++R)
    store(regPtr(R), constVal(kVMJITNone, 0));
  return Deopt;
}

void FunctionLowering::emitCallEntry() {
  BasicBlock *Deopt = nullptr;
  for (int64_t R = 0; R < F.RegisterFileSize; ++R) {
    if (R >= F.NumParams) {
      storeReg(R, constVal(kVMJITNone, 0));
      continue;
    }
    Val V = load(regPtr(R));
    const uint8_t K = Spec && static_cast<size_t>(R) < Spec->Params.size()
                          ? Spec->Params[R]
                          : 0;
    const uint64_t W =
        Spec && static_cast<size_t>(R) < Spec->ParamTensors.size()
            ? Spec->ParamTensors[static_cast<size_t>(R)]
            : 0;
    if ((guardableKind(K) || W) && !Deopt)
      Deopt = entryDeoptBlock();
    if (guardableKind(K))
      guardKind(V, K, Deopt);
    else if (W)
      guardTensor(V, W, Deopt);
    storeReg(R, V);
  }
  B.CreateBr(Blocks[0]);
}

/// What the code assumes is part of its object-cache key.
void FunctionLowering::emitSpecKey() {
  KeyText += "spec:";
  for (uint8_t K : Spec->Params)
    KeyText += fmt::format("{:x},", K);
  KeyText += "/";
  for (size_t PC = 0; PC < Spec->Results.size(); ++PC)
    if (Spec->Results[PC])
      KeyText += fmt::format("{}={:x},", PC, Spec->Results[PC]);
  KeyText += "/";
  for (size_t K = 0; K < Spec->ParamTensors.size(); ++K)
    if (Spec->ParamTensors[K])
      KeyText += fmt::format("p{}={:x},", K, Spec->ParamTensors[K]);
  for (size_t PC = 0; PC < Spec->ResultTensors.size(); ++PC)
    if (Spec->ResultTensors[PC])
      KeyText += fmt::format("{}={:x},", PC, Spec->ResultTensors[PC]);
  KeyText += "/";
  for (int64_t H : Spec->GenericEntries)
    KeyText += fmt::format("{},", H);
  KeyText += ";";
}

void FunctionLowering::emitTensorFactsKey() {
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() != Opcode::Call)
      continue;
    if (const uint64_t W = checkedTensorWord(Exe, I))
      KeyText += fmt::format("tw{}={:x};", PC, W);
  }
}

void FunctionLowering::lowerRet(InstrView I) {
  const bool Void = I.retReg() == vm::kVoidRegister; // returns None
  Val V = Void ? constVal(kVMJITNone, 0) : loadReg(I.retReg());
  if (!Void)
    storeReg(I.retReg(), constVal(kVMJITNone, 0));
  Value *Out =
      B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetResult), Align(8));
  store(Out, V);
  releaseAll();
  B.CreateRet(B.getInt32(0));
}

BasicBlock *FunctionLowering::jumpTarget(int64_t PC, int64_t Offset) {
  BasicBlock *Target = Blocks[static_cast<size_t>(PC + Offset)];
  if (Offset > 0)
    return Target;
  // A backward jump is a step, counted as the interpreter counts it: the
  // fast path decrements the fuel and tests the interrupt flag.
  IRBuilderBase::InsertPointGuard Guard(B);
  BasicBlock *Step = BasicBlock::Create(C, fmt::format("i{}.step", PC), Fn);
  BasicBlock *Slow = BasicBlock::Create(C, fmt::format("i{}.poll", PC), Fn);
  B.SetInsertPoint(Step);
  Value *Ctl = Flat ? B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetControl),
                                          Align(8))
                    : StepCtl;
  Value *FuelPtr = bytePtr(Ctl, kOffsetFuel);
  Value *Fuel = B.CreateSub(B.CreateAlignedLoad(I64, FuelPtr, Align(8)),
                            B.getInt64(1));
  B.CreateAlignedStore(Fuel, FuelPtr, Align(8));
  LoadInst *Irq = B.CreateAlignedLoad(I32, bytePtr(Ctl, kOffsetInterrupt),
                                      Align(4));
  Irq->setAtomic(AtomicOrdering::Monotonic);
  Value *Poll = B.CreateOr(B.CreateICmpSLT(Fuel, B.getInt64(0)),
                           B.CreateICmpNE(Irq, B.getInt32(0)));
  B.CreateCondBr(Poll, Slow, Target, Unlikely);
  B.SetInsertPoint(Slow);
  FunctionCallee StepFn = helperFn(helper::vmjit_jit_step, I32, {Ptr});
  Value *Rc = B.CreateCall(StepFn, {ctx()});
  branchToError(B.CreateICmpNE(Rc, B.getInt32(0)), PC, Target);
  return Step;
}

void FunctionLowering::lowerIf(int64_t PC, InstrView I) {
  // `if %void` tests None: always the condition's error.
  auto Cond = [&] {
    return I.ifCond() == vm::kVoidRegister ? constVal(kVMJITNone, 0)
                                           : loadReg(I.ifCond());
  };
  Val V = Cond();
  if (I.ifCond() != vm::kVoidRegister &&
      intLike(kindsOf(Arg::reg(I.ifCond())))) {
    B.CreateCondBr(B.CreateICmpNE(V.W1, B.getInt64(0)), next(PC),
                   jumpTarget(PC, I.ifFalseOffset()));
    return;
  }
  Value *T = typeOf(V);
  Value *Ok = B.CreateOr(B.CreateICmpEQ(T, B.getInt32(kVMJITInt)),
                         B.CreateICmpEQ(T, B.getInt32(kVMJITBool)));
  BasicBlock *Test = BasicBlock::Create(C, fmt::format("i{}.test", PC), Fn);
  BasicBlock *Bad = BasicBlock::Create(C, fmt::format("i{}.bad", PC), Fn);
  B.CreateCondBr(Ok, Test, Bad, Likely);
  B.SetInsertPoint(Bad);
  FunctionCallee IfError = helperFn(helper::vmjit_jit_if_error, I32, {Ptr});
  if (Flat)
    V = Cond();
  store(ResSlot, V); // the helper reads the value's type
  B.CreateCall(IfError, {ResSlot});
  B.CreateBr(errorSite(PC));
  if (!Flat)
    ErrPC->addIncoming(B.getInt64(PC), Bad);
  B.SetInsertPoint(Test);
  if (Flat)
    V = Cond();
  B.CreateCondBr(B.CreateICmpNE(V.W1, B.getInt64(0)), next(PC),
                 jumpTarget(PC, I.ifFalseOffset()));
}

Function *FunctionLowering::lower(const std::string &Symbol) {
  FunctionType *FT = FunctionType::get(I32, {Ptr, Ptr, Ptr, Ptr, I64}, false);
  // A direct call of it may have declared it already.
  Fn = M.getFunction(Symbol);
  if (!Fn)
    Fn = Function::Create(FT, GlobalValue::ExternalLinkage, Symbol, M);
  Fn->addFnAttr(Attribute::NoUnwind);
  Fn->addFnAttr("frame-pointer", "all"); // perf and gdb see JIT frames
  auto AI = Fn->arg_begin();
  for (Value *&A : Args)
    A = &*AI++;
  EntryPC = &*AI;
  Args[0]->setName("ctx");
  Args[1]->setName("regs");
  Args[2]->setName("consts");
  Args[3]->setName("funcs");
  EntryPC->setName("entry_pc");
  for (unsigned K = 0; K < 4; ++K)
    Fn->addParamAttr(K, Attribute::NoAlias);

  const int64_t N = F.numInstrs();
  BasicBlock *Entry = BasicBlock::Create(C, "entry", Fn);
  Blocks.resize(static_cast<size_t>(N) + 1, nullptr);
  for (int64_t PC = 0; PC < N; ++PC)
    Blocks[static_cast<size_t>(PC)] =
        BasicBlock::Create(C, fmt::format("i{}", PC), Fn);
  ErrBB = BasicBlock::Create(C, "error", Fn);

  // The argument stack: one alloca shared by every call.
  int64_t MaxArgs = 1;
  std::set<int64_t> LoopHeads;
  for (int64_t PC = 0; PC < N; ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() == Opcode::Call) {
      MaxArgs = std::max(MaxArgs, I.callNumArgs());
      // A closure's captured values go after the call's arguments.
      if (std::optional<ClosureCall> CC =
              closureCallAt(Exe, FuncIndex, Callees, I))
        MaxArgs = std::max(MaxArgs, I.callNumArgs() + CC->NumCaptured);
    } else if (I.opcode() == Opcode::Goto && I.gotoOffset() <= 0)
      LoopHeads.insert(PC + I.gotoOffset());
    else if (I.opcode() == Opcode::If && I.ifFalseOffset() <= 0)
      LoopHeads.insert(PC + I.ifFalseOffset());
  }
  B.SetInsertPoint(Entry);
  ArgStack = B.CreateAlloca(ArrayType::get(B.getInt8Ty(), 16 * MaxArgs),
                            nullptr, "args");
  cast<AllocaInst>(ArgStack)->setAlignment(Align(16));
  ResSlot = B.CreateAlloca(ArrayType::get(B.getInt8Ty(), 16), nullptr, "res");
  cast<AllocaInst>(ResSlot)->setAlignment(Align(16));
  Flat = !promote();
  KeyText += Flat ? "flat;" : "promoted;";
  if (!Flat)
    Live = liveAfter(Exe, FuncIndex);
  if (Opts.OwnedArguments && !Flat) {
    KeyText += "owned;";
    OwnStack =
        B.CreateAlloca(ArrayType::get(I64, kMaxOwnedArgs), nullptr, "owned");
  }
  if (Flat)
    for (int K = 0; K < 4; ++K) {
      ArgSlots[K] = B.CreateAlloca(Ptr, nullptr, Args[K]->getName() + ".slot");
      B.CreateAlignedStore(Args[K], ArgSlots[K], Align(8))->setVolatile(true);
    }
  if (!LoopHeads.empty() && !Flat)
    StepCtl = B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetControl), Align(8),
                                  "step_ctl");
  if (!Flat) {
    for (int64_t R = 0; R < F.RegisterFileSize; ++R)
      Shadow.emplace_back(
          B.CreateAlloca(I64, nullptr, fmt::format("r{}.t", R)),
          B.CreateAlloca(I64, nullptr, fmt::format("r{}.v", R)));
    if (auto It = Opts.Speculate.find(FuncIndex); It != Opts.Speculate.end()) {
      Spec = &It->second;
      Kinds = inferKinds(Exe, FuncIndex, Callees, Opts.InlineBuiltins, *Spec);
      Tensors =
          inferTensorFacts(Exe, FuncIndex, Callees, Opts.InlineBuiltins, *Spec);
      emitSpecKey();
      emitTensorFactsKey();
    }
  }
  // On-stack replacement enters at a loop header, a call at 0. A call
  // entering at 0 (no loop header there) has only the parameters set: the
  // other registers are known None, which lets the optimizer drop their
  // releases. Every other entry loads every register from the frame; under
  // speculation each entry guards what it assumes.
  const bool Split =
      !Flat && !LoopHeads.count(0) && F.NumParams < F.RegisterFileSize;
  if (Split) {
    BasicBlock *Fresh = BasicBlock::Create(C, "entry.call", Fn);
    BasicBlock *Osr = BasicBlock::Create(C, "entry.osr", Fn);
    B.CreateCondBr(B.CreateICmpEQ(EntryPC, B.getInt64(0)), Fresh, Osr);
    B.SetInsertPoint(Fresh);
    emitCallEntry();
    B.SetInsertPoint(Osr);
  }
  // Code is entered at pc 0 or at a loop header, never elsewhere: under
  // Split the switch's default is unreachable, so the call's entry is the
  // only way into pc 0 and what it knows holds there.
  BasicBlock *Default = Flat ? Blocks[0] : nullptr;
  if (!Flat && Split) {
    IRBuilderBase::InsertPointGuard Keep(B);
    Default = BasicBlock::Create(C, "entry.none", Fn);
    B.SetInsertPoint(Default);
    B.CreateUnreachable();
  } else if (!Flat) {
    Default = entryAt(0, /*Guard=*/!genericEntry(0));
  }
  SwitchInst *Sw =
      B.CreateSwitch(EntryPC, Default, static_cast<unsigned>(LoopHeads.size()));
  for (int64_t H : LoopHeads)
    if (H != 0)
      Sw->addCase(B.getInt64(H), Flat ? Blocks[static_cast<size_t>(H)]
                                      : entryAt(H, /*Guard=*/!genericEntry(H)));

  B.SetInsertPoint(ErrBB);
  if (!Flat) {
    ErrPC = B.CreatePHI(I64, 4, "error_pc");
    B.CreateAlignedStore(ErrPC, bytePtr(ctx(), kOffsetErrorPC), Align(8));
  }
  releaseAll();
  B.CreateRet(B.getInt32(-1));

  for (int64_t PC = 0; PC < N; ++PC) {
    if (Opts.Cancel && PC % 256 == 0 &&
        Opts.Cancel->load(std::memory_order_relaxed))
      throw std::runtime_error(kCompileAbandoned);
    InstrView I = Exe.instr(F.StartInstr + PC);
    B.SetInsertPoint(Blocks[static_cast<size_t>(PC)]);
    CurPC = PC;
    switch (I.opcode()) {
    case Opcode::Call:
      lowerCall(PC, I);
      break;
    case Opcode::Ret:
      lowerRet(I);
      break;
    case Opcode::Goto:
      B.CreateBr(jumpTarget(PC, I.gotoOffset()));
      break;
    case Opcode::If:
      lowerIf(PC, I);
      break;
    }
  }
  // The verifier guarantees the last instruction is ret or goto, so the
  // block after it is never reached.
  Blocks[static_cast<size_t>(N)] = nullptr;
  if (ErrPC && ErrPC->getNumIncomingValues() == 0) {
    // Nothing can fail: the error exit is unreachable (a PHI may not be
    // empty, so it goes; the optimizer drops the blocks).
    ErrPC->replaceAllUsesWith(B.getInt64(-1));
    ErrPC->eraseFromParent();
  }
  return Fn;
}

} // namespace

bool entersWithParamsOnly(const vm::Executable &Exe, int64_t Func,
                          const LoweringOptions &Opts) {
  const vm::FunctionInfo &F = Exe.function(Func);
  if (lowersFlat(F, Opts))
    return false;
  // A backward jump to pc 0 makes it a loop header, which every entry
  // loads whole (FunctionLowering::lower).
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if ((I.opcode() == Opcode::Goto && PC + I.gotoOffset() == 0) ||
        (I.opcode() == Opcode::If && PC + I.ifFalseOffset() == 0))
      return false;
  }
  return true;
}

bool lowersFlat(const vm::FunctionInfo &F, const LoweringOptions &Opts) {
  return !Opts.PromoteRegisters ||
         F.numInstrs() * F.RegisterFileSize > Opts.PromoteLimit;
}

LoweredModule lowerFunctions(const vm::Executable &Exe,
                             std::span<const int64_t> Funcs,
                             const std::vector<CalleeBinding> &Callees,
                             const LoweringOptions &Opts) {
  LoweredModule Out;
  Out.Context = std::make_unique<LLVMContext>();
  Out.Module = std::make_unique<Module>("vmjit", *Out.Context);
  // The bytecode function's name in the symbol: perf and gdb show it.
  for (int64_t K : Funcs)
    Out.Symbols[K] = fmt::format("vmjit_f{}.{}", K, Exe.function(K).Name);
  if (Opts.DirectCalls)
    Out.ExportsDirect = exportedDirectEntries(Exe, Callees);
  else
    Out.ExportsDirect.assign(Exe.functions().size(), false);
  for (int64_t K : Funcs) {
    Out.KeyText += fmt::format("F{};", K);
    FunctionLowering(*Out.Module, Exe, K, Callees, Opts, Out, Out.Symbols)
        .lower(Out.Symbols[K]);
  }
  // Direct entries: of the unit's callees (internal), and exported ones.
  std::set<int64_t> Entries = Out.DirectCallees;
  for (int64_t K : Funcs)
    if (Out.ExportsDirect[static_cast<size_t>(K)]) {
      Entries.insert(K);
      Out.DirectEntries[K] = directEntrySymbol(Out.Symbols[K]);
      Out.KeyText += fmt::format("export{};", K);
    }
  for (int64_t K : Entries) {
    const bool WithCode = Exe.function(K).numInstrs() <= Opts.DirectBodyLimit;
    if (WithCode)
      Out.KeyText += fmt::format("body{};", K);
    emitDirectEntry(*Out.Module, Exe, K, Out.Symbols[K],
                    entersWithParamsOnly(Exe, K, Opts),
                    Out.DirectEntries.count(K) != 0, WithCode);
  }
  if (!Entries.empty() || !Out.CellCallees.empty())
    Out.Absolute[kNativeEntrySymbol] =
        reinterpret_cast<uint64_t>(vm::nativeFunctionEntry());
  if (Out.Module->getGlobalVariable(kClosureEntrySymbol))
    Out.Absolute[kClosureEntrySymbol] =
        reinterpret_cast<uint64_t>(vm::closureEntry());
  // Bind the externals the module uses.
  for (size_t K = 0; K < Callees.size(); ++K) {
    std::string Name = fmt::format("__vmjit_callee_{}", K);
    if (!Out.Module->getFunction(Name))
      continue;
    Out.Absolute[Name] = Callees[K].Entry;
    Out.Absolute[fmt::format("__vmjit_self_{}", K)] = Callees[K].Self;
    Out.KeyText += fmt::format("c{}={}:{};", K, Exe.function(K).Name,
                               static_cast<int>(Callees[K].Inline));
  }
  // Which callees the code counts (pool-bound ones have no symbol).
  for (size_t K = 0; K < Callees.size(); ++K)
    if (Callees[K].CountAtCall)
      Out.KeyText += fmt::format("n{};", K);
  return Out;
}

std::string moduleText(const Module &M) {
  std::string S;
  raw_string_ostream OS(S);
  M.print(OS, nullptr);
  return S;
}

} // namespace vmjit::jit
