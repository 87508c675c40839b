//===- vmjit/runtime/tensor_view_cache.h - Reused views of a block -*- C++ -*-===//
//
// TVM's drivers make a new tensor view of a storage block for nearly every
// kernel call (`vm.builtin.alloc_tensor`) and drop it a few instructions
// later (`vm.builtin.null_value`), with the same shape and type each time.
// A storage keeps a few of its dead views so that the next such request
// revives one instead of building an object: a view made here parks in a
// free slot when its last reference goes (giving up its reference on the
// storage), and `revive` hands out a parked view of exactly the same
// memory, shape and type. Nothing referenced is ever reused: a view parks
// only once no reference to it is left, and the storage's destructor
// destroys what is parked.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_TENSOR_VIEW_CACHE_H
#define VMJIT_RUNTIME_TENSOR_VIEW_CACHE_H

#include "vmjit/runtime/tensor.h"

#include <atomic>
#include <cstdint>
#include <span>

namespace vmjit {

/// Dead views of one owner's memory, kept for reuse. Lives inside the
/// owner (a storage block); thread-safe: a view may die on any thread
/// while the owner's thread asks for another.
class TensorViewCache {
public:
  /// Views parked at most (TVM's memory planner gives a block one live
  /// tensor at a time, of one or a few shapes).
  static constexpr int kSlots = 4;

  TensorViewCache() = default;
  TensorViewCache(const TensorViewCache &) = delete;
  TensorViewCache &operator=(const TensorViewCache &) = delete;
  ~TensorViewCache();

  /// A parked view of `Data` with exactly this shape, type and device
  /// (compact, no byte offset), given one strong reference and a new
  /// reference on `Owner`, the object that holds this cache; a null Tensor
  /// if none is parked. A caller may rely on a revived view having passed
  /// whatever checks it made before makeView for the same arguments (as
  /// long as no one rewrote a view's DLTensor in place, which DLPack
  /// forbids).
  VMJIT_DLL Tensor revive(Object *Owner, const void *Data,
                          std::span<const int64_t> Shape, DLDataType DType,
                          DLDevice Dev) noexcept;

  /// A new compact view of `Data` that `Owner` (holding this cache) keeps
  /// alive, as Tensor::viewChecked makes it (the caller has checked the
  /// shape, the type and that the view fits), which parks here when it
  /// dies. If every slot is taken, one parked view is dropped to make room.
  VMJIT_DLL Tensor makeView(Object *Owner, void *Data,
                            std::span<const int64_t> Shape, DLDataType DType,
                            DLDevice Dev);

  /// Views parked now (for tests).
  VMJIT_DLL int parked() const noexcept;

private:
  friend class TensorObj;
  /// Parks `T`, whose last reference just went: true if a slot took it.
  bool park(TensorObj *T) noexcept;

  std::atomic<TensorObj *> Slots[kSlots] = {};
  std::atomic<uint32_t> NextEvict{0};
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_TENSOR_VIEW_CACHE_H
