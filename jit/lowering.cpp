//===- lowering.cpp - Bytecode to LLVM IR ---------------------------------===//
//
// See include/vmjit/jit/lowering.h for the shape of the generated code;
// jit/function_lowering.h for where its parts live. This file: values and
// registers, the error exit, control flow and the driver.
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

#include "function_lowering.h"
#include "successors.h"
#include "vmjit/runtime/logging.h"

namespace vmjit::jit {
namespace lower {

void FunctionLowering::incRefIfObject(Val V) {
  assert(!Flat && "flat code retains through refSlot");
  BasicBlock *Inc = BasicBlock::Create(C, "incref", Fn);
  BasicBlock *Done = BasicBlock::Create(C, "incref.done", Fn);
  B.CreateCondBr(isObject(V), Inc, Done);
  B.SetInsertPoint(Inc);
  B.CreateAtomicRMW(AtomicRMWInst::Add, B.CreateIntToPtr(V.Payload, Ptr),
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
  Value *Obj = B.CreateIntToPtr(V.Payload, Ptr);
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
    if (Stack.isStackTensor(V))
      return {B.getInt64(kVMJITDLTensorPtr),
              B.CreatePtrToInt(StackDLTensors[static_cast<size_t>(
                                   Stack.TensorOfReg[static_cast<size_t>(V)])],
                               I64)};
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
      Key.record("embedded constant", V, W0, W1);
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
  if (!Flat) {
    assert(PendingCounts.empty() && "countsLater: nothing leaves");
    return ErrBB;
  }
  // Flat: the pc is stored on the cold path, not carried in a PHI (whose
  // copies O0 code would make on every hot path).
  IRBuilderBase::InsertPointGuard Guard(B);
  BasicBlock *Site = BasicBlock::Create(C, fmt::format("i{}.err", PC), Fn);
  B.SetInsertPoint(Site);
  // The calls counted later that ran before this one failed, and it.
  emitCounts(PendingCounts);
  B.CreateAlignedStore(B.getInt64(PC), bytePtr(ctx(), kOffsetErrorPC),
                       Align(8));
  B.CreateBr(ErrBB);
  return Site;
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
    B.CreateCondBr(B.CreateICmpNE(V.Payload, B.getInt64(0)), next(PC),
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
  B.CreateCondBr(B.CreateICmpNE(V.Payload, B.getInt64(0)), next(PC),
                 jumpTarget(PC, I.ifFalseOffset()));
}

Function *FunctionLowering::lower(const std::string &Symbol) {
  declareFunction(Symbol);
  const int64_t N = F.numInstrs();
  BasicBlock *Entry = BasicBlock::Create(C, "entry", Fn);
  Blocks.resize(static_cast<size_t>(N) + 1, nullptr);
  for (int64_t PC = 0; PC < N; ++PC)
    Blocks[static_cast<size_t>(PC)] =
        BasicBlock::Create(C, fmt::format("i{}", PC), Fn);
  ErrBB = BasicBlock::Create(C, "error", Fn);
  markJoins();
  std::set<int64_t> LoopHeads;
  B.SetInsertPoint(Entry);
  emitFrameSetup(LoopHeads);
  EntersAtLoops = !LoopHeads.empty();
  emitStackTensors(LoopHeads);
  emitEntrySwitch(LoopHeads);
  emitErrorExit();
  for (int64_t PC = 0; PC < N; ++PC) {
    if (Opts.Cancel && PC % 256 == 0 &&
        Opts.Cancel->load(std::memory_order_relaxed))
      return nullptr; // abandoned (lowerFunctions: CompileAbandoned)
    lowerInstr(PC, Exe.instr(F.StartInstr + PC));
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

void FunctionLowering::declareFunction(const std::string &Symbol) {
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
}

std::vector<std::pair<int64_t, int64_t>>
FunctionLowering::heldRegisterRuns() const {
  const int64_t N = F.RegisterFileSize;
  std::vector<std::pair<int64_t, int64_t>> All = {{0, N}};
  if (Stack.empty() || EntersAtLoops)
    return All;
  std::vector<std::pair<int64_t, int64_t>> Runs;
  for (int64_t R = 0; R < N; ++R) {
    const bool Kept =
        R >= F.NumParams && (Stack.isStackTensor(R) || Stack.isStackStorage(R));
    if (Kept)
      continue;
    if (!Runs.empty() && Runs.back().first + Runs.back().second == R)
      ++Runs.back().second;
    else
      Runs.emplace_back(R, 1);
  }
  // A call per run: past a few, one over the whole frame costs less.
  return Runs.size() <= 4 ? Runs : All;
}

void FunctionLowering::markJoins() {
  const int64_t N = F.numInstrs();
  JoinAt.assign(static_cast<size_t>(N) + 1, false);
  JoinAt[0] = true;
  JoinAt[static_cast<size_t>(N)] = true;
  for (int64_t PC = 0; PC < N; ++PC)
    for (int64_t To : successors(Exe.instr(F.StartInstr + PC), PC))
      if (To != PC + 1 && To >= 0 && To <= N)
        JoinAt[static_cast<size_t>(To)] = true;
}

int64_t FunctionLowering::scanCalls(std::set<int64_t> &LoopHeads) const {
  int64_t MaxArgs = 1;
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
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
  return MaxArgs;
}

void FunctionLowering::emitFrameSetup(std::set<int64_t> &LoopHeads) {
  // The argument stack: one alloca shared by every call.
  const int64_t MaxArgs = scanCalls(LoopHeads);
  ArgStack = B.CreateAlloca(ArrayType::get(B.getInt8Ty(), 16 * MaxArgs),
                            nullptr, "args");
  cast<AllocaInst>(ArgStack)->setAlignment(Align(16));
  ResSlot = B.CreateAlloca(ArrayType::get(B.getInt8Ty(), 16), nullptr, "res");
  cast<AllocaInst>(ResSlot)->setAlignment(Align(16));
  Flat = !promote();
  Key.record(Flat ? "flat" : "promoted");
  if (!Flat)
    Live = liveAfter(Exe, FuncIndex);
  if (Opts.OwnedArguments && !Flat) {
    Key.record("owned arguments");
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
  if (Flat)
    return;
  for (int64_t R = 0; R < F.RegisterFileSize; ++R)
    Shadow.emplace_back(B.CreateAlloca(I64, nullptr, fmt::format("r{}.t", R)),
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

void FunctionLowering::emitEntrySwitch(const std::set<int64_t> &LoopHeads) {
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
}

void FunctionLowering::emitErrorExit() {
  B.SetInsertPoint(ErrBB);
  if (!Flat) {
    ErrPC = B.CreatePHI(I64, 4, "error_pc");
    B.CreateAlignedStore(ErrPC, bytePtr(ctx(), kOffsetErrorPC), Align(8));
  }
  releaseAll();
  B.CreateRet(B.getInt32(-1));
}

void FunctionLowering::lowerInstr(int64_t PC, InstrView I) {
  B.SetInsertPoint(Blocks[static_cast<size_t>(PC)]);
  CurPC = PC;
  if (I.opcode() != Opcode::Call)
    flushCounts();
  switch (I.opcode()) {
  case Opcode::Call:
    return lowerCall(PC, I);
  case Opcode::Ret:
    return lowerRet(I);
  case Opcode::Goto:
    B.CreateBr(jumpTarget(PC, I.gotoOffset()));
    return;
  case Opcode::If:
    return lowerIf(PC, I);
  }
}

} // namespace lower

using namespace lower;

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

Expected<LoweredModule>
lowerFunctions(const vm::Executable &Exe, std::span<const int64_t> Funcs,
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
    Out.Key.record("function", K);
    if (!FunctionLowering(*Out.Module, Exe, K, Callees, Opts, Out, Out.Symbols)
             .lower(Out.Symbols[K]))
      return make_error<CompileAbandoned>();
  }
  for (const auto &[Kernels, Names] : Out.InlinedKernels)
    if (llvm::Error E = linkInlineKernels(
            *Out.Module, *reinterpret_cast<const InlineKernels *>(Kernels),
            Names, Out.Absolute))
      return E;
  // Direct entries: of the unit's callees (internal), and exported ones.
  std::set<int64_t> Entries = Out.DirectCallees;
  for (int64_t K : Funcs)
    if (Out.ExportsDirect[static_cast<size_t>(K)]) {
      Entries.insert(K);
      Out.DirectEntries[K] = directEntrySymbol(Out.Symbols[K]);
      Out.Key.record("export", K);
    }
  for (int64_t K : Entries) {
    const bool WithCode = Exe.function(K).numInstrs() <= Opts.DirectBodyLimit;
    if (WithCode)
      Out.Key.record("direct body", K);
    if (llvm::Error E =
            emitDirectEntry(*Out.Module, Exe, K, Out.Symbols[K],
                            entersWithParamsOnly(Exe, K, Opts),
                            Out.DirectEntries.count(K) != 0, WithCode))
      return Expected<LoweredModule>(std::move(E));
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
    if (Callees[K].KernelCell)
      Out.Absolute[fmt::format("__vmjit_kcell_{}", K)] = Callees[K].KernelCell;
    Out.Key.record("callee", K, Exe.function(K).Name, Callees[K].Inline);
  }
  // Which callees the code counts (pool-bound ones have no symbol).
  for (size_t K = 0; K < Callees.size(); ++K)
    if (Callees[K].CountAtCall)
      Out.Key.record("counted", K);
  return Out;
}

std::optional<CodeKey> loweringKey(const vm::Executable &Exe,
                                   std::span<const int64_t> Funcs,
                                   const std::vector<CalleeBinding> &Callees,
                                   const LoweringOptions &Opts) {
  Expected<LoweredModule> L = lowerFunctions(Exe, Funcs, Callees, Opts);
  if (!L) {
    consumeError(L.takeError());
    return std::nullopt;
  }
  return std::move(L->Key);
}

std::string moduleText(const Module &M) {
  std::string S;
  raw_string_ostream OS(S);
  M.print(OS, nullptr);
  return S;
}

} // namespace vmjit::jit
