//===- BroadcastTest.cpp - NumPy broadcasting plans -----------------------===//

#include "broadcast.h"

#include <gtest/gtest.h>

#include <vector>

using namespace vmjit::kernels;

namespace {

std::vector<int64_t> outShape(const BroadcastPlan &P) {
  return std::vector<int64_t>(P.OutShape, P.OutShape + P.Rank);
}

struct Row {
  int64_t OffA, OffB, OffOut, Len, SA, SB;
  bool operator==(const Row &O) const = default;
};

std::vector<Row> rows(const BroadcastPlan &P) {
  std::vector<Row> R;
  forEachRow(P, [&](int64_t A, int64_t B, int64_t O, int64_t L, int64_t SA,
                    int64_t SB) {
    R.push_back({A, B, O, L, SA, SB});
  });
  return R;
}

/// The (a, b) element index pairs the plan visits, in result order.
std::vector<std::pair<int64_t, int64_t>> visits(const BroadcastPlan &P) {
  std::vector<std::pair<int64_t, int64_t>> V;
  int64_t Expected = 0;
  forEachRow(P, [&](int64_t A, int64_t B, int64_t O, int64_t L, int64_t SA,
                    int64_t SB) {
    EXPECT_EQ(O, Expected);
    for (int64_t I = 0; I < L; ++I)
      V.push_back({A + I * SA, B + I * SB});
    Expected += L;
  });
  return V;
}

/// Naive reference: the element indices by explicit multi-index.
std::vector<std::pair<int64_t, int64_t>> naiveVisits(std::vector<int64_t> A,
                                                     std::vector<int64_t> B) {
  size_t R = std::max(A.size(), B.size());
  A.insert(A.begin(), R - A.size(), 1);
  B.insert(B.begin(), R - B.size(), 1);
  std::vector<int64_t> Out(R);
  int64_t N = 1;
  for (size_t I = 0; I < R; ++I) {
    Out[I] = std::max(A[I], B[I]);
    N *= Out[I];
  }
  std::vector<std::pair<int64_t, int64_t>> V;
  for (int64_t Flat = 0; Flat < N; ++Flat) {
    int64_t Rem = Flat, IA = 0, IB = 0, MA = 1, MB = 1;
    for (size_t D = R; D-- > 0;) {
      int64_t Idx = Rem % Out[D];
      Rem /= Out[D];
      IA += (A[D] == 1 ? 0 : Idx) * MA;
      IB += (B[D] == 1 ? 0 : Idx) * MB;
      MA *= A[D];
      MB *= B[D];
    }
    V.push_back({IA, IB});
  }
  return V;
}

TEST(BroadcastTest, SameShapeIsOneRow) {
  BroadcastPlan P;
  ASSERT_EQ(
      planBroadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{2, 3}, P),
      BroadcastStatus::Ok);
  EXPECT_EQ(outShape(P), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(P.Numel, 6);
  EXPECT_EQ(rows(P), (std::vector<Row>{{0, 0, 0, 6, 1, 1}}));
}

TEST(BroadcastTest, TrailingVector) {
  BroadcastPlan P;
  ASSERT_EQ(
      planBroadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{3}, P),
      BroadcastStatus::Ok);
  EXPECT_EQ(outShape(P), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(rows(P),
            (std::vector<Row>{{0, 0, 0, 3, 1, 1}, {3, 0, 3, 3, 1, 1}}));
}

TEST(BroadcastTest, ColumnTimesRow) {
  BroadcastPlan P;
  ASSERT_EQ(
      planBroadcast(std::vector<int64_t>{2, 1}, std::vector<int64_t>{1, 3}, P),
      BroadcastStatus::Ok);
  EXPECT_EQ(outShape(P), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(rows(P),
            (std::vector<Row>{{0, 0, 0, 3, 0, 1}, {1, 0, 3, 3, 0, 1}}));
}

TEST(BroadcastTest, ScalarOperand) {
  BroadcastPlan P;
  ASSERT_EQ(planBroadcast(std::vector<int64_t>{}, std::vector<int64_t>{4}, P),
            BroadcastStatus::Ok);
  EXPECT_EQ(outShape(P), (std::vector<int64_t>{4}));
  EXPECT_EQ(rows(P), (std::vector<Row>{{0, 0, 0, 4, 0, 1}}));
}

TEST(BroadcastTest, BothRankZero) {
  BroadcastPlan P;
  ASSERT_EQ(planBroadcast(std::vector<int64_t>{}, std::vector<int64_t>{}, P),
            BroadcastStatus::Ok);
  EXPECT_EQ(P.Rank, 0);
  EXPECT_EQ(P.Numel, 1);
  EXPECT_EQ(rows(P), (std::vector<Row>{{0, 0, 0, 1, 0, 0}}));
}

TEST(BroadcastTest, EmptyResultHasNoRows) {
  BroadcastPlan P;
  ASSERT_EQ(
      planBroadcast(std::vector<int64_t>{0, 3}, std::vector<int64_t>{3}, P),
      BroadcastStatus::Ok);
  EXPECT_EQ(outShape(P), (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(rows(P).empty());
  // A 0 broadcasts against a 1, not against another size.
  EXPECT_EQ(planBroadcast(std::vector<int64_t>{0}, std::vector<int64_t>{1}, P),
            BroadcastStatus::Ok);
  EXPECT_EQ(outShape(P), (std::vector<int64_t>{0}));
  EXPECT_EQ(planBroadcast(std::vector<int64_t>{0}, std::vector<int64_t>{2}, P),
            BroadcastStatus::Incompatible);
}

TEST(BroadcastTest, Incompatible) {
  BroadcastPlan P;
  EXPECT_EQ(
      planBroadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{4}, P),
      BroadcastStatus::Incompatible);
  EXPECT_EQ(
      planBroadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{3, 3}, P),
      BroadcastStatus::Incompatible);
}

TEST(BroadcastTest, TooManyDimensions) {
  BroadcastPlan P;
  std::vector<int64_t> Big(kMaxBroadcastRank + 1, 1);
  EXPECT_EQ(planBroadcast(Big, std::vector<int64_t>{1}, P),
            BroadcastStatus::TooManyDims);
  std::vector<int64_t> Max(kMaxBroadcastRank, 1);
  EXPECT_EQ(planBroadcast(Max, std::vector<int64_t>{1}, P),
            BroadcastStatus::Ok);
}

TEST(BroadcastTest, MatchesNaiveIndexing) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
      Cases = {{{2, 3, 4}, {4}},       {{2, 1, 4}, {3, 1}},
               {{1, 3, 1}, {2, 1, 5}}, {{5, 1, 1, 2}, {1, 4, 3, 1}},
               {{3}, {2, 1, 1}},       {{2, 3, 4}, {2, 3, 4}},
               {{1, 1}, {1, 1}},       {{4, 1, 3}, {1}}};
  for (const auto &[A, B] : Cases) {
    BroadcastPlan P;
    ASSERT_EQ(planBroadcast(A, B, P), BroadcastStatus::Ok);
    EXPECT_EQ(visits(P), naiveVisits(A, B));
    // Symmetric.
    BroadcastPlan Q;
    ASSERT_EQ(planBroadcast(B, A, Q), BroadcastStatus::Ok);
    EXPECT_EQ(outShape(P), outShape(Q));
  }
}

TEST(BroadcastTest, MergesDimensions) {
  // [4, 5, 6] + [5, 6]: b repeats as one block of 30.
  BroadcastPlan P;
  ASSERT_EQ(planBroadcast(std::vector<int64_t>{4, 5, 6},
                          std::vector<int64_t>{5, 6}, P),
            BroadcastStatus::Ok);
  EXPECT_EQ(P.NumDims, 2);
  EXPECT_EQ(P.Sizes[0], 4);
  EXPECT_EQ(P.Sizes[1], 30);
}

} // namespace
