//===- lower_stack_tensors.cpp - Tensors on the stack, kernels inlined ----===//
//
// FunctionLowering's part for the tensors tier 2 keeps on its stack
// (stack_tensors.h): the frame's buffers and DLTensors, the calls that make
// or clear them (nothing to do), and the calls of kernels inlined into the
// unit (kernel_inline.h), whose every tensor is on the stack: each such
// call gets its own argument array and DLTensors, which no other code
// sees, so that once the kernel is inlined its checks of them fold.
// docs/jit.md#tensors-on-the-stack.
//
//===----------------------------------------------------------------------===//

#include "function_lowering.h"
#include "kernel_entries.h"
#include "vmjit/runtime/logging.h"

namespace vmjit::jit::lower {

void FunctionLowering::emitStackTensors(const std::set<int64_t> &LoopHeads) {
  if (!Opts.StackTensors || !Opts.InlineBuiltins)
    return;
  // Where tier 1 goes on with the frame's registers after a call.
  std::vector<int64_t> Guarded;
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC)
    if (guardsResult(PC, Exe.instr(F.StartInstr + PC)))
      Guarded.push_back(PC);
  StackTensorLimits Limits;
  Limits.HostDevices = Opts.HostDevices;
  Stack =
      planStackTensors(Exe, FuncIndex, Callees,
                       {LoopHeads.begin(), LoopHeads.end()}, Guarded, Limits);
  if (Stack.empty())
    return;
  logger().debug("function '{}' keeps {} tensors of {} storages on its "
                 "stack: {}",
                 F.Name, Stack.Tensors.size(), Stack.Storages.size(),
                 Stack.describe());
  Key.record("stack tensors", Stack.describe());
  for (const StackTensorPlan::Storage &S : Stack.Storages) {
    AllocaInst *A = B.CreateAlloca(
        ArrayType::get(B.getInt8Ty(), std::max<int64_t>(S.Bytes, 1)), nullptr,
        fmt::format("stack.s{}", S.Reg));
    A->setAlignment(Align(64));
    StackBuffers.push_back(A);
  }
  for (const StackTensorPlan::Tensor &T : Stack.Tensors) {
    Value *D = dlTensorAlloca(fmt::format("stack.t{}", T.Reg));
    fillDLTensor(D, T);
    StackDLTensors.push_back(D);
  }
}

Value *FunctionLowering::entryAlloca(int64_t Bytes, unsigned Alignment,
                                     const std::string &Name) {
  IRBuilder<> Entry(&Fn->getEntryBlock(), Fn->getEntryBlock().begin());
  AllocaInst *A = Entry.CreateAlloca(
      ArrayType::get(Entry.getInt8Ty(), static_cast<uint64_t>(Bytes)), nullptr,
      Name);
  A->setAlignment(Align(Alignment));
  return A;
}

Value *FunctionLowering::dlTensorAlloca(const std::string &Name) {
  return entryAlloca(sizeof(DLTensor), 8, Name);
}

void FunctionLowering::fillDLTensor(Value *D,
                                    const StackTensorPlan::Tensor &T) {
  // The shape: a constant array of the module.
  std::vector<Constant *> Dims;
  for (int64_t Dim : T.Shape)
    Dims.push_back(B.getInt64(Dim));
  if (Dims.empty())
    Dims.push_back(B.getInt64(0));
  auto *ShapeTy = ArrayType::get(I64, Dims.size());
  auto *Shape = new GlobalVariable(
      M, ShapeTy, /*isConstant=*/true, GlobalValue::PrivateLinkage,
      ConstantArray::get(ShapeTy, Dims), "stack.shape");
  Shape->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  const DLDevice Host = cpuDevice();
  auto At = [&](size_t Offset) {
    return bytePtr(D, static_cast<int64_t>(Offset));
  };
  B.CreateAlignedStore(bytePtr(StackBuffers[T.Storage], T.Offset),
                       At(offsetof(DLTensor, data)), Align(8));
  B.CreateAlignedStore(
      B.getInt32(Host.device_type),
      At(offsetof(DLTensor, device) + offsetof(DLDevice, device_type)),
      Align(4));
  B.CreateAlignedStore(
      B.getInt32(Host.device_id),
      At(offsetof(DLTensor, device) + offsetof(DLDevice, device_id)), Align(4));
  B.CreateAlignedStore(B.getInt32(static_cast<int32_t>(T.Shape.size())),
                       At(offsetof(DLTensor, ndim)), Align(4));
  B.CreateAlignedStore(
      B.getInt8(T.DType.code),
      At(offsetof(DLTensor, dtype) + offsetof(DLDataType, code)), Align(1));
  B.CreateAlignedStore(
      B.getInt8(T.DType.bits),
      At(offsetof(DLTensor, dtype) + offsetof(DLDataType, bits)), Align(1));
  B.CreateAlignedStore(
      B.getInt16(T.DType.lanes),
      At(offsetof(DLTensor, dtype) + offsetof(DLDataType, lanes)), Align(2));
  B.CreateAlignedStore(Shape, At(offsetof(DLTensor, shape)), Align(8));
  B.CreateAlignedStore(ConstantPointerNull::get(Ptr),
                       At(offsetof(DLTensor, strides)), Align(8));
  B.CreateAlignedStore(B.getInt64(0), At(offsetof(DLTensor, byte_offset)),
                       Align(8));
}

