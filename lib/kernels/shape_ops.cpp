//===- shape_ops.cpp - tensor.reshape and tensor.transpose ----------------===//
//
// tensor.reshape(x, shape) is zero-copy: a view over x's memory that keeps x
// alive; the element count must match and one dimension may be -1
// (inferred). tensor.transpose(x) copies a 2-D tensor of any dtype into a
// new [n, m] tensor.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <algorithm>

namespace vmjit::kernels {
namespace {

using namespace detail;

constexpr char kTensorReshape[] = "tensor.reshape";
constexpr char kTensorTranspose[] = "tensor.transpose";

/// Highest rank of a reshape target (built on the stack).
constexpr size_t kMaxReshapeRank = 64;

Tensor reshape(Tensor X, AnyView ShapeArg) {
  const char *Name = kTensorReshape;
  if (!X.defined())
    vmjit::detail::throwArgTypeError(Name, 1, "Tensor", AnyView());
  const DLTensor *DX = X.dl();
  checkTensor(Name, 1, DX);
  int64_t Scratch;
  std::span<const int64_t> Target = shapeArg(Name, 2, ShapeArg, Scratch);
  if (Target.size() > kMaxReshapeRank)
    valueError("{}: target shape {} has more than {} dimensions", Name,
               shapeString(Target), kMaxReshapeRank);
  int64_t Dims[kMaxReshapeRank];
  int Inferred = -1;
  int64_t Known = 1;
  for (size_t I = 0; I < Target.size(); ++I) {
    int64_t D = Target[I];
    Dims[I] = D;
    if (D == -1) {
      if (Inferred >= 0)
        valueError("{}: target shape {} has more than one -1 dimension", Name,
                   shapeString(Target));
      Inferred = int(I);
    } else if (D < 0) {
      valueError("{}: target shape {} has a negative dimension", Name,
                 shapeString(Target));
    } else {
      Known *= D;
    }
  }
  const int64_t N = numelOf(DX);
  if (Inferred >= 0) {
    if (Known == 0 || N % Known != 0)
      valueError("{}: cannot reshape a tensor of shape {} ({} elements) into "
                 "{}",
                 Name, shapeOf(DX), N, shapeString(Target));
    Dims[Inferred] = N / Known;
    Known = N;
  }
  std::span<const int64_t> NewShape(Dims, Target.size());
  if (Known != N)
    valueError("{}: cannot reshape a tensor of shape {} ({} elements) into {}",
               Name, shapeOf(DX), N, shapeString(Target));
  return Tensor::view(X, dataOf(DX), NewShape, DX->dtype, DX->device);
}

template <typename E>
void transposeCopy(const E *Src, E *Dst, int64_t Rows, int64_t Cols) {
  // Tiles keep both the reads and the writes within a few cache lines.
  constexpr int64_t Tile = 32;
  for (int64_t R0 = 0; R0 < Rows; R0 += Tile)
    for (int64_t C0 = 0; C0 < Cols; C0 += Tile) {
      const int64_t R1 = std::min(Rows, R0 + Tile);
      const int64_t C1 = std::min(Cols, C0 + Tile);
      for (int64_t R = R0; R < R1; ++R)
        for (int64_t C = C0; C < C1; ++C)
          Dst[C * Rows + R] = Src[R * Cols + C];
    }
}

Tensor transpose(DLTensor *X) {
  const char *Name = kTensorTranspose;
  checkTensor(Name, 1, X);
  if (X->ndim != 2)
    valueError("{}: shape {} is not 2-D", Name, shapeOf(X));
  const int64_t Rows = X->shape[0], Cols = X->shape[1];
  const int64_t Shape[2] = {Cols, Rows};
  Tensor Result = Tensor::empty(std::span<const int64_t>(Shape, 2), X->dtype);
  const void *Src = dataOf(X);
  void *Dst = Result.data();
  switch (dtypeBytes(X->dtype)) {
  case 1:
    transposeCopy(static_cast<const uint8_t *>(Src),
                  static_cast<uint8_t *>(Dst), Rows, Cols);
    break;
  case 2:
    transposeCopy(static_cast<const uint16_t *>(Src),
                  static_cast<uint16_t *>(Dst), Rows, Cols);
    break;
  case 4:
    transposeCopy(static_cast<const uint32_t *>(Src),
                  static_cast<uint32_t *>(Dst), Rows, Cols);
    break;
  case 8:
    transposeCopy(static_cast<const uint64_t *>(Src),
                  static_cast<uint64_t *>(Dst), Rows, Cols);
    break;
  default:
    unsupportedDType(Name, X->dtype, "a dtype of 1, 2, 4 or 8 bytes");
  }
  return Result;
}

} // namespace

void registerShapeFunctions(Registry &R) {
  addEntry<kTensorReshape, &reshape>(R);
  addEntry<kTensorTranspose, &transpose>(R);
}

} // namespace vmjit::kernels
