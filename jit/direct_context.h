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

#include <vector>

namespace llvm {
class AllocaInst;
class CallInst;
class StoreInst;
class Value;
} // namespace llvm

namespace vmjit::jit {

/// The stores that fill a direct entry's context, and the call that
/// reads it after the code.
struct ContextFill {
  /// Every field but the error pc: each written once, by no one else.
  std::vector<llvm::StoreInst *> Fields;
  /// The error pc's -1 (the code stores an error's pc, tier 1 too after
  /// a deoptimization).
  llvm::StoreInst *ErrorPC = nullptr;
  /// The error's frame line after the code: it reads the error pc the
  /// code or tier 1 stored, so it gets every field but that one.
  llvm::CallInst *FrameLine = nullptr;
};

/// `Ctx` is the context alloca of a direct entry whose code is copied in,
/// `Fill` what fills it, `Root` the entry's root context. Loads of the
/// fields become the stored values; the direct calls the copy makes
/// (kDirectCallMetadata) get `Root` as their root; every other call that
/// takes `Ctx` gets the fields stored right before it; the stores of
/// `Fill` go. Returns false, changing nothing, when `Ctx` has a use other
/// than these and the code's stores of the error pc.
bool keepContextOutOfMemory(llvm::AllocaInst *Ctx, llvm::Value *Root,
                            const ContextFill &Fill);

} // namespace vmjit::jit

#endif // VMJIT_JIT_DIRECT_CONTEXT_H
