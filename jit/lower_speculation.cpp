//===- lower_speculation.cpp - Guards and deoptimization ------------------===//
//
// What tier 2 speculates in the code (docs/jit.md#speculation-and-
// deoptimization): the kind and tensor guards, the deoptimization blocks,
// the entries at pc 0 and at loop headers, and the speculation's part of
// the object-cache key.
//
//===----------------------------------------------------------------------===//

#include "function_lowering.h"

namespace vmjit::jit::lower {

void FunctionLowering::guardKind(Val &V, uint8_t K, BasicBlock *Fail) {
  const int32_t Type = vm::kind::typeIndexOf(K);
  BasicBlock *Pass = BasicBlock::Create(C, "guard.ok", Fn);
  B.CreateCondBr(B.CreateICmpEQ(typeOf(V), B.getInt32(Type)), Pass, Fail,
                 Likely);
  B.SetInsertPoint(Pass);
  V.TypeWord = B.getInt64(static_cast<uint32_t>(Type));
}

void FunctionLowering::guardTensor(Val &V, uint64_t Word, BasicBlock *Fail) {
  BasicBlock *Fields = BasicBlock::Create(C, "guard.tensor", Fn);
  BasicBlock *Pass = BasicBlock::Create(C, "guard.ok", Fn);
  B.CreateCondBr(B.CreateICmpEQ(typeOf(V), B.getInt32(kVMJITTensor)), Fields,
                 Fail, Likely);
  B.SetInsertPoint(Fields);
  Value *Obj = B.CreateIntToPtr(V.Payload, Ptr);
  Value *Rank =
      B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorNDim), Align(4));
  Value *DType =
      B.CreateAlignedLoad(I32, bytePtr(Obj, kOffsetTensorDType), Align(4));
  Value *Ok = B.CreateAnd(
      B.CreateICmpEQ(Rank, B.getInt32(vm::feedback::rankOf(Word))),
      B.CreateICmpEQ(DType, B.getInt32(vm::feedback::dtypeBitsOf(Word))));
  B.CreateCondBr(Ok, Pass, Fail, Likely);
  B.SetInsertPoint(Pass);
  V.TypeWord = B.getInt64(kVMJITTensor);
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
  Key.record("spec");
  for (size_t K = 0; K < Spec->Params.size(); ++K)
    Key.record("param kind", K, Spec->Params[K]);
  for (size_t PC = 0; PC < Spec->Results.size(); ++PC)
    if (Spec->Results[PC])
      Key.record("result kind", PC, Spec->Results[PC]);
  for (size_t K = 0; K < Spec->ParamTensors.size(); ++K)
    if (Spec->ParamTensors[K])
      Key.record("param tensor", K, Spec->ParamTensors[K]);
  for (size_t PC = 0; PC < Spec->ResultTensors.size(); ++PC)
    if (Spec->ResultTensors[PC])
      Key.record("result tensor", PC, Spec->ResultTensors[PC]);
  for (int64_t H : Spec->GenericEntries)
    Key.record("generic entry", H);
}

void FunctionLowering::emitTensorFactsKey() {
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() != Opcode::Call)
      continue;
    if (const uint64_t W = checkedTensorWord(Exe, I))
      Key.record("checked tensor", PC, W);
  }
}

} // namespace vmjit::jit::lower