bool FunctionLowering::onStackOnly(InstrView I) const {
  const int64_t Dst = I.callDst();
  // The plan's registers are written by their alloc and by null_value
  // only, and the register file keeps None for them throughout.
  return !Stack.empty() && !vm::isSpecialRegister(Dst) &&
         (Stack.isStackTensor(Dst) || Stack.isStackStorage(Dst));
}

bool FunctionLowering::inlinesKernel(InstrView I) const {
  const CalleeBinding &Bind = Callees[static_cast<size_t>(I.callFunc())];
  if (!Bind.InlineKernel || Bind.How != CalleeBinding::Direct)
    return false;
  bool Any = false;
  for (int64_t K = 0; K < I.callNumArgs() && K < 64; ++K) {
    if (((Bind.StackTensorArgs >> K) & 1) == 0)
      continue;
    const Arg A = I.callArg(K);
    if (A.kind() != ArgKind::Register || !Stack.isStackTensor(A.value()))
      continue; // checked at run time (checkedKernelArgs)
    // TVM's code assumes 64-byte aligned data; the frame's buffers are.
    const StackTensorPlan::Tensor &T = Stack.Tensors[static_cast<size_t>(
        Stack.TensorOfReg[static_cast<size_t>(A.value())])];
    if (T.Offset % 64 != 0)
      return false;
    Any = true;
  }
  // A kernel whose entry calls its compiled compute body (its checks are
  // what is inlined): only where every check folds, each tensor it is
  // given on the stack. With a tensor checked at run time, TVM's checks of
  // it would stay too, to save one call at the price of the entry's code.
  const auto *K = reinterpret_cast<const InlineKernels *>(Bind.InlineKernel);
  if (K->CallBodies.count(Exe.function(I.callFunc()).Name))
    return Any && checkedKernelArgs(I).empty();
  return Any;
}

std::vector<int64_t> FunctionLowering::checkedKernelArgs(InstrView I) const {
  std::vector<int64_t> Out;
  for (int64_t K = 0; K < I.callNumArgs(); ++K) {
    const Arg A = I.callArg(K);
    const bool MayBeTensor =
        (A.kind() == ArgKind::Register && !vm::isSpecialRegister(A.value()) &&
         !Stack.isStackTensor(A.value())) ||
        (A.kind() == ArgKind::ConstIdx && !embeddable(A.value()));
    if (MayBeTensor)
      Out.push_back(K);
  }
  return Out;
}

