//===- vmjit/runtime/tensor.h - DLPack tensors -------------------*- C++ -*-===//
//
// A Tensor (type 70) is a DLTensor inside an object: the DLTensor sits right
// after the header, so JIT code and C kernels take `(DLTensor*)(obj + 24)`.
// Memory comes from one of three places: a 64-byte aligned CPU allocation
// owned by the tensor; a DLManagedTensor imported without copying (its
// deleter runs when the tensor dies); or memory owned by another object (a
// storage block, a memory-mapped executable) that the tensor keeps alive.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_TENSOR_H
#define VMJIT_RUNTIME_TENSOR_H

#include "vmjit/runtime/any.h"
#include "vmjit/runtime/data_type.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vmjit {

class TensorViewCache;

/// Alignment of tensor memory allocated by vmjit.
inline constexpr size_t kTensorAlignment = 64;

inline constexpr DLDevice cpuDevice(int Id = 0) {
  return DLDevice{kDLCPU, Id};
}

/// The tensor object. Made only through Tensor's factories (its memory is
/// recycled: makeRecycledObject, never makeObject). A shape of up to
/// kInlineDims dimensions lives inside the object, so a tensor is one
/// block of memory, and a dead one's block is reused by the next.
class TensorObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITTensor;
  static constexpr size_t kInlineDims = 6;

  TensorObj(std::span<const int64_t> Shape, DLDataType DType, DLDevice Dev);
  ~TensorObj();

  DLTensor DL;
  /// The VM one of whose allocation call sites holds a reference to this
  /// tensor (vm/alloc_sites.h), or null. Only that VM's thread writes it;
  /// any thread may read it. A register of that VM holding the site's
  /// tensor releases it without an atomic read-modify-write when the two
  /// are its only references (vm::releasedToSite).
  std::atomic<const void *> SiteOwner{nullptr};

private:
  friend class Tensor;
  friend class TensorViewCache;
  /// The header's deleter: a view made by a TensorViewCache parks there
  /// when it dies (if a slot is free); any other tensor is destroyed and
  /// its block recycled.
  static void deleter(void *Self, int Flags) noexcept;

  int64_t InlineShape[kInlineDims];
  std::vector<int64_t> ShapeStorage; ///< Only for more than kInlineDims.
  std::vector<int64_t> StrideStorage;
  /// Exactly one of these owns the memory (or none, for a zero-size tensor).
  /// OwnedData of at most kMaxRecycledObjectSize bytes is a recycled block
  /// of OwnedBlockBytes; a larger one (OwnedBlockBytes 0) is std::free'd.
  void *OwnedData = nullptr;
  size_t OwnedBlockBytes = 0;
  DLManagedTensor *Managed = nullptr;
  DLManagedTensorVersioned *ManagedVersioned = nullptr;
  ObjectRef Owner;
  /// The cache this view parks in when it dies (null: not a cached view).
  TensorViewCache *ParkIn = nullptr;
};

/// JIT code and C kernels take a tensor's DLTensor right after the header.
inline constexpr size_t kTensorDLTensorOffset = sizeof(VMJITObject);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(offsetof(TensorObj, DL) == kTensorDLTensorOffset);
/// Native code (the baseline tier's null_value stencil) reads SiteOwner
/// here.
inline constexpr size_t kTensorSiteOwnerOffset =
    kTensorDLTensorOffset + sizeof(DLTensor);
static_assert(offsetof(TensorObj, SiteOwner) == kTensorSiteOwnerOffset);
static_assert(sizeof(std::atomic<const void *>) == sizeof(void *));
#pragma GCC diagnostic pop

/// A reference to a tensor.
class Tensor : public ObjectRef {
public:
  using ContainerType = TensorObj;
  static constexpr const char *kTypeName = "Tensor";
  Tensor() = default;
  explicit Tensor(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}

  /// A new, uninitialized, compact row-major CPU tensor (64-byte aligned).
  /// Throws ValueError for a negative dimension or a non-CPU device.
  VMJIT_DLL static Tensor empty(std::span<const int64_t> Shape,
                                DLDataType DType,
                                DLDevice Dev = cpuDevice());
  static Tensor empty(std::initializer_list<int64_t> Shape, DLDataType DType) {
    return empty(std::span<const int64_t>(Shape.begin(), Shape.size()),
                 DType);
  }
  /// A compact tensor over memory that `Owner` keeps alive (no copy).
  VMJIT_DLL static Tensor view(ObjectRef Owner, void *Data,
                               std::span<const int64_t> Shape,
                               DLDataType DType, DLDevice Dev = cpuDevice());

  /// view() for a caller that has already checked that the shape is
  /// valid (no negative dimension, a size that fits) for this DType.
  VMJIT_DLL static Tensor viewChecked(ObjectRef Owner, void *Data,
                                      std::span<const int64_t> Shape,
                                      DLDataType DType,
                                      DLDevice Dev = cpuDevice());

  /// Takes ownership of a DLPack tensor without copying; its deleter is
  /// called when the last reference to the Tensor goes.
  VMJIT_DLL static Tensor fromDLPack(DLManagedTensor *Managed);
  VMJIT_DLL static Tensor fromDLPack(DLManagedTensorVersioned *Managed);
  /// Exports without copying: the returned tensor holds a reference to
  /// this one until its deleter is called.
  VMJIT_DLL DLManagedTensor *toDLPack() const;
  VMJIT_DLL DLManagedTensorVersioned *toDLPackVersioned() const;

  const TensorObj *get() const noexcept {
    return static_cast<const TensorObj *>(ObjectRef::get());
  }
  const DLTensor *dl() const noexcept { return &get()->DL; }
  DLTensor *dl() noexcept {
    return &const_cast<TensorObj *>(get())->DL;
  }
  int ndim() const noexcept { return dl()->ndim; }
  std::span<const int64_t> shape() const noexcept {
    return {dl()->shape, static_cast<size_t>(dl()->ndim)};
  }
  DLDataType dtype() const noexcept { return dl()->dtype; }
  DLDevice device() const noexcept { return dl()->device; }
  void *data() const noexcept {
    return static_cast<char *>(dl()->data) + dl()->byte_offset;
  }
  template <typename T> T *data() const noexcept {
    return static_cast<T *>(data());
  }
  VMJIT_DLL int64_t numel() const noexcept;
  /// Bytes of the data of a compact tensor: sub-byte elements (int4,
  /// float4_e2m1fn, ...) packed, as DLPack and TVM store them.
  size_t nbytes() const noexcept {
    return static_cast<size_t>(
        tensorDataBytes(static_cast<uint64_t>(numel()), dtype()));
  }
  /// True when the strides are null or those of a compact row-major layout.
  VMJIT_DLL bool isContiguous() const noexcept;
};

template <> struct TypeTraits<Tensor> : ObjectRefTypeTraits<Tensor> {};

/// A DLTensor pointer: a view is type 7; a Tensor object also converts.
template <> struct TypeTraits<DLTensor *> {
  static constexpr bool enabled = true;
  static std::string_view typeName() noexcept { return "Tensor"; }
  static void toView(DLTensor *T, VMJITAny *Out) noexcept {
    detail::setTypeIndex(*Out, kVMJITDLTensorPtr);
    Out->v_ptr = T;
  }
  static std::optional<DLTensor *> fromAny(const VMJITAny *V) noexcept {
    if (V->type_index == kVMJITTensor)
      return &reinterpret_cast<TensorObj *>(V->v_obj)->DL;
    if (V->type_index == kVMJITDLTensorPtr)
      return static_cast<DLTensor *>(V->v_ptr);
    return std::nullopt;
  }
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_TENSOR_H
