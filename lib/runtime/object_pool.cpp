//===- object_pool.cpp - Per-thread free lists of object memory -----------===//
//
// Size classes of 64 bytes up to kMaxRecycledObjectSize; a free block's
// first word links it to the next. Under AddressSanitizer the rest of a free
// block is poisoned, so a use after the object died is still reported.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/object_pool.h"

#include <array>
#include <cstdint>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define VMJIT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VMJIT_ASAN 1
#endif
#endif
#ifdef VMJIT_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace vmjit {
namespace {

constexpr size_t kClassBytes = 64;
constexpr size_t kNumClasses = kMaxRecycledObjectSize / kClassBytes;
/// Blocks kept per class and thread: enough for every tensor of a large
/// driver's call to be live at once, and at most 128 KiB a thread.
constexpr uint32_t kMaxBlocksPerClass = 512;

struct FreeBlock {
  FreeBlock *Next;
};

size_t classOf(size_t Size) { return (Size - 1) / kClassBytes; }
size_t classBytes(size_t Class) { return (Class + 1) * kClassBytes; }

void poison(void *Block, size_t Class) {
#ifdef VMJIT_ASAN
  ASAN_POISON_MEMORY_REGION(static_cast<char *>(Block) + sizeof(FreeBlock),
                            classBytes(Class) - sizeof(FreeBlock));
#else
  (void)Block;
  (void)Class;
#endif
}

void unpoison(void *Block, size_t Class) {
#ifdef VMJIT_ASAN
  ASAN_UNPOISON_MEMORY_REGION(Block, classBytes(Class));
#else
  (void)Block;
  (void)Class;
#endif
}

struct ThreadPools {
  struct List {
    FreeBlock *Head = nullptr;
    uint32_t Count = 0;
  };
  std::array<List, kNumClasses> Lists;
  RecycledObjectStats Stats;

  ~ThreadPools();
};

/// Set once this thread's pools are destroyed (a trivially destructible
/// flag, readable after that): later frees go to operator delete.
thread_local bool PoolsGone = false;
thread_local ThreadPools Pools;

ThreadPools::~ThreadPools() {
  PoolsGone = true;
  for (size_t C = 0; C < kNumClasses; ++C) {
    while (FreeBlock *B = Lists[C].Head) {
      Lists[C].Head = B->Next;
      unpoison(B, C);
      ::operator delete(B, std::align_val_t(kRecycledBlockAlignment));
    }
  }
}

} // namespace

namespace detail {

void *takeRecycledBlock(size_t Size) {
  const size_t C = classOf(Size);
  if (!PoolsGone) {
    ThreadPools &P = Pools;
    auto &L = P.Lists[C];
    if (FreeBlock *B = L.Head) {
      L.Head = B->Next;
      --L.Count;
      ++P.Stats.Reused;
      --P.Stats.Pooled;
      unpoison(B, C);
      return B;
    }
    ++P.Stats.Fresh;
  }
  return ::operator new(classBytes(C),
                        std::align_val_t(kRecycledBlockAlignment));
}

void giveRecycledBlock(void *Block, size_t Size) noexcept {
  const size_t C = classOf(Size);
  if (!PoolsGone) {
    ThreadPools &P = Pools;
    auto &L = P.Lists[C];
    if (L.Count < kMaxBlocksPerClass) {
      auto *B = static_cast<FreeBlock *>(Block);
      B->Next = L.Head;
      L.Head = B;
      ++L.Count;
      ++P.Stats.Pooled;
      poison(B, C);
      return;
    }
  }
  ::operator delete(Block, std::align_val_t(kRecycledBlockAlignment));
}

} // namespace detail

RecycledObjectStats recycledObjectStats() noexcept {
  if (PoolsGone)
    return {};
  return Pools.Stats;
}

} // namespace vmjit
