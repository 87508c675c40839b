// Tests the per-thread object pools (lib/runtime/object_pool.cpp): a dead
// object's memory is reused by the next object of its size class, a live
// (or weakly referenced) object's never is; tensors, shapes and arrays made
// from the pools keep their values and shapes; blocks freed on another
// thread or after a thread's pools are gone are handled; the lists are
// bounded.
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/object_pool.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>
#include <thread>
#include <vector>

using namespace vmjit;

namespace {

const DLDataType kF32{kDLFloat, 32, 1};

Tensor filled(std::initializer_list<int64_t> Dims, float V) {
  Tensor T = Tensor::empty(Dims, kF32);
  for (int64_t I = 0; I < T.numel(); ++I)
    T.data<float>()[I] = V;
  return T;
}

} // namespace

TEST(ObjectPoolTest, ADeadTensorsMemoryIsReused) {
  const void *First;
  {
    Tensor T = filled({4}, 1.0f);
    First = T.get();
  }
  const size_t Reused = recycledObjectStats().Reused;
  Tensor U = filled({4}, 2.0f);
  EXPECT_EQ(static_cast<const void *>(U.get()), First);
  EXPECT_GT(recycledObjectStats().Reused, Reused);
  EXPECT_EQ(U.data<float>()[3], 2.0f);
}

TEST(ObjectPoolTest, ALiveTensorIsNeverReused) {
  std::vector<Tensor> Kept;
  for (int I = 0; I < 1000; ++I) {
    Kept.push_back(filled({2, 3}, float(I)));
    // Made and dropped at once: its block may come back, Kept's never do.
    Tensor Dropped = filled({2, 3}, -1.0f);
  }
  for (int I = 0; I < 1000; ++I) {
    ASSERT_EQ(Kept[I].ndim(), 2);
    EXPECT_EQ(Kept[I].shape()[1], 3);
    for (int64_t J = 0; J < 6; ++J)
      ASSERT_EQ(Kept[I].data<float>()[J], float(I)) << "tensor " << I;
  }
}

TEST(ObjectPoolTest, AWeakReferenceKeepsTheBlock) {
  Object *Raw;
  {
    Tensor T = filled({1}, 1.0f);
    Raw = const_cast<TensorObj *>(T.get());
    Raw->incWeakRef();
  }
  // The payload is gone but the memory is still the weak reference's.
  Tensor U = filled({1}, 2.0f);
  EXPECT_NE(static_cast<const void *>(U.get()), static_cast<void *>(Raw));
  Raw->decWeakRef();
}

TEST(ObjectPoolTest, LargeShapesAndTuplesLeaveTheObject) {
  Shape Small{1, 2, 3};
  Shape Large{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(Large.size(), 8u);
  EXPECT_EQ(Large[7], 8);
  EXPECT_EQ(Small[2], 3);
  Tensor Big = filled({1, 1, 1, 1, 1, 1, 1, 2}, 5.0f);
  EXPECT_EQ(Big.ndim(), 8);
  EXPECT_EQ(Big.numel(), 2);
  std::vector<AnyView> Many;
  for (int64_t I = 0; I < 20; ++I)
    Many.emplace_back(I);
  Array A(std::span<const AnyView>(Many.data(), Many.size()));
  ASSERT_EQ(A.size(), 20u);
  EXPECT_EQ(A[19].cast<int64_t>(), 19);
  Array Few(std::span<const AnyView>(Many.data(), 3));
  ASSERT_EQ(Few.size(), 3u);
  EXPECT_EQ(Few[2].cast<int64_t>(), 2);
}

TEST(ObjectPoolTest, ArrayElementsAreOwned) {
  Tensor T = filled({2}, 3.0f);
  Array A;
  {
    AnyView Elems[] = {AnyView(T), AnyView(int64_t(7))};
    A = Array(std::span<const AnyView>(Elems, 2));
  }
  EXPECT_EQ(T.useCount(), 2u);
  A = Array();
  EXPECT_EQ(T.useCount(), 1u);
}

TEST(ObjectPoolTest, SmallTensorDataComesFromThePoolsAligned) {
  for (int I = 0; I < 100; ++I) {
    Tensor T = filled({int64_t(I % 17 + 1)}, 1.0f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(T.data()) % kTensorAlignment, 0u);
  }
}

TEST(ObjectPoolTest, ObjectsDieOnAnyThread) {
  std::vector<Tensor> Made;
  for (int I = 0; I < 100; ++I)
    Made.push_back(filled({4}, float(I)));
  // Freed on another thread: the blocks join that thread's lists, which
  // are emptied when it exits.
  std::thread([M = std::move(Made)]() mutable { M.clear(); }).join();
  std::thread([] {
    for (int I = 0; I < 100; ++I)
      Tensor T = filled({4}, 1.0f);
  }).join();
  Tensor After = filled({4}, 9.0f);
  EXPECT_EQ(After.data<float>()[0], 9.0f);
}

TEST(ObjectPoolTest, TheListsAreBounded) {
  std::thread([] {
    {
      std::vector<Tensor> Many;
      for (int I = 0; I < 5000; ++I)
        Many.push_back(filled({1}, 0.0f));
    }
    // 5000 objects and 5000 data blocks died; only a bounded number stay.
    EXPECT_LE(recycledObjectStats().Pooled, 2u * 512u);
  }).join();
}
