//===- transpose_nests.h - Transposes as 8x8 blocks -------------*- C++ -*-===//
//
// Private to jit/: the kernel tier's transpose idiom. TVM writes a transpose
// (`permute_dims`, the per-call weight transposes of a model built without
// LiftTransformParams) as a loop nest of scalar copies, one strided side:
// every element its own load and store, a cache line per element on the
// strided side. The nest is found by what its accesses compute, not by
// its names, and rewritten into blocks of 8x8 elements moved through
// vector registers. A data movement: the bits are TVM's.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_TRANSPOSE_NESTS_H
#define VMJIT_JIT_TRANSPOSE_NESTS_H

namespace llvm {
class Module;
} // namespace llvm

namespace vmjit::jit {

/// Rewrites every loop nest of `M` that is a 2-D transpose into blocked
/// code and returns how many it rewrote.
///
/// A nest qualifies when it is two loops (preheaders, each left only from
/// its latch, which all its blocks dominate, constant trip counts, no
/// value used after it)
/// whose only memory operations are simple stores, in the inner loop, of
/// a value loaded there from another base pointer, each address affine in
/// the two loops (scalar evolution), and when those accesses together
/// write each element of an R x C array `Out` exactly once with element
/// (x, y) of the C x R array `In` (proved from the strides and start
/// offsets: unrolled nests, either loop order), R and C at least 8 (the
/// elements past the last whole block are copied one by one).
/// The rewritten code runs when the two arrays do not overlap (checked at
/// run time, once per nest); otherwise the original nest runs.
unsigned rewriteTransposeNests(llvm::Module &M);

} // namespace vmjit::jit

#endif // VMJIT_JIT_TRANSPOSE_NESTS_H
