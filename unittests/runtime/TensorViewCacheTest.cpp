// Tests TensorViewCache (lib/runtime/tensor_view_cache.cpp): a dead view
// parks and the next request for the same bytes, shape and type revives
// it; a referenced view is never handed out; a parked view gives up its
// reference on the owner and is destroyed with it; other shapes, types and
// offsets get new views; a full cache makes room; views dying on other
// threads while the owner's thread asks for more (run under TSan in CI).
#include "vmjit/runtime/object_pool.h"
#include "vmjit/runtime/tensor_view_cache.h"

#include <gtest/gtest.h>
#include <thread>
#include <vector>

using namespace vmjit;

namespace {

const DLDataType kF32{kDLFloat, 32, 1};
const DLDataType kI32{kDLInt, 32, 1};

/// A block of memory with a view cache, as a storage is.
class Block : public Object {
public:
  Block() : Object(kVMJITDynObjectBegin, objectDeleter<Block>) {}
  alignas(64) float Data[64] = {};
  TensorViewCache Views;
};

std::span<const int64_t> dims(const std::vector<int64_t> &D) { return D; }

/// Asks B's cache for a view, as vm.builtin.alloc_tensor does.
Tensor viewOf(Block &B, size_t Offset, const std::vector<int64_t> &Shape,
              DLDataType T = kF32) {
  if (Tensor V =
          B.Views.revive(&B, B.Data + Offset, dims(Shape), T, cpuDevice()))
    return V;
  return B.Views.makeView(&B, B.Data + Offset, dims(Shape), T, cpuDevice());
}

} // namespace

TEST(TensorViewCacheTest, ADeadViewIsRevivedForTheSameRequest) {
  auto B = makeObject<Block>();
  const Object *First;
  {
    Tensor T = viewOf(*B, 0, {4});
    First = T.get();
    EXPECT_EQ(B->useCount(), 2u); // the view's reference
  }
  EXPECT_EQ(B->Views.parked(), 1);
  EXPECT_EQ(B->useCount(), 1u) << "a parked view keeps its owner alive";
  Tensor U = viewOf(*B, 0, {4});
  EXPECT_EQ(U.get(), First);
  EXPECT_EQ(U.useCount(), 1u);
  EXPECT_EQ(B->useCount(), 2u);
  EXPECT_EQ(B->Views.parked(), 0);
  EXPECT_EQ(U.data(), static_cast<void *>(B->Data));
  EXPECT_EQ(U.ndim(), 1);
  EXPECT_EQ(U.shape()[0], 4);
}

TEST(TensorViewCacheTest, AViewOfManyDimensionsIsRevivedWhole) {
  auto B = makeObject<Block>();
  const std::vector<int64_t> Dims{1, 2, 1, 2, 1, 2, 1, 2}; // > kInlineDims
  const Object *First = viewOf(*B, 0, Dims).get();
  Tensor T = viewOf(*B, 0, Dims);
  EXPECT_EQ(T.get(), First);
  ASSERT_EQ(T.ndim(), 8);
  for (size_t K = 0; K < Dims.size(); ++K)
    EXPECT_EQ(T.shape()[K], Dims[K]);
  EXPECT_NE(viewOf(*B, 0, {1, 2, 1, 2, 1, 2, 1, 1}).get(), First);
}

TEST(TensorViewCacheTest, OnlyTheSameDeviceMatches) {
  auto B = makeObject<Block>();
  std::vector<int64_t> Dims{4};
  B->Views.makeView(B.get(), B->Data, Dims, kF32, cpuDevice(1));
  EXPECT_FALSE(B->Views.revive(B.get(), B->Data, Dims, kF32, cpuDevice(0)));
  EXPECT_TRUE(B->Views.revive(B.get(), B->Data, Dims, kF32, cpuDevice(1)));
}

