//===- softmax.cpp - tensor.softmax and kernel.softmax --------------------===//
//
// Softmax along one axis (negative axes count from the end), with the
// maximum subtracted first so that large inputs do not overflow. The
// exponentials are computed in the tensor's type (float32 with a
// vectorizable Cephes expf, float64 with std::exp) and summed in double;
// each output is exp(x - max) * (1 / sum). Works in place (out == x).
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace vmjit::kernels {
namespace {

using namespace detail;

/// exp(X) for X <= 0 (X = x - max), vectorizable: Cephes' expf
/// (round-to-nearest range reduction by ln 2 in two parts, a degree-6
/// polynomial, the power of two built in the exponent bits), less than 1 ulp
/// from the true value. Below ln(FLT_MIN) (about -87.34), where the result
/// would be subnormal, it is 0; NaN stays NaN.
inline float expNonPositive(float X) {
  constexpr float Lo = -87.33654475f;
  const bool Under = X < Lo;
  // t = round(X * log2(e)) through the 1.5 * 2^23 magic number: no
  // float-to-int conversion, so NaN is harmless.
  const float T = X * 1.44269504088896341f + 12582912.0f;
  const float N = T - 12582912.0f;
  const uint32_t NBits = std::bit_cast<uint32_t>(T) - 0x4B400000u;
  float R = X - N * 0.693359375f;
  R = R - N * -2.12194440e-4f;
  float P = 1.9875691500e-4f;
  P = P * R + 1.3981999507e-3f;
  P = P * R + 8.3334519073e-3f;
  P = P * R + 4.1665795894e-2f;
  P = P * R + 1.6666665459e-1f;
  P = P * R + 5.0000001201e-1f;
  P = P * R * R + R + 1.0f;
  const float Scale = std::bit_cast<float>((NBits + 127u) << 23);
  // Zero the underflowed lanes with a mask: a select around a (possibly
  // trapping) multiply is not if-converted, and the loop would not
  // vectorize.
  const uint32_t Keep = uint32_t(0) - uint32_t(!Under);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(P * Scale) & Keep);
}

inline float expOf(float X) { return expNonPositive(X); }
inline double expOf(double X) { return std::exp(X); }

/// Softmax of one compact row (the last axis), X into Out (may be X).
/// Eight partial maxima and four partial sums keep the reductions off one
/// dependency chain; the exponentials vectorize for float32.
template <typename T> void softmaxRow(const T *X, T *Out, int64_t Len) {
  T M[8];
  for (int J = 0; J < 8; ++J)
    M[J] = X[0];
  int64_t I = 0;
  for (; I + 8 <= Len; I += 8)
    for (int J = 0; J < 8; ++J)
      M[J] = X[I + J] > M[J] ? X[I + J] : M[J];
  for (; I < Len; ++I)
    M[0] = X[I] > M[0] ? X[I] : M[0];
  T Max = M[0];
  for (int J = 1; J < 8; ++J)
    Max = M[J] > Max ? M[J] : Max;
VMJIT_IVDEP
  for (int64_t K = 0; K < Len; ++K)
    Out[K] = expOf(X[K] - Max);
  double S[4] = {0, 0, 0, 0};
  I = 0;
  for (; I + 4 <= Len; I += 4)
    for (int J = 0; J < 4; ++J)
      S[J] += double(Out[I + J]);
  for (; I < Len; ++I)
    S[0] += double(Out[I]);
  const T Scale = T(1.0 / ((S[0] + S[1]) + (S[2] + S[3])));
VMJIT_IVDEP
  for (int64_t K = 0; K < Len; ++K)
    Out[K] *= Scale;
}

/// Softmax over `Len` elements `Stride` apart, from X into Out (may be X).
template <typename T>
void softmaxLine(const T *X, T *Out, int64_t Len, int64_t Stride) {
  T Max = X[0];
  for (int64_t I = 1; I < Len; ++I)
    Max = X[I * Stride] > Max ? X[I * Stride] : Max;
  double Sum = 0;
  for (int64_t I = 0; I < Len; ++I) {
    T E = expOf(X[I * Stride] - Max);
    Out[I * Stride] = E;
    Sum += double(E);
  }
  const T Scale = T(1.0 / Sum);
  for (int64_t I = 0; I < Len; ++I)
    Out[I * Stride] *= Scale;
}

Tensor softmax(const char *Name, const DLTensor *X, int64_t Axis,
               const DLTensor *Out) {
  checkTensor(Name, 1, X);
  const int64_t Rank = X->ndim;
  if (Axis < -Rank || Axis >= Rank)
    valueError("{}: axis {} is out of range for shape {}", Name, Axis,
               shapeOf(X));
  if (Axis < 0)
    Axis += Rank;
  int64_t Outer = 1, Inner = 1;
  for (int64_t I = 0; I < Axis; ++I)
    Outer *= X->shape[I];
  for (int64_t I = Axis + 1; I < Rank; ++I)
    Inner *= X->shape[I];
  const int64_t Len = X->shape[Axis];

  Tensor Result;
  dispatchFloat(Name, X->dtype, [&](auto Tag) {
    using T = decltype(Tag);
    if (Out) {
      checkOut(Name, 3, Out, dimsOf(X), X->dtype);
      checkAlias(Name, 1, X, Out, /*AllowExact=*/true);
    } else {
      Result = Tensor::empty(dimsOf(X), X->dtype);
      Out = Result.dl();
    }
    if (Len == 0)
      return;
    const T *PX = dataOf<const T>(X);
    T *PO = dataOf<T>(Out);
    if (Inner == 1) {
      for (int64_t O = 0; O < Outer; ++O)
        softmaxRow(PX + O * Len, PO + O * Len, Len);
      return;
    }
    for (int64_t O = 0; O < Outer; ++O)
      for (int64_t J = 0; J < Inner; ++J) {
        int64_t Base = O * Len * Inner + J;
        softmaxLine(PX + Base, PO + Base, Len, Inner);
      }
  });
  return Result;
}

constexpr char kTensorSoftmax[] = "tensor.softmax";
constexpr char kKernelSoftmax[] = "kernel.softmax";

Tensor allocSoftmax(DLTensor *X, int64_t Axis) {
  return softmax(kTensorSoftmax, X, Axis, nullptr);
}
void dpsSoftmax(DLTensor *X, int64_t Axis, DLTensor *Out) {
  softmax(kKernelSoftmax, X, Axis, Out);
}

} // namespace

void registerSoftmaxFunctions(Registry &R) {
  addEntry<kTensorSoftmax, &allocSoftmax>(R);
  addEntry<kKernelSoftmax, &dpsSoftmax>(R);
}

} // namespace vmjit::kernels
