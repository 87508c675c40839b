//===- direct_call.cpp - Direct calls between tier-2 functions ------------===//

#include "direct_call.h"
#include "context_layout.h"
#include "direct_context.h"
#include "runtime_helpers.h"
#include "vmjit/runtime/c_api.h"
#include "vmjit/runtime/object.h"
#include "vmjit/vm/native_code.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <cstddef>
#include <fmt/format.h>
#include <stdexcept>

using namespace llvm;

namespace vmjit::jit {

namespace {

using vm::NativeContext;

/// Builds one direct entry (see direct_call.h).
class DirectEntry {
public:
  DirectEntry(Module &M, const vm::Executable &Exe, int64_t G, bool ParamsOnly)
      : M(M), C(M.getContext()), B(C), F(Exe.function(G)), G(G),
        ParamsOnly(ParamsOnly) {
    I64 = B.getInt64Ty();
    I32 = B.getInt32Ty();
    Ptr = PointerType::getUnqual(C);
    Unlikely = MDBuilder(C).createBranchWeights(1, 1 << 20);
  }

  /// Defines the entry (its call of the function's code in Emitted).
  void emit(const std::string &Symbol);

  /// The call of the code, the context and what fills it.
  CallInst *Code = nullptr;
  AllocaInst *Ctx = nullptr;
  Value *Root = nullptr;
  ContextFill Fill;

private:
  Value *at(Value *Base, int64_t Offset) {
    return B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Base, Offset);
  }
  Value *load(Type *Ty, Value *Base, int64_t Offset) {
    return B.CreateAlignedLoad(Ty, at(Base, Offset), Align(8));
  }
  StoreInst *store(Value *V, Value *Base, int64_t Offset) {
    return B.CreateAlignedStore(V, at(Base, Offset), Align(8));
  }
  /// Adds `Delta` to the i64 at Base + Offset.
  void bump(Value *Base, int64_t Offset, int64_t Delta) {
    store(B.CreateAdd(load(I64, Base, Offset), B.getInt64(Delta)), Base,
          Offset);
  }
  FunctionCallee helper(const char *Name, Type *Ret, ArrayRef<Type *> Params) {
    return M.getOrInsertFunction(Name, FunctionType::get(Ret, Params, false));
  }
  /// A value's two words.
  struct Words {
    Value *W0, *W1;
  };
  /// The callee's parameters from the arguments (a new reference each, as
  /// enterFrame takes).
  std::vector<Words> takeParameters(Value *Args);
  /// Parameter R from argument R: taken from an object rvalue reference's
  /// slot, else copied with a new reference.
  Words takeParameter(Value *Args, int64_t R);
  /// The callee's register file: `Params`, the rest None unless
  /// ParamsOnly. Stored last, right before the code, so that the code's
  /// first loads of them fold away.
  void fillRegisters(Value *Regs, const std::vector<Words> &Params);

