//===- vmjit/vm/allocator.h - Storage for vm.builtin.alloc_storage -*- C++ -*-===//
//
// `vm.builtin.alloc_storage` asks the VM's allocator for a block; tensors
// made by `vm.builtin.alloc_tensor` live inside it. The naive allocator
// gives every request fresh 64-byte aligned memory; the pooled one keeps
// freed blocks by size class and hands them out again, so a driver that
// allocates the same activations on every call stops calling malloc after
// the first. A block returns to its allocator when its Storage object (and
// every tensor viewing it) is gone, on any thread.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_ALLOCATOR_H
#define VMJIT_VM_ALLOCATOR_H

#include "vmjit/runtime/object.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/runtime/tensor_view_cache.h"

#include <cstddef>
#include <memory>

namespace vmjit::vm {

enum class AllocatorKind { Naive, Pooled };

/// A block of device memory (type "vm.Storage").
class StorageObj : public Object {
public:
  /// Registered on first use (registration is idempotent, so every copy
  /// of this inline function agrees).
  static int32_t typeIndex() {
    static const int32_t Index = registerDynamicType("vm.Storage");
    return Index;
  }
  void *data() const noexcept { return Data; }
  /// The bytes the program asked for (tensors must fit in these).
  size_t size() const noexcept { return Size; }
  /// The bytes actually reserved (a multiple of 64, at least Size).
  size_t capacity() const noexcept { return Capacity; }
  DLDevice device() const noexcept { return Device; }
  /// Dead tensor views of this block kept for `vm.builtin.alloc_tensor`.
  TensorViewCache &views() noexcept { return Views; }

  /// Memory returns through this when the storage dies.
  struct Releaser {
    virtual ~Releaser() = default;
    virtual void release(void *Data, size_t Size) noexcept = 0;
  };
  StorageObj(void *Data, size_t Size, size_t Capacity, DLDevice Device,
             std::shared_ptr<Releaser> Owner);
  ~StorageObj();

private:
  void *Data;
  size_t Size;
  size_t Capacity;
  DLDevice Device;
  std::shared_ptr<Releaser> Owner;
  TensorViewCache Views;
};

/// A reference to a storage block. As a typed parameter it accepts only a
/// Storage ("argument 1 expected Storage but got Tensor").
class Storage : public ObjectRef {
public:
  using ContainerType = StorageObj;
  static constexpr const char *kTypeName = "Storage";
  Storage() = default;
  explicit Storage(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}

  StorageObj *get() const noexcept {
    return static_cast<StorageObj *>(ObjectRef::get());
  }
  StorageObj *operator->() const noexcept { return get(); }
};

class Allocator {
public:
  virtual ~Allocator() = default;
  /// A block of at least `Bytes` bytes, 64-byte aligned, on `Device` (CPU
  /// only for now). Throws ValueError for another device, MemoryError when
  /// out of memory.
  virtual ObjectPtr<StorageObj> allocate(size_t Bytes, DLDevice Device) = 0;
  /// Bytes currently handed out and kept in pools (for tests and stats).
  virtual size_t bytesInUse() const = 0;
  virtual size_t bytesPooled() const = 0;
  /// Number of times memory was requested from the system.
  virtual size_t systemAllocations() const = 0;
};

std::unique_ptr<Allocator> makeAllocator(AllocatorKind Kind);

} // namespace vmjit::vm

namespace vmjit {
/// Storage's type index is given at run time, so its traits check it.
template <> struct TypeTraits<vm::Storage> : ObjectRefTypeTraits<vm::Storage> {
  static std::optional<vm::Storage> fromAny(const VMJITAny *V) {
    if (V->type_index == vm::StorageObj::typeIndex())
      return vm::Storage(ObjectPtr<Object>::share(Object::fromRaw(V->v_obj)));
    return std::nullopt;
  }
};
} // namespace vmjit

#endif // VMJIT_VM_ALLOCATOR_H