TEST(TensorViewCacheTest, AReferencedViewIsNeverHandedOut) {
  auto B = makeObject<Block>();
  Tensor T = viewOf(*B, 0, {4});
  Tensor Kept = T; // a second reference, as a caller keeping a result
  T = Tensor();
  Tensor U = viewOf(*B, 0, {4});
  EXPECT_NE(U.get(), Kept.get());
  EXPECT_EQ(Kept.useCount(), 1u);
  EXPECT_EQ(B->Views.parked(), 0);
}

TEST(TensorViewCacheTest, OnlyTheSameBytesShapeAndTypeMatch) {
  auto B = makeObject<Block>();
  const Object *First = viewOf(*B, 0, {4}).get();
  EXPECT_NE(viewOf(*B, 0, {2, 2}).get(), First);
  EXPECT_NE(viewOf(*B, 0, {4}, kI32).get(), First);
  EXPECT_NE(viewOf(*B, 16, {4}).get(), First);
  // Each miss parked its new view beside the first one.
  EXPECT_EQ(B->Views.parked(), 4);
  EXPECT_EQ(viewOf(*B, 0, {4}).get(), First);
}

TEST(TensorViewCacheTest, AFullCacheMakesRoom) {
  auto B = makeObject<Block>();
  for (int64_t N = 1; N <= 2 * TensorViewCache::kSlots; ++N)
    viewOf(*B, 0, {N});
  EXPECT_EQ(B->Views.parked(), TensorViewCache::kSlots);
  // The last shape asked for parked (room was made for it).
  const Object *Last = nullptr;
  {
    Tensor T = viewOf(*B, 0, {2 * TensorViewCache::kSlots});
    Last = T.get();
  }
  EXPECT_EQ(viewOf(*B, 0, {2 * TensorViewCache::kSlots}).get(), Last);
}

TEST(TensorViewCacheTest, AViewOutlivesItsOwnersOtherReferences) {
  Tensor T;
  {
    auto B = makeObject<Block>();
    B->Data[3] = 7.0f;
    T = viewOf(*B, 0, {4});
  }
  EXPECT_EQ(T.data<float>()[3], 7.0f); // the view keeps the block alive
  // It holds the block's last reference: dropping it destroys the view
  // (not parked: the block dies with it), then the block. Its memory
  // goes back to this thread's pools; nothing leaks (LeakSanitizer in CI).
  const size_t Pooled = recycledObjectStats().Pooled;
  T = Tensor();
  EXPECT_EQ(recycledObjectStats().Pooled, Pooled + 1);
}

TEST(TensorViewCacheTest, ParkedViewsDieWithTheirOwner) {
  size_t Pooled;
  {
    auto B = makeObject<Block>();
    viewOf(*B, 0, {4});
    viewOf(*B, 0, {8});
    EXPECT_EQ(B->Views.parked(), 2);
    Pooled = recycledObjectStats().Pooled;
  }
  // The block's destruction gave both parked views' memory to the pools.
  EXPECT_EQ(recycledObjectStats().Pooled, Pooled + 2);
}

TEST(TensorViewCacheTest, ViewsDyingOnOtherThreads) {
  auto B = makeObject<Block>();
  constexpr int kRounds = 2000;
  std::vector<Tensor> Handed(kRounds);
  std::thread Dropper;
  for (int R = 0; R < kRounds; ++R) {
    Tensor T = viewOf(*B, 0, {4});
    T.data<float>()[0] = static_cast<float>(R);
    Handed[R] = std::move(T);
    if (R % 100 == 99) {
      // Another thread drops the last hundred while this one goes on.
      if (Dropper.joinable())
        Dropper.join();
      std::vector<Tensor> Batch(std::make_move_iterator(Handed.begin() + R - 99),
                                std::make_move_iterator(Handed.begin() + R + 1));
      Dropper = std::thread([Batch = std::move(Batch)]() mutable {
        Batch.clear();
      });
    }
  }
  Dropper.join();
  EXPECT_LE(B->Views.parked(), TensorViewCache::kSlots);
  EXPECT_EQ(B->useCount(), 1u);
}
