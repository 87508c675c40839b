//===- elementwise.cpp - tensor/kernel add sub mul div relu gelu exp ------===//
//
// Elementwise kernels. Binary operations broadcast as NumPy does; both
// operands must have the same dtype (float32, float64, int32 or int64).
// Same-shape operands take a plain loop the compiler vectorizes; other
// shapes run over the merged rows of a BroadcastPlan. Integer add, sub and
// mul wrap; integer div truncates, fails on a zero divisor before writing
// anything, and INT_MIN / -1 wraps to INT_MIN. An input may be exactly
// `out` (kernel.add(a, b, a)); any other overlap with `out` is an error.
//
//===----------------------------------------------------------------------===//

#include "broadcast.h"
#include "common.h"

#include <cmath>
#include <type_traits>

namespace vmjit::kernels {
namespace {

using namespace detail;

enum class BinOp { Add, Sub, Mul, Div };

template <BinOp O, typename T> inline T applyBinary(T A, T B) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (O == BinOp::Add)
      return A + B;
    else if constexpr (O == BinOp::Sub)
      return A - B;
    else if constexpr (O == BinOp::Mul)
      return A * B;
    else
      return A / B;
  } else {
    using U = std::make_unsigned_t<T>;
    if constexpr (O == BinOp::Add)
      return T(U(A) + U(B));
    else if constexpr (O == BinOp::Sub)
      return T(U(A) - U(B));
    else if constexpr (O == BinOp::Mul)
      return T(U(A) * U(B));
    else // B != 0 was checked; -1 wraps INT_MIN instead of trapping.
      return B == -1 ? T(U(0) - U(A)) : T(A / B);
  }
}

/// One row: Out[i] = A[i*SA] op B[i*SB]. Operands are compact, so the
/// strides are 0 (broadcast) or 1. Out may be exactly A or B (same index
/// read before written), hence ivdep rather than restrict.
template <BinOp O, typename T>
void binaryRow(const T *A, int64_t SA, const T *B, int64_t SB, T *Out,
               int64_t N) {
  if (SA == 1 && SB == 1) {
VMJIT_IVDEP
    for (int64_t I = 0; I < N; ++I)
      Out[I] = applyBinary<O>(A[I], B[I]);
  } else if (SA == 1 && SB == 0) {
    const T BV = *B;
VMJIT_IVDEP
    for (int64_t I = 0; I < N; ++I)
      Out[I] = applyBinary<O>(A[I], BV);
  } else if (SA == 0 && SB == 1) {
    const T AV = *A;
VMJIT_IVDEP
    for (int64_t I = 0; I < N; ++I)
      Out[I] = applyBinary<O>(AV, B[I]);
  } else {
    for (int64_t I = 0; I < N; ++I)
      Out[I] = applyBinary<O>(A[I * SA], B[I * SB]);
  }
}

template <BinOp O, typename T>
void runBinary(const char *Name, const DLTensor *A, const DLTensor *B,
               const DLTensor *Out, const BroadcastPlan *Plan) {
  const T *PA = dataOf<const T>(A);
  const T *PB = dataOf<const T>(B);
  T *PO = dataOf<T>(Out);
  if constexpr (!std::is_floating_point_v<T> && O == BinOp::Div) {
    if (Plan ? Plan->Numel != 0 : numelOf(A) != 0) {
      int64_t NB = numelOf(B);
      bool Zero = false;
      for (int64_t I = 0; I < NB; ++I)
        Zero |= PB[I] == 0;
      if (Zero)
        valueError("{}: integer division by zero", Name);
    }
  }
  if (!Plan) {
    binaryRow<O>(PA, 1, PB, 1, PO, numelOf(A));
    return;
  }
  forEachRow(*Plan, [&](int64_t OA, int64_t OB, int64_t OO, int64_t Len,
                        int64_t SA, int64_t SB) {
    binaryRow<O>(PA + OA, SA, PB + OB, SB, PO + OO, Len);
  });
}

template <BinOp O>
void dispatchBinary(const char *Name, const DLTensor *A, const DLTensor *B,
                    const DLTensor *Out, const BroadcastPlan *Plan) {
  dispatchNumeric(Name, A->dtype, [&](auto Tag) {
    runBinary<O, decltype(Tag)>(Name, A, B, Out, Plan);
  });
}

/// tensor.X (Out null: allocates) and kernel.X (Out given: checked).
template <BinOp O>
Tensor binary(const char *Name, const DLTensor *A, const DLTensor *B,
              const DLTensor *Out) {
  checkTensor(Name, 1, A);
  checkTensor(Name, 2, B);
  checkSameDType(Name, A, B);
  BroadcastPlan Plan;
  const BroadcastPlan *P = nullptr;
  std::span<const int64_t> Shape = dimsOf(A);
  if (!sameShape(A, B)) {
    switch (planBroadcast(dimsOf(A), dimsOf(B), Plan)) {
    case BroadcastStatus::Ok:
      break;
    case BroadcastStatus::Incompatible:
      valueError("{}: shapes {} and {} cannot be broadcast", Name, shapeOf(A),
                 shapeOf(B));
    case BroadcastStatus::TooManyDims:
      valueError("{}: shapes {} and {} have more than {} dimensions", Name,
                 shapeOf(A), shapeOf(B), kMaxBroadcastRank);
    }
    P = &Plan;
    Shape = {Plan.OutShape, size_t(Plan.Rank)};
  }
  Tensor Result;
  if (Out) {
    checkOut(Name, 3, Out, Shape, A->dtype);
    checkAlias(Name, 1, A, Out, /*AllowExact=*/true);
    checkAlias(Name, 2, B, Out, /*AllowExact=*/true);
  } else {
    Result = Tensor::empty(Shape, A->dtype);
    Out = Result.dl();
  }
  dispatchBinary<O>(Name, A, B, Out, P);
  return Result;
}

