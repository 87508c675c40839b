//===- direct_context.h - A direct entry's context kept in values -*- C++ -*-===//
//
// Private to jit/. A direct entry holding a copy of its function's code
// fills a NativeContext on its stack for that code. Most of it is read
// only on slow paths (a deoptimization, a step's slow path, an error's
// frame line) and by the direct calls the code makes, which need only the
// fields every frame of the chain shares. keepContextOutOfMemory stores
// the fields right before the calls that read the context, and nowhere on
// the fast path (docs/jit.md#direct-calls).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_DIRECT_CONTEXT_H
#define VMJIT_JIT_DIRECT_CONTEXT_H

#include "llvm/ADT/ArrayRef.h"

namespace llvm {
class AllocaInst;
class StoreInst;
class Value;
} // namespace llvm

namespace vmjit::jit {

/// `Ctx` is the context alloca of a direct entry whose code is copied in,
/// `Fields` the stores that fill it (each field but ErrorPC, written once
/// and by no one else: the code's only store into its context is the
/// error pc), `Root` the entry's root context. Loads of those fields
/// become the stored values; the direct calls the copy makes
/// (kDirectCallMetadata) get `Root` as their root; every other call that
/// takes `Ctx` gets the fields stored right before it; the stores in
/// `Fields` go. Returns false, changing nothing, when `Ctx` has a use
/// other than these.
bool keepContextOutOfMemory(llvm::AllocaInst *Ctx, llvm::Value *Root,
                            llvm::ArrayRef<llvm::StoreInst *> Fields);

} // namespace vmjit::jit

#endif // VMJIT_JIT_DIRECT_CONTEXT_H
