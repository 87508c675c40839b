//===- matmul.cpp - tensor.matmul and kernel.matmul (OpenBLAS) ------------===//
//
// [..., m, k] x [k, n] -> [..., m, n], and [k] x [k, n] -> [n]. Since b is
// 2-D, the leading dimensions of a fold into m and the whole product is one
// GEMM (cblas_sgemm for float32, cblas_dgemm for float64), also for one
// row: OpenBLAS's small-matrix GEMM path beats its GEMV there on current
// x86 kernels. OpenBLAS is loaded at the first product and runs on one
// thread unless OPENBLAS_NUM_THREADS is set (blas.h).
//
//===----------------------------------------------------------------------===//

#include "blas.h"
#include "common.h"

#include <climits>
#include <cstring>

namespace vmjit::kernels {

namespace {

using namespace detail;

/// Highest rank of a (the result shape is built on the stack).
constexpr int kMaxMatmulRank = 32;

[[noreturn]] void shapeMismatch(const char *Name, const DLTensor *A,
                                const DLTensor *B) {
  valueError("{}: shapes {} and {} do not match ([..., m, k] x [k, n])", Name,
             shapeOf(A), shapeOf(B));
}

void gemm(const char *Name, float *C, const float *A, const float *B, blasint M,
          blasint N, blasint K) {
  blasFunctions(Name).Sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K,
                            1.0f, A, K, B, N, 0.0f, C, N);
}

void gemm(const char *Name, double *C, const double *A, const double *B,
          blasint M, blasint N, blasint K) {
  blasFunctions(Name).Dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K,
                            1.0, A, K, B, N, 0.0, C, N);
}

Tensor matmul(const char *Name, const DLTensor *A, const DLTensor *B,
              const DLTensor *Out) {
  checkTensor(Name, 1, A);
  checkTensor(Name, 2, B);
  if (A->ndim < 1 || B->ndim != 2)
    shapeMismatch(Name, A, B);
  const int64_t K = A->shape[A->ndim - 1];
  if (B->shape[0] != K)
    shapeMismatch(Name, A, B);
  checkSameDType(Name, A, B);
  const int64_t N = B->shape[1];
  // Result shape: a's shape with its last dimension replaced by n.
  int64_t ShapeBuf[kMaxMatmulRank];
  if (A->ndim > kMaxMatmulRank)
    valueError("{}: shape {} has more than {} dimensions", Name, shapeOf(A),
               kMaxMatmulRank);
  std::memcpy(ShapeBuf, A->shape, sizeof(int64_t) * size_t(A->ndim));
  ShapeBuf[A->ndim - 1] = N;
  std::span<const int64_t> Shape(ShapeBuf, size_t(A->ndim));
  // Rows of the single GEMM: every leading dimension of a folds into m.
  int64_t M = 1;
  for (int I = 0; I + 1 < A->ndim; ++I)
    M *= A->shape[I];

  Tensor Result;
  auto Run = [&](auto Tag) {
    using T = decltype(Tag);
    if (Out) {
      checkOut(Name, 3, Out, Shape, A->dtype);
      checkAlias(Name, 1, A, Out, /*AllowExact=*/false);
      checkAlias(Name, 2, B, Out, /*AllowExact=*/false);
    } else {
      Result = Tensor::empty(Shape, A->dtype);
      Out = Result.dl();
    }
    T *C = dataOf<T>(Out);
    if (M == 0 || N == 0)
      return;
    if (K == 0) {
      std::memset(C, 0, sizeof(T) * size_t(M * N));
      return;
    }
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
      valueError("{}: shapes {} and {} are too large for BLAS", Name,
                 shapeOf(A), shapeOf(B));
    gemm(Name, C, dataOf<const T>(A), dataOf<const T>(B), blasint(M),
         blasint(N), blasint(K));
  };
  dispatchFloat(Name, A->dtype, Run);
  return Result;
}

constexpr char kTensorMatmul[] = "tensor.matmul";
constexpr char kKernelMatmul[] = "kernel.matmul";

Tensor allocMatmul(DLTensor *A, DLTensor *B) {
  return matmul(kTensorMatmul, A, B, nullptr);
}
void dpsMatmul(DLTensor *A, DLTensor *B, DLTensor *Out) {
  matmul(kKernelMatmul, A, B, Out);
}

} // namespace

void registerMatmulFunctions(Registry &R) {
  addEntry<kTensorMatmul, &allocMatmul>(R);
  addEntry<kKernelMatmul, &dpsMatmul>(R);
}

} // namespace vmjit::kernels
