//===- function_lowering.h - One bytecode function to LLVM IR -*- C++ -*-===//
//
// The lowering of one function (FunctionLowering), shared by the files
// that hold its parts: lowering.cpp (values, registers, control flow and
// the driver), lower_calls.cpp (calls: bound, direct, closures),
// inline_builtins.cpp (the special builtins' inline forms, an emitter
// each), lower_speculation.cpp (guards, deoptimization, entries) and
// lower_stack_tensors.cpp (tensors on the stack, kernels inlined).
// Internal to jit/.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_FUNCTION_LOWERING_H
#define VMJIT_JIT_FUNCTION_LOWERING_H

#include "closure_call.h"
#include "context_layout.h"
#include "direct_call.h"
#include "kernel_inline.h"
#include "kind_inference.h"
#include "liveness.h"
#include "runtime_helpers.h"
#include "stack_tensors.h"
#include "tensor_facts.h"
#include "vmjit/bytecode/bytecode.h"
#include "vmjit/jit/engine.h"
#include "vmjit/jit/lowering.h"
#include "vmjit/kernels/scalar_ops.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/c_api.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/shape_codes.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/alloc_sites.h"
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

namespace vmjit::jit::lower {

using namespace llvm;
// LLVM's Function, not the runtime's packed Function.
using llvm::Function;
namespace scalar = kernels::scalar;

using vm::Arg;
using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

/// The two words of a value, as SSA values.
struct Val {
  Value
      *TypeWord; // type index in the low 32 bits (and the small-string length)
  Value *Payload;
};

/// A call being replaced by a special builtin's inline form, with the
/// blocks of a guarded form (inline_builtins.cpp): the fast path, the
/// call (Slow) and where they meet (Join).
struct InlinePaths {
  int64_t PC;
  InstrView I;
  SpecialBuiltin What;
  BasicBlock *Fast = nullptr, *Slow = nullptr, *Join = nullptr;
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

class FunctionLowering {
public:
  FunctionLowering(Module &M, const vm::Executable &Exe, int64_t FuncIndex,
                   const std::vector<CalleeBinding> &Callees,
                   const LoweringOptions &Opts, LoweredModule &Out,
                   const std::map<int64_t, std::string> &UnitSymbols)
      : M(M), C(M.getContext()), B(C), Exe(Exe), FuncIndex(FuncIndex),
        F(Exe.function(FuncIndex)), Callees(Callees), Opts(Opts), Key(Out.Key),
        Out(Out), UnitSymbols(UnitSymbols) {
    I64 = Type::getInt64Ty(C);
    I32 = Type::getInt32Ty(C);
    Ptr = PointerType::getUnqual(C);
    SafeCallTy = FunctionType::get(I32, {Ptr, Ptr, I32, Ptr}, false);
    MDBuilder MDB(C);
    Unlikely = MDB.createBranchWeights(1, 1 << 20);
    Likely = MDB.createBranchWeights(1 << 20, 1);
  }

  /// Lowers the function into the module as `Symbol`; null when
  /// LoweringOptions::Cancel stopped it.
  Function *lower(const std::string &Symbol);

