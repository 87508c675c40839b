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
#include <type_traits>

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
  /// Set once this thread's reaper is registered (the first block given).
  bool Reaped = false;
  /// Set once this thread's pools are emptied at its exit: later frees go
  /// to operator delete.
  bool Gone = false;
};
static_assert(std::is_trivially_destructible_v<ThreadPools>);

// Initial-exec, trivially destructible: read at a fixed offset from the
// thread pointer, with no __tls_get_addr call and no guard on each
// allocation (this is a shared library; these ~100 bytes fit glibc's
// reserve for libraries loaded later with dlopen, as by the Python
// package). The pools are emptied at the thread's exit by a reaper, a
// thread_local with a destructor touched only when the first block is
// given.
__attribute__((tls_model("initial-exec"))) thread_local ThreadPools Pools;

struct PoolsReaper {
  ~PoolsReaper() {
    Pools.Gone = true;
    for (size_t C = 0; C < kNumClasses; ++C) {
      while (FreeBlock *B = Pools.Lists[C].Head) {
        Pools.Lists[C].Head = B->Next;
        unpoison(B, C);
        ::operator delete(B, std::align_val_t(kRecycledBlockAlignment));
      }
      Pools.Lists[C].Count = 0;
    }
  }
};

[[gnu::noinline]] void registerReaper() noexcept {
  thread_local PoolsReaper Reaper;
  (void)Reaper;
  Pools.Reaped = true;
}

} // namespace

namespace detail {

void *takeRecycledBlock(size_t Size) {
  const size_t C = classOf(Size);
  ThreadPools &P = Pools;
  if (!P.Gone) {
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
  ThreadPools &P = Pools;
  if (!P.Gone) {
    if (!P.Reaped) [[unlikely]]
      registerReaper();
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
  if (Pools.Gone)
    return {};
  return Pools.Stats;
}

} // namespace vmjit
