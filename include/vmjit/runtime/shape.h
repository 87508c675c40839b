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
#include "vmjit/runtime/object_pool.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace vmjit {

/// The shape object. Made only through Shape's constructors (its memory is
/// recycled: makeRecycledObject, never makeObject); up to kInlineDims
/// dimensions live inside the object.
class ShapeObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITShape;
  static constexpr size_t kInlineDims = 6;
  explicit ShapeObj(std::vector<int64_t> Dims)
      : Object(kTypeIndex, recycledObjectDeleter<ShapeObj>),
        Storage(std::move(Dims)) {
    Cell.data = Storage.data();
    Cell.size = Storage.size();
  }
  /// At most kInlineDims dimensions, copied into the object.
  explicit ShapeObj(std::span<const int64_t> Dims)
      : Object(kTypeIndex, recycledObjectDeleter<ShapeObj>) {
    std::copy(Dims.begin(), Dims.end(), Inline);
    Cell.data = Inline;
    Cell.size = Dims.size();
  }
  std::span<const int64_t> dims() const noexcept {
    return {Cell.data, Cell.size};
  }
  /// Whether the dimensions live in the object (at most kInlineDims).
  bool inlineDims() const noexcept { return Cell.data == Inline; }
  /// Overwrites the dimensions, as many as it has, which live in the
  /// object. Only for the holder of every reference (a Shape is immutable
  /// to everyone who can see it): vm::AllocSites reuses a make_shape
  /// result no one holds any more.
  void reassignInline(std::span<const int64_t> Dims) noexcept {
    std::copy(Dims.begin(), Dims.end(), Inline);
  }

private:
  VMJITShapeCell Cell;
  int64_t Inline[kInlineDims];
  std::vector<int64_t> Storage; ///< Only for more than kInlineDims.
  friend struct ShapeObjLayout;
};

/// JIT code reads a shape's {data, size} cell right after the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct ShapeObjLayout {
  static constexpr size_t CellOffset = offsetof(ShapeObj, Cell);
  /// Tier 2 rewrites a make_shape site's shape here (jit/lowering.cpp).
  static constexpr size_t InlineOffset = offsetof(ShapeObj, Inline);
};
#pragma GCC diagnostic pop
static_assert(ShapeObjLayout::CellOffset == sizeof(VMJITObject));
static_assert(ShapeObjLayout::InlineOffset ==
              ShapeObjLayout::CellOffset + sizeof(VMJITShapeCell));
static_assert(offsetof(VMJITShapeCell, data) == 0 &&
              offsetof(VMJITShapeCell, size) == 8);

/// A reference to a shape tuple.
class Shape : public ObjectRef {
public:
  using ContainerType = ShapeObj;
  static constexpr const char *kTypeName = "Shape";
  Shape() = default;
  explicit Shape(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  explicit Shape(std::vector<int64_t> Dims)
      : ObjectRef(Dims.size() <= ShapeObj::kInlineDims
                      ? makeRecycledObject<ShapeObj>(
                            std::span<const int64_t>(Dims))
                      : makeRecycledObject<ShapeObj>(std::move(Dims))) {}
  /// A shape with these dimensions (copied; no allocation for a few).
  explicit Shape(std::span<const int64_t> Dims)
      : ObjectRef(Dims.size() <= ShapeObj::kInlineDims
                      ? makeRecycledObject<ShapeObj>(Dims)
                      : makeRecycledObject<ShapeObj>(
                            std::vector<int64_t>(Dims.begin(), Dims.end()))) {}
  Shape(std::initializer_list<int64_t> Dims)
      : Shape(std::span<const int64_t>(Dims.begin(), Dims.size())) {}

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
