//===- vmjit/runtime/object.h - Reference-counted objects -------*- C++ -*-===//
//
// Object is the C++ face of the 24-byte VMJITObject header that starts every
// heap value (strings, tensors, functions, ...). Reference counts are atomic;
// the header's deleter, not a vtable, destroys the object, so JIT code and C
// kernels can release any object without knowing its type. ObjectPtr<T> is
// the owning pointer, ObjectRef the base of the typed references (String,
// Tensor, Function, ...).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_OBJECT_H
#define VMJIT_RUNTIME_OBJECT_H

#include "vmjit/runtime/c_api.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

namespace vmjit {

/// Name of a type index ("int", "Tensor", "vm.Closure", ...) for messages.
/// Unknown indices give "unknown".
VMJIT_DLL std::string_view typeIndexName(int32_t TypeIndex) noexcept;

/// Allocates a type index (>= kVMJITDynObjectBegin) for a type registered at
/// run time, e.g. "vm.Closure". Registering the same key twice returns the
/// same index. Thread-safe.
VMJIT_DLL int32_t registerDynamicType(std::string_view Key);

/// The base of every heap object. Its only data member is the C header, so
/// a derived object's payload starts at offset 24 exactly as the C ABI says.
class Object {
public:
  int32_t typeIndex() const noexcept { return Header.type_index; }

  /// Number of strong references (for tests and diagnostics).
  uint32_t useCount() const noexcept {
    return static_cast<uint32_t>(
        __atomic_load_n(&Header.combined_ref_count, __ATOMIC_RELAXED));
  }

  void incRef() noexcept {
    __atomic_fetch_add(&Header.combined_ref_count, 1, __ATOMIC_RELAXED);
  }

  void decRef() noexcept {
    uint64_t Old =
        __atomic_fetch_sub(&Header.combined_ref_count, 1, __ATOMIC_RELEASE);
    if (static_cast<uint32_t>(Old) == 1)
      destroyStrong(Old);
  }

  /// The combined count (strong references in the low 32 bits, weak ones
  /// in the high 32), read with acquire order: whatever other threads did
  /// before dropping their references happened before the caller's next
  /// step.
  uint64_t combinedCount() const noexcept {
    return __atomic_load_n(&Header.combined_ref_count, __ATOMIC_ACQUIRE);
  }

  /// incRef for a caller that holds every reference to the object (no
  /// other thread can reach it, and none can be made without one: there
  /// is no weak-to-strong upgrade), so no read-modify-write is needed.
  [[gnu::always_inline]] void incRefExclusive() noexcept {
    __atomic_store_n(
        &Header.combined_ref_count,
        __atomic_load_n(&Header.combined_ref_count, __ATOMIC_RELAXED) + 1,
        __ATOMIC_RELAXED);
  }

  /// decRef for a caller that holds every reference to the object, at
  /// least two (as incRefExclusive).
  [[gnu::always_inline]] void decRefExclusive() noexcept {
    __atomic_store_n(
        &Header.combined_ref_count,
        __atomic_load_n(&Header.combined_ref_count, __ATOMIC_RELAXED) - 1,
        __ATOMIC_RELAXED);
  }

  /// Weak references keep the memory (not the payload) alive.
  void incWeakRef() noexcept {
    __atomic_fetch_add(&Header.combined_ref_count, uint64_t(1) << 32,
                       __ATOMIC_RELAXED);
  }
  void decWeakRef() noexcept {
    uint64_t Old = __atomic_fetch_sub(&Header.combined_ref_count,
                                      uint64_t(1) << 32, __ATOMIC_RELEASE);
    if ((Old >> 32) == 1) {
      acquireCount();
      Header.deleter(this, kVMJITObjectDeleterFlagWeak);
    }
  }

  VMJITObject *raw() noexcept { return &Header; }
  const VMJITObject *raw() const noexcept { return &Header; }
  static Object *fromRaw(VMJITObject *O) noexcept {
    return reinterpret_cast<Object *>(O);
  }

protected:
  using DeleterFn = void (*)(void *, int);
  /// A new object holds one strong reference and the one weak reference
  /// that all strong references share.
  Object(int32_t TypeIndex, DeleterFn Deleter) noexcept {
    Header.combined_ref_count = (uint64_t(1) << 32) | 1;
    Header.type_index = TypeIndex;
    Header.padding = 0;
    Header.deleter = Deleter;
  }
  ~Object() = default;
  Object(const Object &) = delete;
  /// Gives a dead object its first strong reference back: one whose
  /// deleter ran with both flags but kept the memory, parked by an owner
  /// for reuse (see TensorViewCache). Only the object's exclusive holder
  /// may call it, after an acquire that orders it after the parking.
  void reviveParked() noexcept {
    __atomic_store_n(&Header.combined_ref_count, (uint64_t(1) << 32) | 1,
                     __ATOMIC_RELAXED);
  }
  Object &operator=(const Object &) = delete;

private:
  /// The acquire side of the release decrements, before a deleter runs.
  /// An acquire load of the count (the decrements form one release
  /// sequence) rather than a fence, which ThreadSanitizer does not model.
  void acquireCount() noexcept {
    (void)__atomic_load_n(&Header.combined_ref_count, __ATOMIC_ACQUIRE);
  }

