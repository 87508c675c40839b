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

#include <cstdint>
#include <span>
#include <vector>

namespace vmjit {

class ArrayObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITArray;
  explicit ArrayObj(std::vector<Any> Elems)
      : Object(kTypeIndex, objectDeleter<ArrayObj>), Storage(std::move(Elems)) {
    Data = Storage.data();
    Size = static_cast<int64_t>(Storage.size());
  }
  std::span<const Any> elements() const noexcept {
    return {Data, static_cast<size_t>(Size)};
  }

private:
  Any *Data;
  int64_t Size;
  std::vector<Any> Storage;
};

/// A reference to an immutable array of values.
class Array : public ObjectRef {
public:
  using ContainerType = ArrayObj;
  static constexpr const char *kTypeName = "Array";
  Array() = default;
  explicit Array(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  explicit Array(std::vector<Any> Elems)
      : ObjectRef(makeObject<ArrayObj>(std::move(Elems))) {}

  const ArrayObj *get() const noexcept {
    return static_cast<const ArrayObj *>(ObjectRef::get());
  }
  std::span<const Any> elements() const noexcept {
    return defined() ? get()->elements() : std::span<const Any>();
  }
  size_t size() const noexcept { return elements().size(); }
  const Any &operator[](size_t I) const noexcept { return elements()[I]; }
  auto begin() const noexcept { return elements().begin(); }
  auto end() const noexcept { return elements().end(); }
};

template <> struct TypeTraits<Array> : ObjectRefTypeTraits<Array> {};

} // namespace vmjit

#endif // VMJIT_RUNTIME_ARRAY_H
