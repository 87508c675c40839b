//===- vmjit/runtime/kernel_effects.h - What a kernel touches ---*- C++ -*-===//
//
// What one kernel's code is proven, from its LLVM IR, to do with its
// arguments: the facts that let a call of it on constant inputs run once
// (vm/bind_params.h) and that keep bound tensors immutable. The JIT's
// kernel tier proves them (jit/kernel_tier.h); no LLVM type here.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_KERNEL_EFFECTS_H
#define VMJIT_RUNTIME_KERNEL_EFFECTS_H

#include <cstdint>
#include <vector>

namespace vmjit {

/// What a kernel's code may do with the data of the tensor passed as one
/// argument (a bit mask: ReadWrite is Read | Write).
enum class ArgAccess : uint8_t {
  /// Not a tensor, or its data is never touched.
  None = 0,
  Read = 1,
  /// May be written: some of it, not necessarily all (a kernel appending
  /// to a cache writes part of it).
  Write = 2,
  /// Read and written, or not proven otherwise.
  ReadWrite = 3,
};

inline bool reads(ArgAccess A) noexcept {
  return (static_cast<uint8_t>(A) & 1) != 0;
}
inline bool writes(ArgAccess A) noexcept {
  return (static_cast<uint8_t>(A) & 2) != 0;
}

/// The effects of one kernel (a packed function of a model library).
struct KernelEffects {
  /// The code reads and writes no memory but its arguments (the argument
  /// array, the tensors' headers, their data as Args says) and memory it
  /// allocates and frees itself (TVM's workspaces); it reads no global
  /// state and calls nothing that could (TVM's backend functions for
  /// workspaces, errors and parallel launches are allowed). Its outputs are
  /// then a function of its inputs alone.
  bool OnlyArgumentMemory = false;
  /// One per packed argument, in order: what the code may do with that
  /// tensor's data. A kernel whose argument count is not fixed has none.
  std::vector<ArgAccess> Args;

  bool operator==(const KernelEffects &) const = default;
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_KERNEL_EFFECTS_H
