//===- kernel_entries.h - Kernel entries that check alignment ---*- C++ -*-===//
//
// Private to jit/: the entry the kernel tier publishes for each of TVM's
// kernels. TVM's code assumes 64-byte aligned tensor data; the entry checks
// the call's tensors (a few compares), calls the kernel directly when they
// are aligned and hands the call to vmjitKernelUnalignedCall
// (runtime/kernel_slot.h) when one is not. Being one function per kernel,
// it gives each call site calling it a branch of one target, and native
// code can call it with no check of its own.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_ENTRIES_H
#define VMJIT_JIT_KERNEL_ENTRIES_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace llvm {
class BasicBlock;
class IRBuilderBase;
class Module;
class Value;
} // namespace llvm

namespace vmjit::jit {

/// The symbol of kernel NAME's alignment-checking entry.
std::string alignedEntrySymbol(const std::string &Name);

/// Emits at `B` the check of one argument, its type index `Type` (i32)
/// and payload `Payload` (a pointer): a tensor object or DLTensor pointer
/// on the CPU whose data + byte_offset is not a multiple of
/// kKernelDataAlignment goes to `Unaligned`, anything else to `Ok` (what
/// TVM's code may be given as it assumes; the entries' check, and tier 2's
/// where it inlines a kernel given a tensor that is not on its stack).
/// Leaves `B` without an insertion block of its own choosing: the caller
/// sets it.
void emitArgumentAlignmentCheck(llvm::IRBuilderBase &B, llvm::Value *Type,
                                llvm::Value *Payload, llvm::BasicBlock *Ok,
                                llvm::BasicBlock *Unaligned);

/// Adds to `M` the alignment-checking entry of each packed function
/// `__tvm_ffi_NAME` of `Entries` (NAMEs), with the safe-call signature,
/// and binds in `Absolute` the runtime function it calls for unaligned
/// tensors.
void addAlignedEntries(llvm::Module &M, const std::vector<std::string> &Entries,
                       std::map<std::string, uint64_t> &Absolute);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_ENTRIES_H
