//===- tensor.cpp - Tensor allocation and DLPack exchange ------------------===//

#include "vmjit/runtime/tensor.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/object_pool.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor_view_cache.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>

namespace vmjit {

TensorObj::TensorObj(std::span<const int64_t> Shape, DLDataType DType,
                     DLDevice Dev)
    : Object(kTypeIndex, deleter) {
  int64_t *Dims = InlineShape;
  if (Shape.size() > kInlineDims) {
    ShapeStorage.resize(Shape.size());
    Dims = ShapeStorage.data();
  }
  std::copy(Shape.begin(), Shape.end(), Dims);
  DL.data = nullptr;
  DL.device = Dev;
  DL.ndim = static_cast<int>(Shape.size());
  DL.dtype = DType;
  DL.shape = Dims;
  DL.strides = nullptr;
  DL.byte_offset = 0;
}

TensorObj::~TensorObj() {
  if (OwnedBlockBytes)
    detail::giveRecycledBlock(OwnedData, OwnedBlockBytes);
  else if (OwnedData)
    std::free(OwnedData);
  if (Managed && Managed->deleter)
    Managed->deleter(Managed);
  if (ManagedVersioned && ManagedVersioned->deleter)
    ManagedVersioned->deleter(ManagedVersioned);
}

void TensorObj::deleter(void *Self, int Flags) noexcept {
  auto *T = static_cast<TensorObj *>(Self);
  // Only a view nothing refers to, not even weakly, may be parked: a
  // revived one must not be reachable from its previous life.
  if (T->ParkIn && Flags == kVMJITObjectDeleterFlagBoth && T->ParkIn->park(T))
    return;
  recycledObjectDeleter<TensorObj>(Self, Flags);
}

namespace {

/// Bytes a compact tensor of this shape and type needs (sub-byte elements
/// packed, as tensorDataBytes says); throws ValueError
/// on a negative dimension or an overflowing size.
size_t checkedByteSize(std::span<const int64_t> Shape, DLDataType DType) {
  for (int64_t D : Shape)
    if (D < 0)
      throwError("ValueError",
                 fmt::format("tensor shape {} has a negative dimension",
                             shapeString(Shape)));
  const std::optional<uint64_t> N = tensorElementCount(Shape, DType);
  if (!N)
    throwError("ValueError",
               fmt::format("tensor shape {} is too large", shapeString(Shape)));
  return static_cast<size_t>(tensorDataBytes(*N, DType));
}

void checkCpu(DLDevice Dev) {
  if (Dev.device_type != kDLCPU)
    throwError("ValueError",
               fmt::format("cannot allocate a tensor on device type {}: only "
                           "the CPU is supported",
                           static_cast<int>(Dev.device_type)));
}

} // namespace

Tensor Tensor::empty(std::span<const int64_t> Shape, DLDataType DType,
                     DLDevice Dev) {
  checkCpu(Dev);
  size_t Bytes = checkedByteSize(Shape, DType);
  // aligned_alloc wants a multiple of the alignment; never allocate zero
  // bytes so that data() is always a valid pointer.
  size_t Rounded = (Bytes + kTensorAlignment - 1) / kTensorAlignment *
                   kTensorAlignment;
  if (Rounded == 0)
    Rounded = kTensorAlignment;
  auto Obj = makeRecycledObject<TensorObj>(Shape, DType, Dev);
  static_assert(kRecycledBlockAlignment % kTensorAlignment == 0);
  if (Rounded <= kMaxRecycledObjectSize) {
    // Small data (a shape heap, a scalar) comes from the pools as well.
    Obj->OwnedData = detail::takeRecycledBlock(Rounded);
    Obj->OwnedBlockBytes = Rounded;
  } else {
    Obj->OwnedData = std::aligned_alloc(kTensorAlignment, Rounded);
    if (!Obj->OwnedData)
      throwError("MemoryError",
                 fmt::format("cannot allocate {} bytes for a tensor of shape {}",
                             Bytes, shapeString(Shape)));
  }
  Obj->DL.data = Obj->OwnedData;
  return Tensor(ObjectPtr<Object>(std::move(Obj)));
}

Tensor Tensor::view(ObjectRef Owner, void *Data,
                    std::span<const int64_t> Shape, DLDataType DType,
                    DLDevice Dev) {
  checkedByteSize(Shape, DType);
  return viewChecked(std::move(Owner), Data, Shape, DType, Dev);
}

Tensor Tensor::viewChecked(ObjectRef Owner, void *Data,
                           std::span<const int64_t> Shape, DLDataType DType,
                           DLDevice Dev) {
  auto Obj = makeRecycledObject<TensorObj>(Shape, DType, Dev);
  Obj->DL.data = Data;
  Obj->Owner = std::move(Owner);
  return Tensor(ObjectPtr<Object>(std::move(Obj)));
}

namespace {
template <typename ManagedT>
ObjectPtr<TensorObj> importDL(ManagedT *Managed) {
  if (!Managed)
    throwError("ValueError", "cannot import a null DLPack tensor");
  const DLTensor &Src = Managed->dl_tensor;
  if (Src.ndim < 0 || (Src.ndim > 0 && !Src.shape))
    throwError("ValueError", "DLPack tensor has an invalid shape");
  std::span<const int64_t> Shape(Src.shape, static_cast<size_t>(Src.ndim));
  auto Obj = makeRecycledObject<TensorObj>(Shape, Src.dtype, Src.device);
  Obj->DL.data = Src.data;
  Obj->DL.byte_offset = Src.byte_offset;
  return Obj;
}
} // namespace

Tensor Tensor::fromDLPack(DLManagedTensor *Managed) {
  auto Obj = importDL(Managed);
  const DLTensor &Src = Managed->dl_tensor;
  if (Src.strides) {
    Obj->StrideStorage.assign(Src.strides, Src.strides + Src.ndim);
    Obj->DL.strides = Obj->StrideStorage.data();
  }
  // Only now, when nothing can throw any more, does the tensor own it.
  Obj->Managed = Managed;
  return Tensor(ObjectPtr<Object>(std::move(Obj)));
}

Tensor Tensor::fromDLPack(DLManagedTensorVersioned *Managed) {
  auto Obj = importDL(Managed);
  if (Managed->version.major > DLPACK_MAJOR_VERSION)
    throwError("ValueError",
               fmt::format("DLPack tensor has version {}.{}; this runtime "
                           "understands major version {}",
                           Managed->version.major, Managed->version.minor,
                           DLPACK_MAJOR_VERSION));
  const DLTensor &Src = Managed->dl_tensor;
  if (Src.strides) {
    Obj->StrideStorage.assign(Src.strides, Src.strides + Src.ndim);
    Obj->DL.strides = Obj->StrideStorage.data();
  }
  Obj->ManagedVersioned = Managed;
  return Tensor(ObjectPtr<Object>(std::move(Obj)));
}

namespace {

/// A DLPack managed tensor (either version) of `Obj`'s view, holding a
/// reference to it that its deleter drops.
template <typename Managed> Managed *newManagedTensor(const TensorObj *Obj) {
  auto *M = new Managed;
  M->dl_tensor = Obj->DL;
  TensorObj *Self = const_cast<TensorObj *>(Obj);
  Self->incRef();
  M->manager_ctx = Self;
  M->deleter = [](Managed *S) {
    static_cast<TensorObj *>(S->manager_ctx)->decRef();
    delete S;
  };
  return M;
}

} // namespace

DLManagedTensor *Tensor::toDLPack() const {
  return newManagedTensor<DLManagedTensor>(get());
}

DLManagedTensorVersioned *Tensor::toDLPackVersioned() const {
  auto *M = newManagedTensor<DLManagedTensorVersioned>(get());
  M->version.major = DLPACK_MAJOR_VERSION;
  M->version.minor = DLPACK_MINOR_VERSION;
  M->flags = 0;
  return M;
}

int64_t Tensor::numel() const noexcept {
  int64_t N = 1;
  for (int64_t D : shape())
    N *= D;
  return N;
}

bool Tensor::isContiguous() const noexcept {
  const DLTensor *T = dl();
  if (!T->strides)
    return true;
  int64_t Expected = 1;
  for (int I = T->ndim - 1; I >= 0; --I) {
    if (T->shape[I] != 1 && T->strides[I] != Expected)
      return false;
    Expected *= T->shape[I];
  }
  return true;
}

} // namespace vmjit
