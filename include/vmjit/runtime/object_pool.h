//===- vmjit/runtime/object_pool.h - Recycled object memory -----*- C++ -*-===//
//
// The objects a driver program makes on every call (tensors viewing a
// storage, storages, shapes) are small and short-lived. Their memory is kept
// on per-thread free lists by size class when they die and handed out again
// by the next makeRecycledObject, so a warm call allocates nothing. Only
// dead memory is reused: an object is recycled when its last strong and weak
// reference are gone, exactly when makeObject's memory would be freed, so
// the lifetime of every value is unchanged. A block freed on another thread
// joins that thread's lists; each list is bounded and emptied when its
// thread exits.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_OBJECT_POOL_H
#define VMJIT_RUNTIME_OBJECT_POOL_H

#include "vmjit/runtime/object.h"

#include <cstddef>
#include <new>

namespace vmjit {

/// The largest block the pools recycle; bigger objects use operator new.
inline constexpr size_t kMaxRecycledObjectSize = 256;
/// Every recycled block is aligned to this (a cache line, and the alignment
/// of tensor data, so small tensors' data can come from the pools too).
inline constexpr size_t kRecycledBlockAlignment = 64;

namespace detail {
/// A block of at least Size bytes (0 < Size <= kMaxRecycledObjectSize),
/// aligned to kRecycledBlockAlignment; throws std::bad_alloc.
VMJIT_DLL void *takeRecycledBlock(size_t Size);
/// Gives back a block takeRecycledBlock(Size) returned.
VMJIT_DLL void giveRecycledBlock(void *Block, size_t Size) noexcept;
} // namespace detail

/// Statistics of this thread's object pools (for tests and benchmarks).
struct RecycledObjectStats {
  /// Blocks handed out from a free list / from operator new.
  size_t Reused = 0, Fresh = 0;
  /// Blocks now on this thread's free lists.
  size_t Pooled = 0;
};
VMJIT_DLL RecycledObjectStats recycledObjectStats() noexcept;

/// The deleter of an object made by makeRecycledObject<T>.
template <typename T>
void recycledObjectDeleter(void *Self, int Flags) noexcept {
  T *P = static_cast<T *>(Self);
  if (Flags & kVMJITObjectDeleterFlagStrong)
    P->~T();
  if (Flags & kVMJITObjectDeleterFlagWeak)
    detail::giveRecycledBlock(Self, sizeof(T));
}

/// makeObject for a type whose constructor passes recycledObjectDeleter<T>
/// to Object: the memory comes from (and returns to) the pools.
template <typename T, typename... Args>
ObjectPtr<T> makeRecycledObject(Args &&...A) {
  static_assert(sizeof(T) <= kMaxRecycledObjectSize,
                "too large to recycle: use makeObject");
  static_assert(alignof(T) <= kRecycledBlockAlignment);
  void *Mem = detail::takeRecycledBlock(sizeof(T));
  try {
    return ObjectPtr<T>::adopt(new (Mem) T(std::forward<Args>(A)...));
  } catch (...) {
    detail::giveRecycledBlock(Mem, sizeof(T));
    throw;
  }
}

} // namespace vmjit

#endif // VMJIT_RUNTIME_OBJECT_POOL_H
