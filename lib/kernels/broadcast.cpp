//===- broadcast.cpp - NumPy broadcasting plans ---------------------------===//

#include "broadcast.h"

#include <algorithm>

namespace vmjit::kernels {

BroadcastStatus planBroadcast(std::span<const int64_t> A,
                              std::span<const int64_t> B, BroadcastPlan &P) {
  const int RA = int(A.size()), RB = int(B.size());
  const int R = std::max(RA, RB);
  if (R > kMaxBroadcastRank)
    return BroadcastStatus::TooManyDims;
  P.Rank = R;
  P.Numel = 1;
  // Result shape, right-aligned.
  for (int I = 0; I < R; ++I) {
    int64_t DA = I < R - RA ? 1 : A[I - (R - RA)];
    int64_t DB = I < R - RB ? 1 : B[I - (R - RB)];
    int64_t D;
    if (DA == DB || DB == 1)
      D = DA;
    else if (DA == 1)
      D = DB;
    else
      return BroadcastStatus::Incompatible;
    P.OutShape[I] = D;
    P.Numel *= D;
  }
  // Compact element strides of each operand in result space (0 where the
  // operand is broadcast), computed innermost first.
  int64_t SA[kMaxBroadcastRank], SB[kMaxBroadcastRank];
  int64_t NextA = 1, NextB = 1;
  for (int I = R - 1; I >= 0; --I) {
    int64_t DA = I < R - RA ? 1 : A[I - (R - RA)];
    int64_t DB = I < R - RB ? 1 : B[I - (R - RB)];
    SA[I] = DA == 1 ? 0 : NextA;
    SB[I] = DB == 1 ? 0 : NextB;
    NextA *= DA;
    NextB *= DB;
  }
  // Merge: drop size-1 result dimensions, fold a dimension into the one
  // outside it when both operands continue compactly across the boundary.
  P.NumDims = 0;
  if (P.Numel == 0) {
    P.NumDims = 1;
    P.Sizes[0] = 0;
    P.StrideA[0] = P.StrideB[0] = 0;
    return BroadcastStatus::Ok;
  }
  for (int I = 0; I < R; ++I) {
    int64_t D = P.OutShape[I];
    if (D == 1)
      continue;
    if (P.NumDims > 0) {
      int L = P.NumDims - 1;
      if (P.StrideA[L] == SA[I] * D && P.StrideB[L] == SB[I] * D) {
        P.Sizes[L] *= D;
        P.StrideA[L] = SA[I];
        P.StrideB[L] = SB[I];
        continue;
      }
    }
    P.Sizes[P.NumDims] = D;
    P.StrideA[P.NumDims] = SA[I];
    P.StrideB[P.NumDims] = SB[I];
    ++P.NumDims;
  }
  if (P.NumDims == 0) {
    P.NumDims = 1;
    P.Sizes[0] = 1;
    P.StrideA[0] = P.StrideB[0] = 0;
  }
  return BroadcastStatus::Ok;
}

} // namespace vmjit::kernels
