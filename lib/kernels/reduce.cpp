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
#include "vmjit/runtime/dtype_traits.h"

#include <type_traits>

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

/// What integers of type T accumulate in: int64 or uint64.
template <typename T>
using WideInt = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;

template <typename T, typename Acc> Tensor sumAs(const DLTensor *X) {
  Tensor Result = Tensor::empty(std::span<const int64_t>(), X->dtype);
  *Result.data<T>() = T(sumOf<T, Acc>(dataOf<const T>(X), numelOf(X)));
  return Result;
}

Tensor sum(DLTensor *X) {
  checkTensor(kTensorSum, 1, X);
  return visitDType(X->dtype, [&](auto Tag) -> Tensor {
    using T = typename decltype(Tag)::Type;
    if constexpr (std::is_floating_point_v<T>)
      return sumAs<T, double>(X);
    else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      return sumAs<T, WideInt<T>>(X);
    else
      unsupportedDType(kTensorSum, X->dtype,
                       "float32, float64 or an integer dtype");
  });
}

} // namespace

void registerReduceFunctions(Registry &R) { addEntry<kTensorSum, &sum>(R); }

} // namespace vmjit::kernels
