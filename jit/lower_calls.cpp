//===- lower_calls.cpp - Calls in lowered code ----------------------------===//
//
// The Call instruction in tier-2 code: the argument stack, the call as
// bound (jit/callee_binding.h: pool, direct, a site helper), direct calls
// between functions of a unit and of closures they make, counting and the
// move of the result (see lowering.h).
//
//===----------------------------------------------------------------------===//

#include "function_lowering.h"

namespace vmjit::jit::lower {

void FunctionLowering::emitCallPath(int64_t PC, InstrView I) {
  if (inlinesKernel(I)) {
    // A guarded call may have been made: its result is released as any.
    const std::vector<int64_t> Checked = checkedKernelArgs(I);
    auto [Rc, Result] = emitKernelInlinedOrCalled(PC, I, Checked);
    if (I.callDst() != vm::kVoidRegister || !Checked.empty())
      return finishCall(PC, I, Rc, Result);
    // Its result (None: the kernel does not write it) goes nowhere.
    BasicBlock *Ok = BasicBlock::Create(C, fmt::format("i{}.ok", PC), Fn);
    branchToError(B.CreateICmpNE(Rc, B.getInt32(0)), PC, Ok);
    B.SetInsertPoint(Ok);
    return;
  }
  const int64_t N = I.callNumArgs();
  const std::vector<int64_t> Owned = ownedArgs(PC, I);
  for (int64_t K = 0, O = 0; K < N; ++K) {
    Val V = evalArg(I.callArg(K));
    if (O < static_cast<int64_t>(Owned.size()) && Owned[O] == K) {
      // An object goes as {ObjectRValueRef, &slot}, the slot holding it;
      // the register is dead from here and left None.
      Value *Slot = bytePtr(OwnStack, 8 * O++);
      Value *Obj = isObject(V);
      B.CreateAlignedStore(B.CreateSelect(Obj, V.Payload, B.getInt64(0)), Slot,
                           Align(8));
      V = {B.CreateSelect(Obj, B.getInt64(kVMJITObjectRValueRef), V.TypeWord),
           B.CreateSelect(Obj, B.CreatePtrToInt(Slot, I64), V.Payload)};
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
  finishCall(PC, I, Rc);
}

void FunctionLowering::finishCall(int64_t PC, InstrView I, Value *Rc,
                                  Value *Slot) {
  if (!Slot)
    Slot = ResSlot;
  BasicBlock *Ok = BasicBlock::Create(C, fmt::format("i{}.ok", PC), Fn);
  branchToError(B.CreateICmpNE(Rc, B.getInt32(0)), PC, Ok);
  B.SetInsertPoint(Ok);
  if (Flat) {
    if (I.callDst() == vm::kVoidRegister)
      refSlot(Slot, /*Retain=*/false);
    else
      moveFromSlot(I.callDst(), Slot);
    return;
  }
  Val Result = load(Slot);
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
    Key.record("site", Bind.Inline, PC);
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
      Self =
          new GlobalVariable(M, B.getInt8Ty(), /*isConstant=*/true,
                             GlobalValue::ExternalLinkage, nullptr, SelfName);
    if (Bind.KernelCell)
      return emitKernelCall(PC, Callee, N, Target, Self);
    return B.CreateCall(Target, {Self, ArgStack, B.getInt32(N), ResSlot});
  }
  Value *Obj = PoolEntry();
  Value *Entry =
      B.CreateAlignedLoad(Ptr, bytePtr(Obj, kOffsetFuncCell), Align(8));
  return B.CreateCall(SafeCallTy, Entry,
                      {Obj, ArgStack, B.getInt32(N), ResSlot});
}

Value *FunctionLowering::emitKernelCall(int64_t PC, int64_t Callee, int64_t N,
                                        FunctionCallee Slot, Value *Self) {
  Key.record("kernel", Callee, PC);
  BasicBlock *Direct = BasicBlock::Create(C, fmt::format("i{}.kernel", PC), Fn);
  BasicBlock *ViaSlot =
      BasicBlock::Create(C, fmt::format("i{}.kernel.slot", PC), Fn);
  BasicBlock *Join =
      BasicBlock::Create(C, fmt::format("i{}.kernel.called", PC), Fn);
  // The kernel's entry once published (KernelSlotObj::compiledCell), called
  // from here, so that this site's indirect branch has one target; it
  // checks the tensors' alignment itself. TVM's code runs before the swap.
  LoadInst *Code = B.CreateAlignedLoad(
      Ptr, externalByte(fmt::format("__vmjit_kcell_{}", Callee)), Align(8));
  Code->setAtomic(AtomicOrdering::Acquire);
  B.CreateCondBr(B.CreateICmpNE(Code, ConstantPointerNull::get(Ptr)), Direct,
                 ViaSlot, Likely);
  B.SetInsertPoint(Direct);
  Value *DirectRc =
      B.CreateCall(SafeCallTy, Code, {Self, ArgStack, B.getInt32(N), ResSlot});
  B.CreateBr(Join);
  B.SetInsertPoint(ViaSlot);
  Value *SlotRc = B.CreateCall(Slot, {Self, ArgStack, B.getInt32(N), ResSlot});
  return joinReturnCodes(Join, DirectRc, Direct, SlotRc, ViaSlot);
}

bool FunctionLowering::guardsResult(int64_t PC, InstrView I) const {
  if (!Spec || I.opcode() != Opcode::Call || I.callDst() == vm::kVoidRegister)
    return false;
  const size_t K = static_cast<size_t>(PC);
  return (!Spec->Results.empty() && guardableKind(Spec->Results[K])) ||
         (!Spec->ResultTensors.empty() && Spec->ResultTensors[K]);
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
  Key.record("direct", Callee, PC);
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
  Key.record("cell", Callee, PC);
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
  return FunctionCallee(directEntryType(C), Entry);
}

Value *FunctionLowering::joinReturnCodes(BasicBlock *Join, Value *RcA,
                                         BasicBlock *FromA, Value *RcB,
                                         BasicBlock *FromB) {
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
  PHINode *Rc = B.CreatePHI(I32, 2, "rc");
  Rc->addIncoming(RcA, FromA);
  Rc->addIncoming(RcB, FromB);
  return Rc;
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
  return joinReturnCodes(Join, DirectRc, Direct, PoolRc, Pool);
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
  Key.record("closure", CC.Target, CC.NumCaptured, PC);
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
  Value *Obj = B.CreateIntToPtr(F.Payload, Ptr);
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
  return joinReturnCodes(Join, DirectRc, Direct, BoundRc, B.GetInsertBlock());
}

void FunctionLowering::emitCounts(const std::map<int64_t, int64_t> &Counts) {
  if (Counts.empty())
    return;
  Value *Base =
      B.CreateAlignedLoad(Ptr, bytePtr(ctx(), kOffsetCallCounts), Align(8));
  for (const auto &[Callee, Add] : Counts) {
    Value *Slot = bytePtr(Base, 8 * Callee);
    Value *N = B.CreateAlignedLoad(I64, Slot, Align(8));
    B.CreateAlignedStore(B.CreateAdd(N, B.getInt64(Add)), Slot, Align(8));
  }
}

void FunctionLowering::flushCounts() {
  emitCounts(PendingCounts);
  PendingCounts.clear();
}

bool FunctionLowering::countsLater(int64_t PC, InstrView I) const {
  // Nothing runs but the function's code and an inlined kernel's (TVM's
  // code, which never reads the VM's counts; or, for an argument whose data
  // is not aligned, the kernel's entry, which does not either), and only
  // the kernel's error leaves (through its error site, which counts what
  // is pending: the error exit is shared in the promoted style).
  return onStackOnly(I) || (Flat && inlinesKernel(I) && !guardsResult(PC, I));
}

void FunctionLowering::endCall(int64_t PC) {
  if (JoinAt[static_cast<size_t>(PC + 1)])
    flushCounts();
  B.CreateBr(next(PC));
}

void FunctionLowering::lowerCall(int64_t PC, InstrView I) {
  const int64_t Callee = I.callFunc();
  const CalleeBinding &Bind = Callees[static_cast<size_t>(Callee)];
  const bool Later = countsLater(PC, I);
  if (!Later)
    flushCounts();
  if (Bind.CountAtCall) {
    if (Later)
      ++PendingCounts[Callee];
    else
      emitCounts({{Callee, 1}});
  }
  if (onStackOnly(I))
    return endCall(PC);
  if (Opts.InlineBuiltins && Bind.Inline != SpecialBuiltin::None &&
      emitInline(PC, I, Bind.Inline))
    return endCall(PC);
  emitCallPath(PC, I);
  if (guardsResult(PC, I)) {
    // The result's kind, or its tensor's rank and dtype, as speculated, or
    // tier 1 from the next pc on.
    const vm::RegName Dst = I.callDst();
    const size_t K = static_cast<size_t>(PC);
    Val R = loadReg(Dst);
    if (!Spec->Results.empty() && guardableKind(Spec->Results[K]))
      guardKind(R, Spec->Results[K],
                deoptBlock(PC, PC + 1, /*WriteBack=*/true));
    else
      guardTensor(R, Spec->ResultTensors[K],
                  deoptBlock(PC, PC + 1, /*WriteBack=*/true));
    storeReg(Dst, R);
  }
  endCall(PC);
}

} // namespace vmjit::jit::lower
