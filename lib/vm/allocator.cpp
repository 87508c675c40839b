//===- allocator.cpp - Naive and pooled storage allocators -----------------===//

#include "vmjit/vm/allocator.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/object_pool.h"

#include <atomic>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <vector>

namespace vmjit::vm {

StorageObj::StorageObj(void *Data, size_t Size, size_t Capacity,
                       DLDevice Device, std::shared_ptr<Releaser> Owner)
    : Object(typeIndex(), recycledObjectDeleter<StorageObj>), Data(Data), Size(Size),
      Capacity(Capacity), Device(Device), Owner(std::move(Owner)) {}

StorageObj::~StorageObj() { Owner->release(Data, Capacity); }

namespace {

void checkDevice(DLDevice Device) {
  if (Device.device_type != kDLCPU)
    throwError("ValueError",
               fmt::format("cannot allocate storage on device type {}: only "
                           "the CPU is supported",
                           static_cast<int>(Device.device_type)));
}

void *systemAlloc(size_t Bytes) {
  void *P = std::aligned_alloc(kTensorAlignment, Bytes);
  if (!P)
    throwError("MemoryError",
               fmt::format("cannot allocate {} bytes of storage", Bytes));
  return P;
}

/// Sizes are rounded up to a multiple of 64 (aligned_alloc wants it).
size_t roundUp(size_t Bytes) {
  size_t R = (Bytes + kTensorAlignment - 1) / kTensorAlignment *
             kTensorAlignment;
  return R ? R : kTensorAlignment;
}

class NaiveAllocator final : public Allocator {
  struct Impl : StorageObj::Releaser {
    std::atomic<size_t> InUse{0}, SystemAllocs{0};
    void release(void *Data, size_t Size) noexcept override {
      InUse -= Size;
      std::free(Data);
    }
  };
  std::shared_ptr<Impl> I = std::make_shared<Impl>();

public:
  ObjectPtr<StorageObj> allocate(size_t Bytes, DLDevice Device) override {
    checkDevice(Device);
    size_t Size = roundUp(Bytes);
    void *P = systemAlloc(Size);
    I->InUse += Size;
    ++I->SystemAllocs;
    return makeRecycledObject<StorageObj>(P, Bytes, Size, Device, I);
  }
  size_t bytesInUse() const override { return I->InUse; }
  size_t bytesPooled() const override { return 0; }
  size_t systemAllocations() const override { return I->SystemAllocs; }
};

/// Free blocks kept per exact (rounded) size: driver programs allocate the
/// same sizes over and over, so exact matches are the common case and no
/// memory is wasted on a larger block.
class PooledAllocator final : public Allocator {
  struct Impl : StorageObj::Releaser {
    mutable std::mutex Mutex;
    std::map<size_t, std::vector<void *>> Free;
    size_t InUse = 0, Pooled = 0, SystemAllocs = 0;
    void release(void *Data, size_t Size) noexcept override {
      std::lock_guard Lock(Mutex);
      InUse -= Size;
      try {
        Free[Size].push_back(Data);
        Pooled += Size;
      } catch (...) {
        std::free(Data); // could not record it: give it back instead
      }
    }
    ~Impl() override {
      for (auto &[Size, Blocks] : Free)
        for (void *P : Blocks)
          std::free(P);
    }
  };
  std::shared_ptr<Impl> I = std::make_shared<Impl>();

public:
  ObjectPtr<StorageObj> allocate(size_t Bytes, DLDevice Device) override {
    checkDevice(Device);
    size_t Size = roundUp(Bytes);
    void *P = nullptr;
    {
      std::lock_guard Lock(I->Mutex);
      auto It = I->Free.find(Size);
      if (It != I->Free.end() && !It->second.empty()) {
        P = It->second.back();
        It->second.pop_back();
        I->Pooled -= Size;
        I->InUse += Size;
      }
    }
    if (!P) {
      P = systemAlloc(Size);
      std::lock_guard Lock(I->Mutex);
      ++I->SystemAllocs;
      I->InUse += Size;
    }
    try {
      return makeRecycledObject<StorageObj>(P, Bytes, Size, Device, I);
    } catch (...) {
      I->release(P, Size);
      throw;
    }
  }
  size_t bytesInUse() const override {
    std::lock_guard Lock(I->Mutex);
    return I->InUse;
  }
  size_t bytesPooled() const override {
    std::lock_guard Lock(I->Mutex);
    return I->Pooled;
  }
  size_t systemAllocations() const override {
    std::lock_guard Lock(I->Mutex);
    return I->SystemAllocs;
  }
};

} // namespace

std::unique_ptr<Allocator> makeAllocator(AllocatorKind Kind) {
  if (Kind == AllocatorKind::Naive)
    return std::make_unique<NaiveAllocator>();
  return std::make_unique<PooledAllocator>();
}

} // namespace vmjit::vm
