//===- broadcast.h - NumPy broadcasting of two operands ---------*- C++ -*-===//
//
// Internal to lib/kernels. planBroadcast computes the result shape of two
// compact operands under NumPy rules and an iteration plan in which
// adjacent dimensions that broadcast alike are merged, so that the common
// cases ([2,3]+[3], [n,1]+[1,n], scalar+[n]) run as a few long rows with
// element strides 0 or 1. Everything lives on the stack: no allocation.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_KERNELS_BROADCAST_H
#define VMJIT_LIB_KERNELS_BROADCAST_H

#include <cstdint>
#include <span>

namespace vmjit::kernels {

/// Highest rank broadcasting supports.
inline constexpr int kMaxBroadcastRank = 32;

struct BroadcastPlan {
  /// The result shape (rank = the larger operand rank).
  int Rank = 0;
  int64_t OutShape[kMaxBroadcastRank];
  /// Elements of the result.
  int64_t Numel = 1;
  /// The merged iteration space, outermost first (at least one dimension;
  /// a rank-0 or empty result is one dimension of size 1 or 0). Strides are
  /// in elements of each operand; the result is compact.
  int NumDims = 0;
  int64_t Sizes[kMaxBroadcastRank];
  int64_t StrideA[kMaxBroadcastRank];
  int64_t StrideB[kMaxBroadcastRank];
};

enum class BroadcastStatus { Ok, Incompatible, TooManyDims };

/// Plans `A op B` for compact operands of shapes `A` and `B`.
BroadcastStatus planBroadcast(std::span<const int64_t> A,
                              std::span<const int64_t> B, BroadcastPlan &P);

/// Calls `Row(OffA, OffB, OffOut, Len, StrideA, StrideB)` once per row of
/// the innermost merged dimension, offsets in elements.
template <typename F> void forEachRow(const BroadcastPlan &P, F &&Row) {
  if (P.Numel == 0)
    return;
  const int Inner = P.NumDims - 1;
  const int64_t Len = P.Sizes[Inner];
  const int64_t SA = P.StrideA[Inner], SB = P.StrideB[Inner];
  if (Inner == 0) {
    Row(int64_t(0), int64_t(0), int64_t(0), Len, SA, SB);
    return;
  }
  int64_t Index[kMaxBroadcastRank] = {};
  int64_t OffA = 0, OffB = 0, OffOut = 0;
  for (;;) {
    Row(OffA, OffB, OffOut, Len, SA, SB);
    OffOut += Len;
    // Odometer over the outer dimensions.
    int D = Inner - 1;
    for (; D >= 0; --D) {
      OffA += P.StrideA[D];
      OffB += P.StrideB[D];
      if (++Index[D] < P.Sizes[D])
        break;
      OffA -= P.StrideA[D] * P.Sizes[D];
      OffB -= P.StrideB[D] * P.Sizes[D];
      Index[D] = 0;
    }
    if (D < 0)
      return;
  }
}

} // namespace vmjit::kernels

#endif // VMJIT_LIB_KERNELS_BROADCAST_H