std::pair<Value *, Value *> FunctionLowering::emitKernelInlinedOrCalled(
    int64_t PC, InstrView I, const std::vector<int64_t> &Checked) {
  if (Checked.empty())
    return emitInlinedKernelCall(I);
  // As the kernel's entry checks them (kernel_entries.h): each argument
  // that is a tensor on the CPU has aligned data, or the call is made
  // (the entry then copies the tensor).
  Key.record("kernel alignment checked", PC);
  BasicBlock *Inline = BasicBlock::Create(C, fmt::format("i{}.inline", PC), Fn);
  BasicBlock *Call =
      BasicBlock::Create(C, fmt::format("i{}.kernel.unaligned", PC), Fn);
  BasicBlock *Join =
      BasicBlock::Create(C, fmt::format("i{}.kernel.done", PC), Fn);
  for (size_t J = 0; J < Checked.size(); ++J) {
    const Val V = evalArg(I.callArg(Checked[J]));
    BasicBlock *Next =
        J + 1 == Checked.size()
            ? Inline
            : BasicBlock::Create(C, fmt::format("i{}.arg{}", PC, J + 1), Fn);
    emitArgumentAlignmentCheck(B, B.CreateTrunc(V.TypeWord, B.getInt32Ty()),
                               B.CreateIntToPtr(V.Payload, Ptr), Next, Call);
    B.SetInsertPoint(Next);
  }
  auto [InlineRc, InlineResult] = emitInlinedKernelCall(I);
  BasicBlock *FromInline = B.GetInsertBlock();
  B.CreateBr(Join);
  B.SetInsertPoint(Call);
  for (int64_t K = 0; K < I.callNumArgs(); ++K)
    store(bytePtr(ArgStack, 16 * K), evalArg(I.callArg(K)));
  Value *CallRc = emitBoundCall(PC, I);
  BasicBlock *FromCall = B.GetInsertBlock();
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
  PHINode *Rc = B.CreatePHI(B.getInt32Ty(), 2, fmt::format("i{}.rc", PC));
  Rc->addIncoming(InlineRc, FromInline);
  Rc->addIncoming(CallRc, FromCall);
  PHINode *Result = B.CreatePHI(Ptr, 2, fmt::format("i{}.res", PC));
  Result->addIncoming(InlineResult, FromInline);
  Result->addIncoming(ResSlot, FromCall);
  return {Rc, Result};
}

std::pair<Value *, Value *>
FunctionLowering::emitInlinedKernelCall(InstrView I) {
  const int64_t Callee = I.callFunc();
  const int64_t N = I.callNumArgs();
  const CalleeBinding &Bind = Callees[static_cast<size_t>(Callee)];
  const auto *K = reinterpret_cast<const InlineKernels *>(Bind.InlineKernel);
  const std::string &Name = Exe.function(Callee).Name;
  Key.record("inlined kernel", Callee, K->Hash);
  Out.InlinedKernels[Bind.InlineKernel].insert(Name);
  logger().debug("function '{}' inlines kernel '{}'{}", F.Name, Name,
                 K->CallBodies.count(Name) ? ", calling its compute body" : "");
  // Arguments and DLTensors of this call only.
  Value *Args = entryAlloca(16 * std::max<int64_t>(N, 1), 16, "kernel.args");
  for (int64_t J = 0; J < N; ++J) {
    const Arg A = I.callArg(J);
    if (A.kind() == ArgKind::Register && Stack.isStackTensor(A.value())) {
      Value *D = dlTensorAlloca("kernel.dltensor");
      fillDLTensor(D, Stack.Tensors[static_cast<size_t>(
                          Stack.TensorOfReg[static_cast<size_t>(A.value())])]);
      // The pointer itself (no ptrtoint): once inlined, the kernel's loads
      // of it and of the DLTensor's fields become the values stored here.
      B.CreateAlignedStore(B.getInt64(kVMJITDLTensorPtr), bytePtr(Args, 16 * J),
                           Align(8));
      B.CreateAlignedStore(D, bytePtr(Args, 16 * J + 8), Align(8));
      continue;
    }
    store(bytePtr(Args, 16 * J), evalArg(A));
  }
  // A result slot of this call's own, None: the kernel does not write it
  // (extractInlineKernels), and once inlined the slot is gone (the shared
  // one, which real calls are given, would be stored to for nothing).
  Value *Result = entryAlloca(16, 16, "kernel.res");
  store(Result, constVal(kVMJITNone, 0));
  // TVM's entry (not the one that checks alignment: the stack's tensors
  // are aligned) ignores `self`.
  FunctionCallee Entry =
      M.getOrInsertFunction(inlineKernelSymbol(Name), SafeCallTy);
  Value *Rc = B.CreateCall(
      Entry, {ConstantPointerNull::get(Ptr), Args, B.getInt32(N), Result});
  return {Rc, Result};
}

} // namespace vmjit::jit::lower