  Module &M;
  LLVMContext &C;
  IRBuilder<> B;
  const vm::FunctionInfo &F;
  const int64_t G;
  const bool ParamsOnly;
  Type *I64, *I32;
  PointerType *Ptr;
  MDNode *Unlikely;
};

std::vector<DirectEntry::Words> DirectEntry::takeParameters(Value *Args) {
  std::vector<Words> Params;
  for (int64_t R = 0; R < F.NumParams && R < F.RegisterFileSize; ++R)
    Params.push_back(takeParameter(Args, R));
  return Params;
}

void DirectEntry::fillRegisters(Value *Regs, const std::vector<Words> &Params) {
  for (int64_t R = 0; R < F.RegisterFileSize; ++R) {
    if (R < static_cast<int64_t>(Params.size())) {
      store(Params[static_cast<size_t>(R)].W0, Regs, 16 * R);
      store(Params[static_cast<size_t>(R)].W1, Regs, 16 * R + 8);
      continue;
    }
    if (ParamsOnly)
      break;
    store(B.getInt64(kVMJITNone), Regs, 16 * R);
    store(B.getInt64(0), Regs, 16 * R + 8);
  }
}

DirectEntry::Words DirectEntry::takeParameter(Value *Args, int64_t R) {
  llvm::Function *Fn = B.GetInsertBlock()->getParent();
  BasicBlock *Start = B.GetInsertBlock();
  BasicBlock *View = BasicBlock::Create(C, "param.view", Fn);
  BasicBlock *Take = BasicBlock::Create(C, "param.take", Fn);
  BasicBlock *Object = BasicBlock::Create(C, "param.object", Fn);
  BasicBlock *Inc = BasicBlock::Create(C, "param.incref", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "param.done", Fn);
  Value *W0 = load(I64, Args, 16 * R), *W1 = load(I64, Args, 16 * R + 8);
  // One test for a scalar (every type below the rvalue reference: tier-2
  // callers pass no raw-string views), the rest out of the way.
  Value *Type = B.CreateTrunc(W0, I32);
  B.CreateCondBr(B.CreateICmpSLT(Type, B.getInt32(kVMJITObjectRValueRef)), Done,
                 View);
  B.SetInsertPoint(View);
  B.CreateCondBr(B.CreateICmpEQ(Type, B.getInt32(kVMJITObjectRValueRef)), Take,
                 Object);
  // A borrowed object: a new reference.
  B.SetInsertPoint(Object);
  B.CreateCondBr(B.CreateICmpSGE(Type, B.getInt32(kVMJITStaticObjectBegin)),
                 Inc, Done);
  B.SetInsertPoint(Inc);
  B.CreateAtomicRMW(AtomicRMWInst::Add, B.CreateIntToPtr(W1, Ptr),
                    B.getInt64(1), MaybeAlign(8), AtomicOrdering::Monotonic);
  B.CreateBr(Done);
  // The caller's last use: the object moves into the register, its slot
  // left null (as copyIntoRegister does), no reference added; a null slot
  // reads as None.
  B.SetInsertPoint(Take);
  Value *Slot = B.CreateIntToPtr(W1, Ptr);
  Value *Obj = B.CreateAlignedLoad(Ptr, Slot, Align(8));
  B.CreateAlignedStore(ConstantPointerNull::get(Ptr), Slot, Align(8));
  BasicBlock *TakeObj = BasicBlock::Create(C, "param.take.obj", Fn);
  BasicBlock *TakeNone = BasicBlock::Create(C, "param.take.none", Fn);
  B.CreateCondBr(B.CreateICmpEQ(Obj, ConstantPointerNull::get(Ptr)), TakeNone,
                 TakeObj, Unlikely);
  B.SetInsertPoint(TakeNone);
  B.CreateBr(Done);
  B.SetInsertPoint(TakeObj);
  Value *ObjType = B.CreateZExt(
      B.CreateAlignedLoad(I32, at(Obj, kObjectTypeIndexOffset), Align(4)), I64);
  Value *ObjWord = B.CreatePtrToInt(Obj, I64);
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
  PHINode *T = B.CreatePHI(I64, 5, "param.w0");
  PHINode *V = B.CreatePHI(I64, 5, "param.w1");
  for (BasicBlock *From : {Start, Object, Inc})
    T->addIncoming(W0, From), V->addIncoming(W1, From);
  T->addIncoming(B.getInt64(kVMJITNone), TakeNone);
  V->addIncoming(B.getInt64(0), TakeNone);
  T->addIncoming(ObjType, TakeObj);
  V->addIncoming(ObjWord, TakeObj);
  return {T, V};
}

void DirectEntry::emit(const std::string &Symbol) {
  FunctionType *CodeTy =
      FunctionType::get(I32, {Ptr, Ptr, Ptr, Ptr, I64}, false);
  FunctionCallee CodeFn = M.getOrInsertFunction(Symbol, CodeTy);
  llvm::Function *Fn = directEntryDecl(M, Symbol);
  auto AI = Fn->arg_begin();
  Root = &*AI++;
  Value *Consts = &*AI++, *Funcs = &*AI++, *Args = &*AI++, *Result = &*AI++,
        *CallerDepth = &*AI++;
  BasicBlock *Entry = BasicBlock::Create(C, "entry", Fn);
  BasicBlock *Refuse = BasicBlock::Create(C, "refuse", Fn);
  BasicBlock *Go = BasicBlock::Create(C, "go", Fn);
  BasicBlock *StepSlow = BasicBlock::Create(C, "step.slow", Fn);
  BasicBlock *Failed = BasicBlock::Create(C, "failed", Fn);
  BasicBlock *Enter = BasicBlock::Create(C, "enter", Fn);
  BasicBlock *CalleeFailed = BasicBlock::Create(C, "callee.failed", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "done", Fn);

  B.SetInsertPoint(Entry);
  Ctx = B.CreateAlloca(
      ArrayType::get(B.getInt8Ty(), sizeof(NativeContext)), nullptr, "ctx");
  Ctx->setAlignment(Align(8));
  const int64_t NumRegs = std::max<int64_t>(F.RegisterFileSize, 1);
  AllocaInst *Regs = B.CreateAlloca(ArrayType::get(B.getInt8Ty(), 16 * NumRegs),
                                    nullptr, "regs");
  Regs->setAlignment(Align(16));
  // The checks of the pool entry and enterFrame, in their order; any that
  // fails leaves everything as it was and sends the caller to the pool.
  Value *State = load(Ptr, Root, kOffsetState);
  Value *Depth = B.CreateAdd(CallerDepth, B.getInt64(1));
  Value *Limit = load(I64, Root, kOffsetStackLimit);
  Value *Frame = B.CreatePtrToInt(
      B.CreateIntrinsic(Intrinsic::frameaddress, {Ptr}, {B.getInt32(0)}), I64);
  Value *Live = B.CreateAdd(load(I64, State, kOffsetLiveRegisters),
                            B.getInt64(F.RegisterFileSize));
  Value *Refused = B.CreateOr(
      B.CreateOr(B.CreateICmpSGE(Depth, load(I64, State, kOffsetMaxDepth)),
                 B.CreateICmpNE(B.CreateAlignedLoad(B.getInt8Ty(),
                                                    at(State, kOffsetObserving),
                                                    Align(1)),
                                B.getInt8(0))),
      B.CreateOr(B.CreateICmpULT(Frame, Limit),
                 B.CreateICmpUGT(Live, load(I64, State, kOffsetMaxRegisters))));
  B.CreateCondBr(Refused, Refuse, Go, Unlikely);
  B.SetInsertPoint(Refuse);
  B.CreateRet(B.getInt32(1));

  // The step of the call (enterFrame's).
  B.SetInsertPoint(Go);
  Value *Control = load(Ptr, Root, kOffsetControl);
  Value *Fuel = B.CreateSub(load(I64, Control, kOffsetFuel), B.getInt64(1));
  store(Fuel, Control, kOffsetFuel);
  LoadInst *Irq =
      B.CreateAlignedLoad(I32, at(Control, kOffsetInterrupt), Align(4));
  Irq->setAtomic(AtomicOrdering::Monotonic);
  B.CreateCondBr(B.CreateOr(B.CreateICmpSLT(Fuel, B.getInt64(0)),
                            B.CreateICmpNE(Irq, B.getInt32(0))),
                 StepSlow, Enter, Unlikely);
  B.SetInsertPoint(StepSlow);
  CallInst *StepRc =
      B.CreateCall(helper(vm::helper::vmjit_jit_step, I32, {Ptr}), {Root});
  StepRc->addParamAttr(0, Attribute::NoCapture);
  B.CreateCondBr(B.CreateICmpNE(StepRc, B.getInt32(0)), Failed, Enter);
  B.SetInsertPoint(Failed);
  B.CreateRet(B.getInt32(-1));

  // The frame: registers, count, depth, context; then the code.
  B.SetInsertPoint(Enter);
  store(Live, State, kOffsetLiveRegisters);
  const std::vector<Words> Params = takeParameters(Args);
  Value *Counts = load(Ptr, Root, kOffsetCallCounts);
  bump(Counts, 8 * G, 1);
  bump(State, kOffsetNativeDepth, 1);
  // Each field's address named (ctx.<field>), for the IR's readers.
  auto Field = [&](Value *V, int64_t Offset, const char *Name) {
    return B.CreateAlignedStore(
        V, B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Ctx, Offset, Name),
        Align(8));
  };
  Fill.ErrorPC = Field(B.getInt64(-1), kOffsetErrorPC, "ctx.error_pc");
  Fill.Fields = {
      Field(load(Ptr, Root, kOffsetVM), kOffsetVM, "ctx.vm"),
      Field(Result, kOffsetResult, "ctx.result"),
      Field(Control, kOffsetControl, "ctx.control"),
      Field(B.getInt64(G), kOffsetFunc, "ctx.func"),
      Field(ConstantPointerNull::get(Ptr), kOffsetSites, "ctx.sites"),
      Field(Counts, kOffsetCallCounts, "ctx.call_counts"),
      Field(Depth, kOffsetDepth, "ctx.depth"),
      Field(Limit, kOffsetStackLimit, "ctx.stack_limit"),
      Field(State, kOffsetState, "ctx.state")};
  fillRegisters(Regs, Params);
  CallInst *Rc =
      B.CreateCall(CodeFn, {Ctx, Regs, Consts, Funcs, B.getInt64(0)});
  // The code left every register None.
  bump(State, kOffsetNativeDepth, -1);
  bump(State, kOffsetLiveRegisters, -F.RegisterFileSize);
  B.CreateCondBr(B.CreateICmpNE(Rc, B.getInt32(0)), CalleeFailed, Done,
                 Unlikely);
  B.SetInsertPoint(CalleeFailed);
  Fill.FrameLine = B.CreateCall(
      helper(vm::helper::vmjit_jit_callee_frame, B.getVoidTy(), {Ptr}), {Ctx});
  Fill.FrameLine->addParamAttr(0, Attribute::NoCapture);
  B.CreateRet(B.getInt32(-1));
  B.SetInsertPoint(Done);
  B.CreateRet(B.getInt32(0));
  Code = Rc;
}

} // namespace

