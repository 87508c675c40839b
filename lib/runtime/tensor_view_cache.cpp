//===- tensor_view_cache.cpp - Reused views of a storage block -------------===//
//
// A slot holds a parked view or null. Slots change only by atomic exchange
// and compare-exchange, so a view is owned by exactly one party at a time:
// a holder of references (live), one slot (parked), or the thread that
// took it out of a slot (reviving or destroying it).
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/tensor_view_cache.h"
#include "vmjit/runtime/object_pool.h"

#include <algorithm>

namespace vmjit {
namespace {

/// A parked view's memory back to the pools (its owner reference is gone).
void destroyParked(TensorObj *T) noexcept {
  recycledObjectDeleter<TensorObj>(T, kVMJITObjectDeleterFlagBoth);
}

/// Whether parked view T is a compact view of Data with this shape and
/// type (a loop: std::equal on int64 calls memcmp).
bool isViewOf(const TensorObj *T, const void *Data,
              std::span<const int64_t> Shape, DLDataType DType,
              DLDevice Dev) noexcept {
  const DLTensor &L = T->DL;
  if (L.data != Data || L.byte_offset != 0 || L.strides ||
      L.device.device_type != Dev.device_type ||
      L.device.device_id != Dev.device_id ||
      L.dtype.code != DType.code || L.dtype.bits != DType.bits ||
      L.dtype.lanes != DType.lanes ||
      static_cast<size_t>(L.ndim) != Shape.size())
    return false;
  for (size_t K = 0; K < Shape.size(); ++K)
    if (L.shape[K] != Shape[K])
      return false;
  return true;
}

} // namespace

TensorViewCache::~TensorViewCache() {
  // The owner is dying: nothing refers to it, so no view of it is alive to
  // park and no one can revive one; plain loads see every slot's last park.
  for (auto &Slot : Slots)
    if (TensorObj *T = Slot.load(std::memory_order_acquire))
      destroyParked(T);
}

bool TensorViewCache::park(TensorObj *T) noexcept {
  // T holding its owner's last reference: the owner (and this cache) dies
  // with T, so parking T would only delay its destruction.
  if (T->Owner.useCount() == 1)
    return false;
  // The owner stays alive until T is parked: its release may destroy this
  // cache (and, through it, T).
  Object *Owner = T->Owner.ptr().release();
  for (auto &Slot : Slots) {
    TensorObj *Empty = nullptr;
    if (Slot.compare_exchange_strong(Empty, T, std::memory_order_release,
                                     std::memory_order_relaxed)) {
      Owner->decRef();
      return true;
    }
  }
  T->Owner.ptr() = ObjectPtr<Object>::adopt(Owner);
  return false;
}

Tensor TensorViewCache::revive(Object *Owner, const void *Data,
                               std::span<const int64_t> Shape,
                               DLDataType DType, DLDevice Dev) noexcept {
  for (auto &Slot : Slots) {
    if (!Slot.load(std::memory_order_relaxed))
      continue;
    // Taken out before it is read: another thread may evict it meanwhile.
    TensorObj *T = Slot.exchange(nullptr, std::memory_order_acquire);
    if (!T)
      continue;
    if (isViewOf(T, Data, Shape, DType, Dev)) {
      T->reviveParked();
      T->Owner = ObjectRef(ObjectPtr<Object>::share(Owner));
      return Tensor(ObjectPtr<Object>::adopt(T));
    }
    TensorObj *Empty = nullptr;
    if (!Slot.compare_exchange_strong(Empty, T, std::memory_order_release,
                                      std::memory_order_relaxed))
      destroyParked(T);
  }
  return Tensor();
}

Tensor TensorViewCache::makeView(Object *Owner, void *Data,
                                 std::span<const int64_t> Shape,
                                 DLDataType DType, DLDevice Dev) {
  Tensor View = Tensor::viewChecked(ObjectRef(ObjectPtr<Object>::share(Owner)),
                                    Data, Shape, DType, Dev);
  const_cast<TensorObj *>(View.get())->ParkIn = this;
  const bool Full = std::all_of(std::begin(Slots), std::end(Slots),
                                [](const std::atomic<TensorObj *> &S) {
                                  return S.load(std::memory_order_relaxed);
                                });
  if (Full) {
    auto &Victim = Slots[NextEvict.fetch_add(1, std::memory_order_relaxed) %
                         kSlots];
    if (TensorObj *T = Victim.exchange(nullptr, std::memory_order_acquire))
      destroyParked(T);
  }
  return View;
}

int TensorViewCache::parked() const noexcept {
  return static_cast<int>(
      std::count_if(std::begin(Slots), std::end(Slots),
                    [](const std::atomic<TensorObj *> &S) {
                      return S.load(std::memory_order_acquire) != nullptr;
                    }));
}

} // namespace vmjit
