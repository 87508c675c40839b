//===- vmjit/runtime/array.h - Arrays (tuples) -------------------*- C++ -*-===//
//
// An Array (type 71) is an immutable sequence of values; the VM uses it for
// tuples. Its payload after the header is {Any* data, int64_t size}, so JIT
// code can index it without a call.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_ARRAY_H
#define VMJIT_RUNTIME_ARRAY_H

#include "vmjit/runtime/any.h"
#include "vmjit/runtime/object_pool.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace vmjit {

/// The array object. Made only through Array's constructors (its memory is
/// recycled: makeRecycledObject, never makeObject); up to kInlineElems
/// elements live inside the object, so a small tuple is one block.
class ArrayObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITArray;
  static constexpr size_t kInlineElems = 8;
  explicit ArrayObj(std::vector<Any> Elems)
      : Object(kTypeIndex, recycledObjectDeleter<ArrayObj>),
        Storage(std::move(Elems)) {
    Data = Storage.data();
    Size = static_cast<int64_t>(Storage.size());
  }
  /// Copies of at most kInlineElems values, inside the object.
  explicit ArrayObj(std::span<const AnyView> Elems)
      : Object(kTypeIndex, recycledObjectDeleter<ArrayObj>) {
    Data = reinterpret_cast<Any *>(Inline);
    Size = 0;
    try {
      for (const AnyView &E : Elems) {
        new (Data + Size) Any(E);
        ++Size;
      }
    } catch (...) {
      std::destroy_n(Data, Size);
      throw;
    }
  }
  ~ArrayObj() {
    if (Data == reinterpret_cast<Any *>(Inline))
      std::destroy_n(Data, Size);
  }
  std::span<const Any> elements() const noexcept {
    return {Data, static_cast<size_t>(Size)};
  }

private:
  friend struct ArrayObjLayout;
  Any *Data;
  int64_t Size;
  std::vector<Any> Storage; ///< Only for more than kInlineElems.
  alignas(Any) unsigned char Inline[kInlineElems * sizeof(Any)];
};

/// JIT code indexes an array through {Any* data, int64_t size} right after
/// the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct ArrayObjLayout {
  static constexpr size_t DataOffset = offsetof(ArrayObj, Data);
  static constexpr size_t SizeOffset = offsetof(ArrayObj, Size);
};
#pragma GCC diagnostic pop
static_assert(ArrayObjLayout::DataOffset == sizeof(VMJITObject));
static_assert(ArrayObjLayout::SizeOffset == sizeof(VMJITObject) + 8);

/// A reference to an immutable array of values.
class Array : public ObjectRef {
public:
  using ContainerType = ArrayObj;
  static constexpr const char *kTypeName = "Array";
  Array() = default;
  explicit Array(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  explicit Array(std::vector<Any> Elems)
      : ObjectRef(makeRecycledObject<ArrayObj>(std::move(Elems))) {}
  /// An array of copies of these values (no allocation for a few).
  explicit Array(std::span<const AnyView> Elems)
      : ObjectRef(Elems.size() <= ArrayObj::kInlineElems
                      ? makeRecycledObject<ArrayObj>(Elems)
                      : makeRecycledObject<ArrayObj>(
                            std::vector<Any>(Elems.begin(), Elems.end()))) {}

  const ArrayObj *get() const noexcept {
    return static_cast<const ArrayObj *>(ObjectRef::get());
  }
  std::span<const Any> elements() const noexcept {
    return defined() ? get()->elements() : std::span<const Any>();
  }
  size_t size() const noexcept { return elements().size(); }
  bool empty() const noexcept { return elements().empty(); }
  const Any &operator[](size_t I) const noexcept { return elements()[I]; }
  auto begin() const noexcept { return elements().begin(); }
  auto end() const noexcept { return elements().end(); }
};

template <> struct TypeTraits<Array> : ObjectRefTypeTraits<Array> {};

} // namespace vmjit

#endif // VMJIT_RUNTIME_ARRAY_H
