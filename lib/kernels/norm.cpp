//===- norm.cpp - rms_norm and layer_norm over the last axis --------------===//
//
// tensor.rms_norm(x, w, eps):  y = x / sqrt(mean(x^2) + eps) * w
// tensor.layer_norm(x, g, b, eps): y = (x - mean) / sqrt(var + eps) * g + b
// over the last axis of x ([..., d]); w, g and b have shape [d] and x's
// dtype (float32 or float64). Statistics accumulate in double (layer_norm
// takes two passes: the mean, then the variance of x - mean); the output
// pass runs in the tensor's type with the statistics rounded to it. x may
// be exactly out; the weights must not overlap out.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cmath>

namespace vmjit::kernels {
namespace {

using namespace detail;

/// Validates x and the [d] parameters; returns d (x's last dimension).
int64_t checkNormArgs(const char *Name, const DLTensor *X,
                      std::initializer_list<const DLTensor *> Params) {
  checkTensor(Name, 1, X);
  if (X->ndim < 1)
    valueError("{}: x has shape {}; it needs at least one dimension", Name,
               shapeOf(X));
  const int64_t D = X->shape[X->ndim - 1];
  int Index = 2;
  for (const DLTensor *P : Params) {
    checkTensor(Name, Index, P);
    if (P->ndim != 1 || P->shape[0] != D)
      valueError("{}: argument {} has shape {}, expected [{}] (the last "
                 "dimension of x, shape {})",
                 Name, Index, shapeOf(P), D, shapeOf(X));
    checkSameDType(Name, X, P);
    ++Index;
  }
  return D;
}

void prepareOut(const char *Name, int OutIndex, const DLTensor *X,
                std::initializer_list<const DLTensor *> Params,
                const DLTensor *&Out, Tensor &Result) {
  if (Out) {
    checkOut(Name, OutIndex, Out, dimsOf(X), X->dtype);
    checkAlias(Name, 1, X, Out, /*AllowExact=*/true);
    int Index = 2;
    for (const DLTensor *P : Params)
      checkAlias(Name, Index++, P, Out, /*AllowExact=*/false);
  } else {
    Result = Tensor::empty(dimsOf(X), X->dtype);
    Out = Result.dl();
  }
}

/// Sum of F(X[I]) in double over four partial sums (off one dependency
/// chain, and vectorizable).
template <typename T, typename F>
double sumOf(const T *X, int64_t D, F &&Term) {
  double S[4] = {0, 0, 0, 0};
  int64_t I = 0;
  for (; I + 4 <= D; I += 4)
    for (int J = 0; J < 4; ++J)
      S[J] += Term(double(X[I + J]));
  for (; I < D; ++I)
    S[0] += Term(double(X[I]));
  return (S[0] + S[1]) + (S[2] + S[3]);
}

template <typename T>
void rmsNormRows(const T *X, const T *W, T *Y, int64_t Rows, int64_t D,
                 double Eps) {
  for (int64_t R = 0; R < Rows; ++R, X += D, Y += D) {
    const double SumSq = sumOf(X, D, [](double V) { return V * V; });
    const T Inv = T(1.0 / std::sqrt(SumSq / double(D) + Eps));
    for (int64_t I = 0; I < D; ++I)
      Y[I] = X[I] * Inv * W[I];
  }
}

template <typename T>
void layerNormRows(const T *X, const T *G, const T *B, T *Y, int64_t Rows,
                   int64_t D, double Eps) {
  for (int64_t R = 0; R < Rows; ++R, X += D, Y += D) {
    const double Mean = sumOf(X, D, [](double V) { return V; }) / double(D);
    const double SumSq =
        sumOf(X, D, [Mean](double V) { return (V - Mean) * (V - Mean); });
    const T Inv = T(1.0 / std::sqrt(SumSq / double(D) + Eps));
    const T M = T(Mean);
    for (int64_t I = 0; I < D; ++I)
      Y[I] = (X[I] - M) * Inv * G[I] + B[I];
  }
}

Tensor rmsNorm(const char *Name, const DLTensor *X, const DLTensor *W,
               double Eps, const DLTensor *Out) {
  const int64_t D = checkNormArgs(Name, X, {W});
  Tensor Result;
  dispatchFloat(Name, X->dtype, [&](auto Tag) {
    using T = decltype(Tag);
    prepareOut(Name, 4, X, {W}, Out, Result);
    if (D == 0)
      return;
    rmsNormRows(dataOf<const T>(X), dataOf<const T>(W), dataOf<T>(Out),
                numelOf(X) / D, D, Eps);
  });
  return Result;
}

Tensor layerNorm(const char *Name, const DLTensor *X, const DLTensor *G,
                 const DLTensor *B, double Eps, const DLTensor *Out) {
  const int64_t D = checkNormArgs(Name, X, {G, B});
  Tensor Result;
  dispatchFloat(Name, X->dtype, [&](auto Tag) {
    using T = decltype(Tag);
    prepareOut(Name, 5, X, {G, B}, Out, Result);
    if (D == 0)
      return;
    layerNormRows(dataOf<const T>(X), dataOf<const T>(G), dataOf<const T>(B),
                  dataOf<T>(Out), numelOf(X) / D, D, Eps);
  });
  return Result;
}

constexpr char kTensorRmsNorm[] = "tensor.rms_norm";
constexpr char kKernelRmsNorm[] = "kernel.rms_norm";
constexpr char kTensorLayerNorm[] = "tensor.layer_norm";
constexpr char kKernelLayerNorm[] = "kernel.layer_norm";

Tensor allocRmsNorm(DLTensor *X, DLTensor *W, double Eps) {
  return rmsNorm(kTensorRmsNorm, X, W, Eps, nullptr);
}
void dpsRmsNorm(DLTensor *X, DLTensor *W, double Eps, DLTensor *Out) {
  rmsNorm(kKernelRmsNorm, X, W, Eps, Out);
}
Tensor allocLayerNorm(DLTensor *X, DLTensor *G, DLTensor *B, double Eps) {
  return layerNorm(kTensorLayerNorm, X, G, B, Eps, nullptr);
}
void dpsLayerNorm(DLTensor *X, DLTensor *G, DLTensor *B, double Eps,
                  DLTensor *Out) {
  layerNorm(kKernelLayerNorm, X, G, B, Eps, Out);
}

} // namespace

void registerNormFunctions(Registry &R) {
  addEntry<kTensorRmsNorm, &allocRmsNorm>(R);
  addEntry<kKernelRmsNorm, &dpsRmsNorm>(R);
  addEntry<kTensorLayerNorm, &allocLayerNorm>(R);
  addEntry<kKernelLayerNorm, &dpsLayerNorm>(R);
}

} // namespace vmjit::kernels