  void destroyStrong(uint64_t Old) noexcept {
    acquireCount();
    if ((Old >> 32) == 1) {
      Header.deleter(this, kVMJITObjectDeleterFlagBoth);
      return;
    }
    Header.deleter(this, kVMJITObjectDeleterFlagStrong);
    decWeakRef();
  }

  VMJITObject Header;
};

static_assert(sizeof(Object) == sizeof(VMJITObject) && sizeof(Object) == 24,
              "Object must be exactly the 24-byte C header");

/// Where JIT code finds an object's strong count (atomic updates) and its
/// type index (a register taking an object rvalue reference).
inline constexpr int64_t kObjectRefCountOffset = 0;
inline constexpr int64_t kObjectTypeIndexOffset = 8;
static_assert(offsetof(VMJITObject, combined_ref_count) ==
                  kObjectRefCountOffset &&
              offsetof(VMJITObject, type_index) == kObjectTypeIndexOffset);

/// The deleter of a heap object of concrete type T allocated by makeObject.
template <typename T> void objectDeleter(void *Self, int Flags) noexcept {
  T *P = static_cast<T *>(Self);
  if (Flags & kVMJITObjectDeleterFlagStrong)
    P->~T();
  if (Flags & kVMJITObjectDeleterFlagWeak)
    ::operator delete(Self, std::align_val_t(alignof(T)));
}

/// An owning (strong) pointer to an object of type T.
template <typename T> class ObjectPtr {
public:
  ObjectPtr() noexcept = default;
  ObjectPtr(std::nullptr_t) noexcept {}
  ObjectPtr(const ObjectPtr &O) noexcept : Ptr(O.Ptr) {
    if (Ptr)
      Ptr->incRef();
  }
  ObjectPtr(ObjectPtr &&O) noexcept : Ptr(O.Ptr) { O.Ptr = nullptr; }
  template <typename U,
            typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(ObjectPtr<U> O) noexcept : Ptr(O.release()) {}
  ~ObjectPtr() {
    if (Ptr)
      Ptr->decRef();
  }
  ObjectPtr &operator=(ObjectPtr O) noexcept {
    std::swap(Ptr, O.Ptr);
    return *this;
  }

  /// Takes over a reference the caller already owns.
  static ObjectPtr adopt(T *P) noexcept {
    ObjectPtr R;
    R.Ptr = P;
    return R;
  }
  /// Takes a new reference to P.
  static ObjectPtr share(T *P) noexcept {
    if (P)
      P->incRef();
    return adopt(P);
  }
  /// Gives up ownership without releasing.
  T *release() noexcept { return std::exchange(Ptr, nullptr); }

  T *get() const noexcept { return Ptr; }
  T *operator->() const noexcept { return Ptr; }
  T &operator*() const noexcept { return *Ptr; }
  explicit operator bool() const noexcept { return Ptr != nullptr; }
  bool operator==(const ObjectPtr &O) const noexcept { return Ptr == O.Ptr; }

private:
  T *Ptr = nullptr;
};

/// Allocates and constructs an object of type T (derived from Object, with a
/// constructor taking the arguments). Returns it with one strong reference.
template <typename T, typename... Args>
ObjectPtr<T> makeObject(Args &&...A) {
  void *Mem = ::operator new(sizeof(T), std::align_val_t(alignof(T)));
  try {
    return ObjectPtr<T>::adopt(new (Mem) T(std::forward<Args>(A)...));
  } catch (...) {
    ::operator delete(Mem, std::align_val_t(alignof(T)));
    throw;
  }
}

/// Base of the typed references (String, Tensor, Function, ...). A
/// reference may be null.
class ObjectRef {
public:
  ObjectRef() noexcept = default;
  explicit ObjectRef(ObjectPtr<Object> P) noexcept : Data(std::move(P)) {}

  Object *get() const noexcept { return Data.get(); }
  bool defined() const noexcept { return Data.get() != nullptr; }
  explicit operator bool() const noexcept { return defined(); }
  bool same(const ObjectRef &O) const noexcept { return Data == O.Data; }
  uint32_t useCount() const noexcept { return Data ? Data->useCount() : 0; }
  int32_t typeIndex() const noexcept {
    return Data ? Data->typeIndex() : kVMJITNone;
  }

  /// The untyped owning pointer (for code that moves references around).
  const ObjectPtr<Object> &ptr() const noexcept { return Data; }
  ObjectPtr<Object> &ptr() noexcept { return Data; }

protected:
  ObjectPtr<Object> Data;
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_OBJECT_H