//===----------------------------------------------------------------------===//
// Unary.
//===----------------------------------------------------------------------===//

enum class UnOp { Relu, Gelu, Exp };

template <UnOp O, typename T> inline T applyUnary(T X) {
  if constexpr (O == UnOp::Relu)
    return X < T(0) ? T(0) : X;
  else if constexpr (O == UnOp::Gelu)
    return T(0.5) * X *
           (T(1) + std::erf(X * T(0.70710678118654752440084436210485)));
  else
    return std::exp(X);
}

template <UnOp O, typename T> void unaryLoop(const T *X, T *Out, int64_t N) {
VMJIT_IVDEP
  for (int64_t I = 0; I < N; ++I)
    Out[I] = applyUnary<O>(X[I]);
}

template <UnOp O>
Tensor unary(const char *Name, const DLTensor *X, const DLTensor *Out) {
  checkTensor(Name, 1, X);
  Tensor Result;
  auto Run = [&](auto Tag) {
    using T = decltype(Tag);
    if (Out) {
      checkOut(Name, 2, Out, dimsOf(X), X->dtype);
      checkAlias(Name, 1, X, Out, /*AllowExact=*/true);
    } else {
      Result = Tensor::empty(dimsOf(X), X->dtype);
      Out = Result.dl();
    }
    unaryLoop<O>(dataOf<const T>(X), dataOf<T>(Out), numelOf(X));
  };
  if constexpr (O == UnOp::Relu)
    dispatchNumeric(Name, X->dtype, Run);
  else
    dispatchFloat(Name, X->dtype, Run);
  return Result;
}

//===----------------------------------------------------------------------===//
// Entries.
//===----------------------------------------------------------------------===//

template <const char *Name, BinOp O>
Tensor allocBinary(DLTensor *A, DLTensor *B) {
  return binary<O>(Name, A, B, nullptr);
}
template <const char *Name, BinOp O>
void dpsBinary(DLTensor *A, DLTensor *B, DLTensor *Out) {
  binary<O>(Name, A, B, Out);
}
template <const char *Name, UnOp O> Tensor allocUnary(DLTensor *X) {
  return unary<O>(Name, X, nullptr);
}
template <const char *Name, UnOp O> void dpsUnary(DLTensor *X, DLTensor *Out) {
  unary<O>(Name, X, Out);
}

constexpr char kTensorAdd[] = "tensor.add";
constexpr char kTensorSub[] = "tensor.sub";
constexpr char kTensorMul[] = "tensor.mul";
constexpr char kTensorDiv[] = "tensor.div";
constexpr char kKernelAdd[] = "kernel.add";
constexpr char kKernelSub[] = "kernel.sub";
constexpr char kKernelMul[] = "kernel.mul";
constexpr char kKernelDiv[] = "kernel.div";
constexpr char kTensorRelu[] = "tensor.relu";
constexpr char kTensorGelu[] = "tensor.gelu";
constexpr char kTensorExp[] = "tensor.exp";
constexpr char kKernelRelu[] = "kernel.relu";
constexpr char kKernelGelu[] = "kernel.gelu";
constexpr char kKernelExp[] = "kernel.exp";

} // namespace

void registerElementwiseFunctions(Registry &R) {
  addEntry<kTensorAdd, &allocBinary<kTensorAdd, BinOp::Add>>(R);
  addEntry<kTensorSub, &allocBinary<kTensorSub, BinOp::Sub>>(R);
  addEntry<kTensorMul, &allocBinary<kTensorMul, BinOp::Mul>>(R);
  addEntry<kTensorDiv, &allocBinary<kTensorDiv, BinOp::Div>>(R);
  addEntry<kKernelAdd, &dpsBinary<kKernelAdd, BinOp::Add>>(R);
  addEntry<kKernelSub, &dpsBinary<kKernelSub, BinOp::Sub>>(R);
  addEntry<kKernelMul, &dpsBinary<kKernelMul, BinOp::Mul>>(R);
  addEntry<kKernelDiv, &dpsBinary<kKernelDiv, BinOp::Div>>(R);
  addEntry<kTensorRelu, &allocUnary<kTensorRelu, UnOp::Relu>>(R);
  addEntry<kTensorGelu, &allocUnary<kTensorGelu, UnOp::Gelu>>(R);
  addEntry<kTensorExp, &allocUnary<kTensorExp, UnOp::Exp>>(R);
  addEntry<kKernelRelu, &dpsUnary<kKernelRelu, UnOp::Relu>>(R);
  addEntry<kKernelGelu, &dpsUnary<kKernelGelu, UnOp::Gelu>>(R);
  addEntry<kKernelExp, &dpsUnary<kKernelExp, UnOp::Exp>>(R);
}

} // namespace vmjit::kernels
