//===- kernel_entries.cpp - Kernel entries that check alignment -----------===//
//
// See kernel_entries.h. The check is tensorArgumentsAligned's
// (runtime/aligned_call.h), in IR: for each argument that is a tensor
// object or a DLTensor pointer on the CPU, data + byte_offset a multiple of
// kKernelDataAlignment.
//
//===----------------------------------------------------------------------===//

#include "kernel_entries.h"

#include "vmjit/runtime/aligned_call.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/tensor.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"

#include <cstddef>

using namespace llvm;


namespace vmjit::jit {
namespace {

// The layouts the check reads (runtime/c_api.h, dlpack.h).
constexpr int64_t kAnySize = sizeof(VMJITAny);
constexpr int64_t kAnyType = offsetof(VMJITAny, type_index);
constexpr int64_t kAnyValue = offsetof(VMJITAny, v_ptr);
constexpr int64_t kData = offsetof(DLTensor, data);
constexpr int64_t kDeviceType = offsetof(DLTensor, device) +
                                offsetof(DLDevice, device_type);
constexpr int64_t kByteOffset = offsetof(DLTensor, byte_offset);

/// Emits the loop over the arguments: branches to `Aligned` when every
/// tensor argument is aligned (or not on the CPU), to `Unaligned` at the
/// first that is not.
void emitCheck(IRBuilder<> &B, llvm::Function *F, BasicBlock *Aligned,
               BasicBlock *Unaligned) {
  LLVMContext &C = B.getContext();
  Value *Args = F->getArg(1), *Num = F->getArg(2);
  MDNode *Likely = MDBuilder(C).createBranchWeights(1 << 20, 1);
  BasicBlock *Entry = B.GetInsertBlock();
  BasicBlock *Loop = BasicBlock::Create(C, "arg", F);
  BasicBlock *Next = BasicBlock::Create(C, "next", F);
  B.CreateCondBr(B.CreateICmpSGT(Num, B.getInt32(0)), Loop, Aligned);

  B.SetInsertPoint(Loop);
  PHINode *I = B.CreatePHI(B.getInt32Ty(), 2, "i");
  I->addIncoming(B.getInt32(0), Entry);
  Value *Any = B.CreateGEP(B.getInt8Ty(), Args,
                           B.CreateMul(B.CreateZExt(I, B.getInt64Ty()),
                                       B.getInt64(kAnySize)));
  Value *Type = B.CreateAlignedLoad(
      B.getInt32Ty(), B.CreateConstGEP1_64(B.getInt8Ty(), Any, kAnyType),
      Align(4));
  Value *Payload = B.CreateAlignedLoad(
      B.getPtrTy(), B.CreateConstGEP1_64(B.getInt8Ty(), Any, kAnyValue),
      Align(8));
  emitArgumentAlignmentCheck(B, Type, Payload, Next, Unaligned);

  B.SetInsertPoint(Next);
  Value *After = B.CreateAdd(I, B.getInt32(1));
  I->addIncoming(After, Next);
  B.CreateCondBr(B.CreateICmpSLT(After, Num), Loop, Aligned, Likely);
}

void addAlignedEntry(Module &M, llvm::Function *Kernel, FunctionCallee Unaligned) {
  LLVMContext &C = M.getContext();
  std::string Name = Kernel->getName().drop_front(sizeof("__tvm_ffi_") - 1).str();
  llvm::Function *F =
      llvm::Function::Create(Kernel->getFunctionType(), GlobalValue::ExternalLinkage,
                       alignedEntrySymbol(Name), M);
  for (StringRef Attr : {"target-cpu", "target-features"})
    if (Kernel->hasFnAttribute(Attr))
      F->addFnAttr(Kernel->getFnAttribute(Attr));
  IRBuilder<> B(BasicBlock::Create(C, "entry", F));
  BasicBlock *Aligned = BasicBlock::Create(C, "aligned", F);
  BasicBlock *Copy = BasicBlock::Create(C, "unaligned", F);
  emitCheck(B, F, Aligned, Copy);
  SmallVector<Value *, 4> Args(llvm::make_pointer_range(F->args()));

  B.SetInsertPoint(Aligned);
  CallInst *Call = B.CreateCall(Kernel, Args);
  Call->setTailCall();
  B.CreateRet(Call);

  B.SetInsertPoint(Copy);
  B.CreateRet(B.CreateCall(Unaligned, {Args[0], Kernel, Args[1], Args[2],
                                       Args[3]}));
}

} // namespace

void emitArgumentAlignmentCheck(IRBuilderBase &B, Value *Type, Value *Payload,
                                BasicBlock *Ok, BasicBlock *Unaligned) {
  LLVMContext &C = B.getContext();
  llvm::Function *F = B.GetInsertBlock()->getParent();
  MDNode *Likely = MDBuilder(C).createBranchWeights(1 << 20, 1);
  BasicBlock *Tensor = BasicBlock::Create(C, "tensor", F);
  BasicBlock *CPU = BasicBlock::Create(C, "unaligned.device", F);
  Value *IsObject = B.CreateICmpEQ(Type, B.getInt32(kVMJITTensor));
  Value *IsTensor =
      B.CreateOr(IsObject, B.CreateICmpEQ(Type, B.getInt32(kVMJITDLTensorPtr)));
  Value *DL = B.CreateSelect(
      IsObject,
      B.CreateConstGEP1_64(B.getInt8Ty(), Payload, kTensorDLTensorOffset),
      Payload);
  B.CreateCondBr(IsTensor, Tensor, Ok);

  B.SetInsertPoint(Tensor);
  auto Field = [&](int64_t Offset) {
    return B.CreateAlignedLoad(B.getInt64Ty(),
                               B.CreateConstGEP1_64(B.getInt8Ty(), DL, Offset),
                               Align(8));
  };
  Value *Address = B.CreateAdd(Field(kData), Field(kByteOffset));
  Value *Low = B.CreateAnd(Address, B.getInt64(kKernelDataAlignment - 1));
  B.CreateCondBr(B.CreateICmpEQ(Low, B.getInt64(0)), Ok, CPU, Likely);

  // Unaligned data on another device is that device's kernels' business.
  B.SetInsertPoint(CPU);
  Value *Device = B.CreateAlignedLoad(
      B.getInt32Ty(), B.CreateConstGEP1_64(B.getInt8Ty(), DL, kDeviceType),
      Align(4));
  B.CreateCondBr(B.CreateICmpEQ(Device, B.getInt32(kDLCPU)), Unaligned, Ok);
}

std::string alignedEntrySymbol(const std::string &Name) {
  return "__vmjit_aligned_" + Name;
}

void addAlignedEntries(Module &M, const std::vector<std::string> &Entries,
                       std::map<std::string, uint64_t> &Absolute) {
  LLVMContext &C = M.getContext();
  Type *Ptr = PointerType::getUnqual(C);
  FunctionCallee Unaligned = M.getOrInsertFunction(
      kKernelUnalignedCallSymbol,
      FunctionType::get(Type::getInt32Ty(C), {Ptr, Ptr, Ptr,
                                              Type::getInt32Ty(C), Ptr},
                        false));
  Absolute[kKernelUnalignedCallSymbol] =
      reinterpret_cast<uint64_t>(&vmjitKernelUnalignedCall);
  for (const std::string &Name : Entries)
    addAlignedEntry(M, M.getFunction("__tvm_ffi_" + Name), Unaligned);
}

} // namespace vmjit::jit
