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
class Module;
} // namespace llvm

namespace vmjit::jit {

/// The symbol of kernel NAME's alignment-checking entry.
std::string alignedEntrySymbol(const std::string &Name);

/// Adds to `M` the alignment-checking entry of each packed function
/// `__tvm_ffi_NAME` of `Entries` (NAMEs), with the safe-call signature,
/// and binds in `Absolute` the runtime function it calls for unaligned
/// tensors.
void addAlignedEntries(llvm::Module &M, const std::vector<std::string> &Entries,
                       std::map<std::string, uint64_t> &Absolute);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_ENTRIES_H
