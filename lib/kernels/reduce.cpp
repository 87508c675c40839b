//===- reduce.cpp - tensor.sum --------------------------------------------===//
//
// tensor.sum(x): the sum of every element as a rank-0 tensor of x's dtype.
// Floats accumulate in double (eight partial sums, combined pairwise) and
// are rounded to the dtype at the end; signed integers accumulate in int64
// and unsigned ones in uint64, wrapping, then convert (modulo 2^bits).
// bool and the 16-bit float types are not supported.
//
//===----------------------------------------------------------------------===//

#include "common.h"

namespace vmjit::kernels {
namespace {

using namespace detail;

constexpr char kTensorSum[] = "tensor.sum";

template <typename T, typename Acc> Acc sumOf(const T *X, int64_t N) {
  // Eight independent partial sums: vectorizable for integers, and a
  // better-conditioned order than one running float sum.
  Acc Part[8] = {};
  int64_t I = 0;
  for (; I + 8 <= N; I += 8)
    for (int J = 0; J < 8; ++J) {
      if constexpr (std::is_floating_point_v<Acc>)
        Part[J] += Acc(X[I + J]);
      else
        Part[J] = Acc(uint64_t(Part[J]) + uint64_t(Acc(X[I + J])));
    }
  for (; I < N; ++I) {
    if constexpr (std::is_floating_point_v<Acc>)
      Part[0] += Acc(X[I]);
    else
      Part[0] = Acc(uint64_t(Part[0]) + uint64_t(Acc(X[I])));
  }
  for (int Width = 4; Width >= 1; Width /= 2)
    for (int J = 0; J < Width; ++J) {
      if constexpr (std::is_floating_point_v<Acc>)
        Part[J] += Part[J + Width];
      else
        Part[J] = Acc(uint64_t(Part[J]) + uint64_t(Part[J + Width]));
    }
  return Part[0];
}

template <typename T, typename Acc> Tensor sumAs(const DLTensor *X) {
  Tensor Result = Tensor::empty(std::span<const int64_t>(), X->dtype);
  *Result.data<T>() = T(sumOf<T, Acc>(dataOf<const T>(X), numelOf(X)));
  return Result;
}

Tensor sum(DLTensor *X) {
  checkTensor(kTensorSum, 1, X);
  const DLDataType D = X->dtype;
  switch (D.code) {
  case kDLFloat:
    if (D.bits == 32)
      return sumAs<float, double>(X);
    if (D.bits == 64)
      return sumAs<double, double>(X);
    break;
  case kDLInt:
    switch (D.bits) {
    case 8:
      return sumAs<int8_t, int64_t>(X);
    case 16:
      return sumAs<int16_t, int64_t>(X);
    case 32:
      return sumAs<int32_t, int64_t>(X);
    case 64:
      return sumAs<int64_t, int64_t>(X);
    }
    break;
  case kDLUInt:
    switch (D.bits) {
    case 8:
      return sumAs<uint8_t, uint64_t>(X);
    case 16:
      return sumAs<uint16_t, uint64_t>(X);
    case 32:
      return sumAs<uint32_t, uint64_t>(X);
    case 64:
      return sumAs<uint64_t, uint64_t>(X);
    }
    break;
  }
  unsupportedDType(kTensorSum, D, "float32, float64 or an integer dtype");
}

} // namespace

void registerReduceFunctions(Registry &R) { addEntry<kTensorSum, &sum>(R); }

} // namespace vmjit::kernels
