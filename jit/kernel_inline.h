//===- kernel_inline.h - Small kernels inlined into tier 2 ------*- C++ -*-===//
//
// Private to jit/: the IR of the kernel tier's small kernels, kept for tier
// 2 to inline into driver code. The kernel tier extracts it from the
// module it compiles (TVM's bitcode with the host's target attributes,
// before the pipeline): each small kernel's packed entry, renamed
// `__vmjit_inline_NAME`, with what it calls (its compute body, TVM's error
// helpers) and reads (constants); the context slots and C API functions
// it uses stay declarations, bound to the compiled kernels' slots and the
// runtime. A kernel whose compute body has loops (or is large) keeps its
// packed entry only: the body is compiled by the kernel tier's pipeline,
// exported (`__vmjit_body_NAME`), and the entry's call of it is a
// declaration bound to that code. Tier 2 calls the entry where a tensor it
// passes is on its stack (stack_tensors.h), links the kernels it calls
// into its module, and LLVM inlines them: TVM's checks of a DLTensor whose
// fields are constants fold away, and what is left is the compute body's
// arithmetic on the frame's buffers, or a direct call of the compiled
// body. docs/jit.md#kernels-inlined-into-the-driver.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_KERNEL_INLINE_H
#define VMJIT_JIT_KERNEL_INLINE_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace vmjit::jit {

/// The IR of the small kernels of one kernel module.
struct InlineKernels {
  /// A bitcode module defining `inlineKernelSymbol(NAME)` for each of
  /// Kernels (external: linked on demand), the rest internal.
  std::string Bitcode;
  /// The kernels it holds (packed function names).
  std::set<std::string> Kernels;
  /// Those of Kernels whose entry calls its compiled compute body
  /// (computeBodySymbol) instead of holding it: inlined only where TVM's
  /// checks fold (lower_stack_tensors.cpp).
  std::set<std::string> CallBodies;
  /// Its declarations' addresses: context slots and compute bodies (the
  /// compiled kernels'), C API functions (the runtime's).
  std::map<std::string, uint64_t> Symbols;
  /// XXH3-128 of Bitcode, in hex (code that inlines it keys on it).
  std::string Hash;
};

/// The symbol of kernel NAME's entry in InlineKernels::Bitcode.
std::string inlineKernelSymbol(const std::string &Name);

/// The symbol under which the kernel tier exports kernel NAME's compute
/// body (InlineKernels::CallBodies).
std::string computeBodySymbol(const std::string &Name);

/// How large the kept code may be, in LLVM instructions.
struct InlineKernelLimits {
  /// A kernel with all it calls.
  unsigned MaxInstructions = 400;
  /// A kernel's entry with what it calls but its compute body (TVM's
  /// checks, which fold where tier 2 inlines it).
  unsigned MaxWrapperInstructions = 1000;
};

/// The kernels of `Entries` in `M` whose code, with all it calls, is small
/// and has no loop (the kernel tier's pipeline, O3 with Polly, compiles
/// loops better than tier 2's), touches no mutable global but TVM's context
/// slots (`Slots`) and does not write its result (`readnone`, as TVM's
/// kernels declare it), extracted as InlineKernels (null when none is; a
/// constant naming another global is not followed: such a kernel is not
/// kept). A kernel whose entry is such code but for the one function it
/// calls once, its compute body, is kept too (InlineKernels::CallBodies):
/// that body is made an exported function of `M` named
/// computeBodySymbol(NAME), which the caller compiles and exports. TVM's
/// type-based alias tags are dropped: they are per kernel, and kernels
/// inlined into one function share its buffers. `Absolute`: the addresses
/// the module's declarations are bound to. The slots' and the bodies'
/// addresses are added once they are known (InlineKernels::Symbols).
std::shared_ptr<InlineKernels>
extractInlineKernels(llvm::Module &M, const std::vector<std::string> &Entries,
                     const std::vector<std::string> &Slots,
                     const std::map<std::string, uint64_t> &Absolute,
                     const InlineKernelLimits &Limits = {});

/// Links kernels `Names` of `K` into `Dst` (internal to it: calls of
/// inlineKernelSymbol(NAME) are then inlined by the pipeline) and adds the
/// addresses their declarations need to `Absolute`.
llvm::Error linkInlineKernels(llvm::Module &Dst, const InlineKernels &K,
                              const std::set<std::string> &Names,
                              std::map<std::string, uint64_t> &Absolute);

} // namespace vmjit::jit

#endif // VMJIT_JIT_KERNEL_INLINE_H
