//===- vmjit/runtime/shape.h - Shape tuples ----------------------*- C++ -*-===//
//
// A Shape (type 69) is an immutable tuple of int64 dimensions. Its payload
// after the header is {const int64_t* data, size_t size}, as in tvm-ffi, so
// JIT code can read dimensions without a call.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_SHAPE_H
#define VMJIT_RUNTIME_SHAPE_H

#include "vmjit/runtime/any.h"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace vmjit {

class ShapeObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITShape;
  explicit ShapeObj(std::vector<int64_t> Dims)
      : Object(kTypeIndex, objectDeleter<ShapeObj>), Storage(std::move(Dims)) {
    Cell.data = Storage.data();
    Cell.size = Storage.size();
  }
  std::span<const int64_t> dims() const noexcept {
    return {Cell.data, Cell.size};
  }

private:
  VMJITShapeCell Cell;
  std::vector<int64_t> Storage;
};

/// A reference to a shape tuple.
class Shape : public ObjectRef {
public:
  using ContainerType = ShapeObj;
  static constexpr const char *kTypeName = "Shape";
  Shape() = default;
  explicit Shape(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  explicit Shape(std::vector<int64_t> Dims)
      : ObjectRef(makeObject<ShapeObj>(std::move(Dims))) {}
  Shape(std::initializer_list<int64_t> Dims)
      : Shape(std::vector<int64_t>(Dims)) {}

  const ShapeObj *get() const noexcept {
    return static_cast<const ShapeObj *>(ObjectRef::get());
  }
  std::span<const int64_t> dims() const noexcept {
    return defined() ? get()->dims() : std::span<const int64_t>();
  }
  size_t size() const noexcept { return dims().size(); }
  int64_t operator[](size_t I) const noexcept { return dims()[I]; }
  auto begin() const noexcept { return dims().begin(); }
  auto end() const noexcept { return dims().end(); }
  /// Product of the dimensions (1 for rank 0).
  int64_t numel() const noexcept {
    int64_t N = 1;
    for (int64_t D : dims())
      N *= D;
    return N;
  }
};

template <> struct TypeTraits<Shape> : ObjectRefTypeTraits<Shape> {};

/// "[2, 3]" for messages.
VMJIT_DLL std::string shapeString(std::span<const int64_t> Dims);

} // namespace vmjit

#endif // VMJIT_RUNTIME_SHAPE_H