  // The inline forms' emitters, a row each in inline_builtins.cpp's table
  // (public for it). A guarded one ends every path in a branch to Join or
  // Slow.
  void inlineNullValue(InlinePaths &P);
  void inlineCopy(InlinePaths &P);
  void inlineReadIfCond(InlinePaths &P);
  void inlineTupleGetItem(InlinePaths &P);
  void inlineCheckTensorInfo(InlinePaths &P);
  void inlineMatchShape(InlinePaths &P);
  void inlineAllocTensor(InlinePaths &P);
  void inlineMakeShape(InlinePaths &P);
  void inlineScalarUnary(InlinePaths &P);
  void inlineScalarBinary(InlinePaths &P);

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
    B.CreateAlignedStore(V.TypeWord, A0, Align(8));
    B.CreateAlignedStore(V.Payload, A1, Align(8));
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
      FunctionCallee Release =
          helperFn(helper::vmjit_jit_release_frame, B.getVoidTy(), {Ptr, I64});
      for (auto [First, Count] : heldRegisterRuns())
        B.CreateCall(Release, {bytePtr(regs(), 16 * First), B.getInt64(Count)});
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
    B.CreateAlignedStore(V.TypeWord, P, Align(8));
    B.CreateAlignedStore(V.Payload, bytePtr(P, 8), Align(8));
  }
  Value *typeOf(Val V) { return B.CreateTrunc(V.TypeWord, I32); }
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
      Key.record("constant type", A.value(), Known);
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
  /// Adds to the VM's counts of callees (NativeContext::CallCounts,
  /// callee index -> calls).
  void emitCounts(const std::map<int64_t, int64_t> &Counts);
  /// Emits the counts of the calls made since the last flush
  /// (PendingCounts) and forgets them.
  void flushCounts();
  /// Whether call `I` at PC leaves its count pending: nothing but the
  /// function's own code runs from it to the next flush (a call the
  /// stack's tensors make nothing of, a kernel inlined in the flat
  /// style), so the counts of a straight run of them are added once.
  bool countsLater(int64_t PC, InstrView I) const;
  /// The end of the call at PC: the counts flushed where other paths
  /// join at PC + 1, then on to it.
  void endCall(int64_t PC);
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
  Value *emitKernelCall(int64_t PC, int64_t Callee, int64_t N,
                        FunctionCallee Slot, Value *Self);
  /// Whether tier 2 guards the result of call `I` at PC when it makes the
  /// call (speculated: a kind or a tensor), going on in tier 1 from PC + 1
  /// when the guard fails. (A builtin it inlines instead guards nothing:
  /// the tensors on the stack take this as the conservative answer.)
  bool guardsResult(int64_t PC, InstrView I) const;
  /// After the call of `I` returned `Rc`: to the error exit when it
  /// failed, else its result (in `Slot`: ResSlot unless given) moved into
  /// the destination.
  void finishCall(int64_t PC, InstrView I, Value *Rc, Value *Slot = nullptr);
  /// Whether call `I` is of a kernel whose IR tier 2 inlines
  /// (CalleeBinding::InlineKernel) with one tensor at least on the stack
  /// (CalleeBinding::StackTensorArgs), each of them at a 64-byte aligned
  /// offset of its buffer; another argument (the caller's input, an
  /// allocated output) is checked at run time (checkedKernelArgs).
  bool inlinesKernel(InstrView I) const;
  /// The arguments of such a call that may be a tensor not on the stack:
  /// the inlined code runs when each is not a tensor on the CPU or has
  /// aligned data (TVM's code assumes it), else the call is made.
  std::vector<int64_t> checkedKernelArgs(InstrView I) const;
  /// The call of an inlined kernel, guarded when it has `Checked`
  /// arguments (checkedKernelArgs). Returns the return code and the result
  /// slot.
  std::pair<Value *, Value *>
  emitKernelInlinedOrCalled(int64_t PC, InstrView I,
                            const std::vector<int64_t> &Checked);
  /// That call: the kernel's entry in the unit (jit/kernel_inline.h; the
  /// pipeline inlines it) with an argument array, DLTensors and a result
  /// slot of its own. Returns the return code and that slot (None).
  std::pair<Value *, Value *> emitInlinedKernelCall(InstrView I);
  /// invoke_closure of a closure the function makes (closure_call.h):
  /// the target's direct entry when the closure is one of it, else the
  /// bound call.
  Value *emitClosureCall(int64_t PC, InstrView I, const ClosureCall &CC);
  /// The closure call tier 2 makes direct at this call, if any.
  std::optional<ClosureCall> closureCall(InstrView I) const;
  /// Ends the current block (whose return code is RcB, from FromB) in a
  /// branch to Join, where the return code of two ways meets.
  Value *joinReturnCodes(BasicBlock *Join, Value *RcA, BasicBlock *FromA,
                         Value *RcB, BasicBlock *FromB);
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
  /// Replaces call `I` by `What`'s inline form (its emitter's row), the
  /// call as the fallback: false (nothing emitted) where the form does not
  /// apply.
  bool emitInline(int64_t PC, InstrView I, SpecialBuiltin What);
  /// The fallback of a guarded inline form: the call, then Join.
  void emitInlineFallback(InlinePaths &P);
  /// Whether type index T is an int (or, promoted, a bool).
  Value *intLikeType(Value *T);
  /// An int's value; a bool reads as 0 or 1 (K: V's known kinds).
  Value *intOf(Val V, uint8_t K = vm::kind::Any);
  Val boolVal(Value *Bit);
  /// The fast path's result R into the call's destination, then Join.
  void finishInline(InlinePaths &P, Val R);
  /// A binary scalar form's operand test: to Fast when both are ints or
  /// bools, to the returned float block (null: none) when both are
  /// numbers, else to Slow.
  BasicBlock *scalarOperandTest(InlinePaths &P, Val Lhs, Val Rhs,
                                bool IntsOnly);
  /// The int64 and float64 paths of a binary scalar operation.
  void emitScalarInt(InlinePaths &P, Value *X, Value *Y);
  void emitScalarFloat(InlinePaths &P, Value *X, Value *Y);
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
  // lower's parts.
  /// The function `Symbol` (declared by a direct call already, or now),
  /// its arguments named.
  void declareFunction(const std::string &Symbol);
  /// The most arguments a call passes (closures' captured values too),
  /// and the loop headers into `LoopHeads`.
  int64_t scanCalls(std::set<int64_t> &LoopHeads) const;
  /// The entry block's allocas and loads: the argument stack, the result
  /// slot, the registers' shadows (promoted) or the arguments' slots
  /// (flat), and what the function speculates.
  void emitFrameSetup(std::set<int64_t> &LoopHeads);
  /// The switch on the entry pc: the call's entry, the loop headers'.
  void emitEntrySwitch(const std::set<int64_t> &LoopHeads);
  /// The error exit: the pc stored, every register released, -1.
  void emitErrorExit();
  void lowerInstr(int64_t PC, InstrView I);

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
  /// The storages and tensors kept on the stack (stack_tensors.h): the
  /// plan, their buffers and DLTensors made in the entry block.
  void emitStackTensors(const std::set<int64_t> &LoopHeads);
  /// Whether call `I` makes, or clears, a register the plan keeps on the
  /// stack: nothing to do at run time.
  bool onStackOnly(InstrView I) const;
  /// `Bytes` of stack in the entry block, aligned to `Alignment`.
  Value *entryAlloca(int64_t Bytes, unsigned Alignment,
                     const std::string &Name);
  /// A DLTensor's memory in the entry block, and its fields for `T` (the
  /// shape a constant of the module) stored at the insertion point.
  Value *dlTensorAlloca(const std::string &Name);
  void fillDLTensor(Value *D, const StackTensorPlan::Tensor &T);
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

  /// Fills JoinAt.
  void markJoins();
  /// The registers the flat style releases on exit, as runs (first,
  /// count): all of them, or, where the frame is entered at pc 0 only
  /// (fresh: every register but the parameters None), all but those the
  /// stack's plan keeps (never written) when that makes few runs.
  std::vector<std::pair<int64_t, int64_t>> heldRegisterRuns() const;
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
  /// Where every decision the code depends on is recorded (code_key.h).
  CodeKey &Key;
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
  /// The tensors on the stack, and each one's DLTensor.
  StackTensorPlan Stack;
  std::vector<Value *> StackBuffers, StackDLTensors;
  /// The instruction being lowered.
  int64_t CurPC = 0;
  /// Counts of calls not yet added (countsLater), by callee index.
  std::map<int64_t, int64_t> PendingCounts;
  /// The pcs control reaches other than from the one before: jump targets
  /// and entries (one past the last instruction included).
  std::vector<bool> JoinAt;
  /// Whether code is entered at loop headers too (on-stack replacement),
  /// with whatever tier 1 left in the registers.
  bool EntersAtLoops = false;
};

} // namespace vmjit::jit::lower

#endif // VMJIT_JIT_FUNCTION_LOWERING_H
