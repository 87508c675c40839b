//===- TensorTest.cpp - Tensor allocation, views and DLPack exchange ------===//

#include "vmjit/runtime/tensor.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace vmjit;

namespace {

/// Expects `Body` to throw an Error of `Kind`.
template <typename F> void expectError(const char *Kind, F Body) {
  try {
    Body();
    ADD_FAILURE() << "expected a " << Kind;
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), Kind) << E.message();
  }
}

std::vector<int64_t> shapeOf(const Tensor &T) {
  return {T.shape().begin(), T.shape().end()};
}

TEST(TensorTest, EmptyIsAlignedAndCompact) {
  Tensor T = Tensor::empty({2, 3, 5}, dtype::Float32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(T.data()) % kTensorAlignment, 0u);
  EXPECT_EQ(shapeOf(T), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(T.ndim(), 3);
  EXPECT_EQ(T.numel(), 30);
  EXPECT_EQ(T.nbytes(), 120u);
  EXPECT_TRUE(T.dtype() == dtype::Float32);
  EXPECT_EQ(T.device().device_type, kDLCPU);
  EXPECT_EQ(T.dl()->strides, nullptr);
  EXPECT_TRUE(T.isContiguous());
  // The memory is usable.
  float *P = T.data<float>();
  for (int I = 0; I < 30; ++I)
    P[I] = float(I);
  EXPECT_EQ(P[29], 29.0f);
}

TEST(TensorTest, EmptyCopiesTheShape) {
  std::vector<int64_t> Dims = {4, 2};
  Tensor T = Tensor::empty(Dims, dtype::Int64);
  Dims[0] = 100;
  EXPECT_EQ(shapeOf(T), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(T.nbytes(), 64u);
}

TEST(TensorTest, ScalarAndZeroSize) {
  Tensor S = Tensor::empty({}, dtype::Float64);
  EXPECT_EQ(S.ndim(), 0);
  EXPECT_EQ(S.numel(), 1);
  EXPECT_EQ(S.nbytes(), 8u);
  Tensor Z = Tensor::empty({3, 0}, dtype::Float32);
  EXPECT_EQ(Z.numel(), 0);
  EXPECT_EQ(Z.nbytes(), 0u);
  EXPECT_NE(Z.data(), nullptr);
}

TEST(TensorTest, SubByteElementsArePacked) {
  // As DLPack and TVM lay them out: int4 [3] in 2 bytes, uint1 [2, 5] in 2.
  EXPECT_EQ(Tensor::empty({3}, dtype::Int4).nbytes(), 2u);
  EXPECT_EQ(Tensor::empty({2, 5}, DLDataType{kDLUInt, 1, 1}).nbytes(), 2u);
  EXPECT_EQ(Tensor::empty({4}, dtype::Float8E4M3FN).nbytes(), 4u);
  EXPECT_EQ(Tensor::empty({3}, DLDataType{kDLFloat, 32, 2}).nbytes(), 24u);
  EXPECT_THROW(Tensor::empty({int64_t(1) << 62, 4}, dtype::Int4), Error);
}

TEST(TensorTest, BadShapesAndDevices) {
  expectError("ValueError", [] { Tensor::empty({2, -1}, dtype::Float32); });
  expectError("ValueError", [] {
    Tensor::empty({int64_t(1) << 40, int64_t(1) << 40}, dtype::Float32);
  });
  std::vector<int64_t> Dims = {2};
  expectError("ValueError", [&] {
    Tensor::empty(Dims, dtype::Float32, DLDevice{kDLCUDA, 0});
  });
}

TEST(TensorTest, ExportImportIsZeroCopy) {
  Tensor T = Tensor::empty({4}, dtype::Int32);
  DLManagedTensor *M = T.toDLPack();
  EXPECT_EQ(M->dl_tensor.data, T.data());
  EXPECT_EQ(M->dl_tensor.ndim, 1);
  EXPECT_EQ(M->dl_tensor.shape[0], 4);
  EXPECT_EQ(T.useCount(), 2u);
  Tensor Back = Tensor::fromDLPack(M);
  EXPECT_EQ(Back.data(), T.data());
  EXPECT_EQ(shapeOf(Back), shapeOf(T));
  EXPECT_FALSE(Back.same(T));
  Back = Tensor();
  EXPECT_EQ(T.useCount(), 1u); // the import released the export
}

TEST(TensorTest, ExportKeepsTensorAlive) {
  Tensor T = Tensor::empty({8}, dtype::Float32);
  T.data<float>()[7] = 3.5f;
  const TensorObj *Obj = T.get();
  DLManagedTensor *M = T.toDLPack();
  T = Tensor();
  // The exported tensor still owns the object and its memory.
  EXPECT_EQ(Obj->useCount(), 1u);
  EXPECT_EQ(static_cast<float *>(M->dl_tensor.data)[7], 3.5f);
  M->deleter(M); // ASan reports a leak if this does not free everything
}

TEST(TensorTest, ExportVersioned) {
  Tensor T = Tensor::empty({2, 2}, dtype::Float64);
  DLManagedTensorVersioned *M = T.toDLPackVersioned();
  EXPECT_EQ(M->version.major, 1u);
  EXPECT_EQ(M->dl_tensor.data, T.data());
  EXPECT_EQ(T.useCount(), 2u);
  M->deleter(M);
  EXPECT_EQ(T.useCount(), 1u);
  Tensor Back = Tensor::fromDLPack(T.toDLPackVersioned());
  EXPECT_EQ(Back.data(), T.data());
  EXPECT_EQ(T.useCount(), 2u);
}

/// A DLPack tensor made by a "foreign" framework, with a counting deleter.
template <typename ManagedT> struct Foreign {
  static inline int Deleted = 0;
  float Data[6] = {1, 2, 3, 4, 5, 6};
  int64_t Dims[2] = {2, 3};
  int64_t Strides[2] = {3, 1};
  ManagedT Managed{};

  static ManagedT *make(bool WithStrides) {
    auto *F = new Foreign;
    F->Managed.dl_tensor = {F->Data, cpuDevice(), 2, dtype::Float32,
                            F->Dims, nullptr,     0};
    if (WithStrides)
      F->Managed.dl_tensor.strides = F->Strides;
    F->Managed.manager_ctx = F;
    F->Managed.deleter = [](ManagedT *Self) {
      ++Deleted;
      delete static_cast<Foreign *>(Self->manager_ctx);
    };
    return &F->Managed;
  }
};

TEST(TensorTest, ImportCallsForeignDeleterOnce) {
  using F = Foreign<DLManagedTensor>;
  F::Deleted = 0;
  DLManagedTensor *M = F::make(/*WithStrides=*/true);
  void *Data = M->dl_tensor.data;
  Tensor T = Tensor::fromDLPack(M);
  EXPECT_EQ(T.data(), Data);
  EXPECT_EQ(shapeOf(T), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(T.isContiguous());
  EXPECT_EQ(T.data<float>()[5], 6.0f);
  Tensor Copy = T;
  T = Tensor();
  EXPECT_EQ(F::Deleted, 0);
  Copy = Tensor();
  EXPECT_EQ(F::Deleted, 1);
}

TEST(TensorTest, ImportVersionedCallsForeignDeleterOnce) {
  using F = Foreign<DLManagedTensorVersioned>;
  F::Deleted = 0;
  DLManagedTensorVersioned *M = F::make(/*WithStrides=*/false);
  M->version = {1, 0};
  Tensor T = Tensor::fromDLPack(M);
  EXPECT_EQ(T.numel(), 6);
  EXPECT_EQ(T.data<float>()[0], 1.0f);
  Tensor Copy = T;
  T = Tensor();
  EXPECT_EQ(F::Deleted, 0);
  Copy = Tensor();
  EXPECT_EQ(F::Deleted, 1);
}

TEST(TensorTest, ImportRejectsNewerMajorVersion) {
  using F = Foreign<DLManagedTensorVersioned>;
  F::Deleted = 0;
  DLManagedTensorVersioned *M = F::make(/*WithStrides=*/false);
  M->version = {DLPACK_MAJOR_VERSION + 1, 0};
  expectError("ValueError", [&] { Tensor::fromDLPack(M); });
  // On failure the caller still owns the tensor.
  EXPECT_EQ(F::Deleted, 0);
  M->deleter(M);
  EXPECT_EQ(F::Deleted, 1);
}

TEST(TensorTest, ViewKeepsOwnerAlive) {
  Tensor Base = Tensor::empty({10}, dtype::Int32);
  int32_t *P = Base.data<int32_t>();
  for (int I = 0; I < 10; ++I)
    P[I] = I * 10;
  std::vector<int64_t> Dims = {2, 2};
  Tensor V = Tensor::view(Base, P + 4, Dims, dtype::Int32);
  EXPECT_EQ(Base.useCount(), 2u);
  Base = Tensor();
  // ASan would flag this read if the owner's memory had been freed.
  EXPECT_EQ(V.data<int32_t>()[3], 70);
  EXPECT_EQ(V.numel(), 4);
}

TEST(TensorTest, IsContiguousWithStrides) {
  using F = Foreign<DLManagedTensor>;
  DLManagedTensor *M = F::make(/*WithStrides=*/true);
  // Transposed strides: not row-major.
  M->dl_tensor.strides[0] = 1;
  M->dl_tensor.strides[1] = 2;
  Tensor T = Tensor::fromDLPack(M);
  EXPECT_FALSE(T.isContiguous());
  // Strides of unit dimensions do not matter.
  DLManagedTensor *N = F::make(/*WithStrides=*/true);
  N->dl_tensor.shape[0] = 1;
  N->dl_tensor.strides[0] = 99;
  N->dl_tensor.shape[1] = 6;
  N->dl_tensor.strides[1] = 1;
  EXPECT_TRUE(Tensor::fromDLPack(N).isContiguous());
}

TEST(TensorTest, ByteOffsetIsHonoured) {
  using F = Foreign<DLManagedTensor>;
  DLManagedTensor *M = F::make(/*WithStrides=*/false);
  M->dl_tensor.byte_offset = sizeof(float);
  M->dl_tensor.shape[0] = 1;
  M->dl_tensor.shape[1] = 5;
  Tensor T = Tensor::fromDLPack(M);
  EXPECT_EQ(T.data<float>()[0], 2.0f);
}

} // namespace
