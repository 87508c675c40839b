//===- kernel_effects.h - What TVM's kernels read and write -----*- C++ -*-===//
//
// Private to jit/: proves from the LLVM IR of TVM's kernels (the bitcode
// beside a model library) which arguments each kernel reads and writes,
// and whether it touches any other memory (runtime/kernel_effects.h says
// what the facts mean; KernelTier::effects is the public edge). Sound and
// conservative: what is not understood is assumed read and written.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_EFFECTS_H
#define VMJIT_JIT_KERNEL_EFFECTS_H

#include "vmjit/runtime/kernel_effects.h"

#include <map>
#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace vmjit::jit {

/// The effects of the packed functions `Entries` (NAME, without
/// `__tvm_ffi_`) of `M`, by NAME; a name without a definition of the
/// safe-call entry `__tvm_ffi_NAME` gets the conservative answer.
///
/// Every pointer an entry dereferences is traced back to where it came
/// from: the argument array (TVMFFIAny[]: type index at 0, value at 8, 16
/// bytes each) at a constant index K, the DLTensor it holds (directly, or
/// at 24 in a Tensor object), that tensor's shape and strides, its data
/// (argument K's memory), the kernel's own stack and workspaces
/// (TVMBackendAllocWorkspace), constant globals. Internal functions called
/// (compute bodies, error helpers) are analyzed with their parameters
/// mapped to the caller's pointers, and so is the lambda of a parallel
/// launch (TVMBackendParallelLaunch), with the pointers stored into its
/// closure data (a stack struct whose address goes nowhere else) mapped to
/// the lambda's loads from it; intrinsics and declared functions by
/// their memory attributes; math library functions touch only errno;
/// raising an error (TVMFFIErrorSetRaisedFromCStr*) is allowed. A read or
/// write of other memory (a mutable global, the result slot) makes the
/// kernel not OnlyArgumentMemory; a pointer of unknown origin dereferenced,
/// a header written or a call not understood (another packed function, a
/// launch of closure data used otherwise, an unknown external) also makes
/// every argument
/// ReadWrite; an argument array indexed at a non-constant offset, or an
/// argument count that is not fixed, leaves Args empty.
///
/// TVM's layouts are assumed, as the code TVM generates relies on them: an
/// argument's value is its DLTensor (or Tensor object), the DLTensor's
/// data pointer is at 0, shape at 24, strides at 32, and a kernel accesses
/// a tensor only within its data. Infers nothing into `M`.
///
/// `Reasons`, if given, gets one line per kernel not proven
/// OnlyArgumentMemory: the first thing not understood.
std::map<std::string, KernelEffects>
analyzeKernelEffects(llvm::Module &M, const std::vector<std::string> &Entries,
                     std::map<std::string, std::string> *Reasons = nullptr);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_EFFECTS_H