std::string directEntrySymbol(const std::string &Symbol) {
  return Symbol + ".direct";
}

llvm::Function *directEntryDecl(Module &M, const std::string &Symbol) {
  const std::string Name = directEntrySymbol(Symbol);
  if (llvm::Function *Fn = M.getFunction(Name))
    return Fn;
  llvm::Function *Fn =
      llvm::Function::Create(directEntryType(M.getContext()),
                             GlobalValue::InternalLinkage, Name, M);
  Fn->addFnAttr(Attribute::NoUnwind);
  Fn->addFnAttr("frame-pointer", "all");
  // The caller's context, the arguments and the result slot are used only
  // during the call (the arguments only read: a moved object is cleared
  // through the slot its reference points to, not through Args).
  Fn->addParamAttr(0, Attribute::NoCapture);
  Fn->addParamAttr(3, Attribute::NoCapture);
  Fn->addParamAttr(3, Attribute::ReadOnly);
  Fn->addParamAttr(4, Attribute::NoCapture);
  return Fn;
}

FunctionType *directEntryType(LLVMContext &C) {
  Type *P = PointerType::getUnqual(C);
  return FunctionType::get(Type::getInt32Ty(C),
                           {P, P, P, P, P, Type::getInt64Ty(C)}, false);
}

std::string directCellSymbol(int64_t G) {
  return fmt::format("__vmjit_direct_cell_{}", G);
}

std::vector<bool>
exportedDirectEntries(const vm::Executable &Exe,
                      const std::vector<CalleeBinding> &Callees) {
  const int64_t N = static_cast<int64_t>(Exe.functions().size());
  std::vector<bool> Named(static_cast<size_t>(N), false);
  for (int64_t I = 0; I < Exe.numInstrs(); ++I) {
    vm::InstrView In = Exe.instr(I);
    if (In.opcode() != vm::Opcode::Call)
      continue;
    Named[static_cast<size_t>(In.callFunc())] = true;
    for (int64_t K = 0; K < In.callNumArgs(); ++K)
      if (In.callArg(K).kind() == vm::ArgKind::FuncIdx)
        Named[static_cast<size_t>(In.callArg(K).value())] = true;
  }
  std::vector<bool> Out(static_cast<size_t>(N), false);
  for (int64_t G = 0; G < N; ++G)
    Out[static_cast<size_t>(G)] =
        Named[static_cast<size_t>(G)] && directCallable(Exe, G, Callees);
  return Out;
}

std::string codeSlotSymbol(int64_t G) {
  return fmt::format("__vmjit_slot_{}", G);
}

bool directCallable(const vm::Executable &Exe, int64_t G,
                    const std::vector<CalleeBinding> &Callees) {
  const vm::FunctionInfo &F = Exe.function(G);
  if (F.Kind != vm::FunctionKind::Bytecode)
    return false;
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    vm::InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() == vm::Opcode::Call &&
        siteHelper(Callees[static_cast<size_t>(I.callFunc())].Inline))
      return false;
  }
  return true;
}

llvm::Error emitDirectEntry(Module &M, const vm::Executable &Exe, int64_t G,
                            const std::string &Symbol, bool ParamsOnly,
                            bool Exported, bool WithCode) {
  if (Exported)
    directEntryDecl(M, Symbol)->setLinkage(GlobalValue::ExternalLinkage);
  DirectEntry E(M, Exe, G, ParamsOnly);
  E.emit(Symbol);
  CallInst *Code = E.Code;
  if (!WithCode)
    return llvm::Error::success();
  // The copy enters at pc 0 only: the optimizer drops its on-stack
  // entries. Its deoptimizations' tail calls lose the marker (they pass
  // this frame's register file).
  llvm::Function *Entry = Code->getFunction();
  InlineFunctionInfo IFI;
  if (InlineResult R = InlineFunction(*Code, IFI, /*MergeAttributes=*/false,
                                      /*CalleeAAR=*/nullptr,
                                      /*InsertLifetime=*/false);
      !R.isSuccess())
    return llvm::createStringError(std::errc::not_supported,
                                   "cannot copy %s into its direct entry: %s",
                                   Symbol.c_str(), R.getFailureReason());
  // Its register file is the entry's alloca, dead once the entry returns:
  // the exits need not leave it None (LLVM's dead-store elimination gives
  // up on a frame with this many uses).
  for (BasicBlock &BB : *Entry)
    for (Instruction &I : make_early_inc_range(BB))
      if (I.getMetadata(kFrameClearMetadata))
        I.eraseFromParent();
  keepContextOutOfMemory(E.Ctx, E.Root, E.Fill);
  return llvm::Error::success();
}

} // namespace vmjit::jit
