//===- executable_memory.cpp - Memory for baseline code ---------------------===//

#include "executable_memory.h"
#include "vmjit/runtime/error.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <iterator>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

// Linux 5.14's; older kernels refuse it and the pages fault in as written.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace vmjit::jit::baseline {

namespace {

size_t pageSize() {
  static const size_t P = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return P;
}

[[noreturn]] void refused(const char *What, size_t Bytes) {
  throwError("JITError", fmt::format("cannot {} {} bytes for baseline code: {}",
                                     What, Bytes, std::strerror(errno)));
}

/// The process-wide arena of dual-mapped chunks.
class Arena {
public:
  static Arena &get() {
    static Arena *A = new Arena(); // lives until exit: code may run late
    return *A;
  }

  /// False when the arena cannot work here (no memfd): use own pages.
  bool usable() const noexcept { return Fd >= 0; }

  /// A block of `Size` (16-aligned) bytes: {writable, executable}.
  std::pair<uint8_t *, uint8_t *> allocate(size_t Size) {
    std::lock_guard Lock(Mutex);
    for (auto It = Free.begin(); It != Free.end(); ++It) {
      if (It->second < Size)
        continue;
      uint8_t *X = It->first;
      size_t Left = It->second - Size;
      Free.erase(It);
      if (Left)
        Free.emplace(X + Size, Left);
      return {writableOf(X), X};
    }
    if (Chunks.empty() || Chunks.back().Used + Size > Chunks.back().Size)
      addChunk(Size);
    Chunk &C = Chunks.back();
    uint8_t *X = C.X + C.Used;
    C.Used += Size;
    populate(C);
    return {writableOf(X), X};
  }

  /// The first chunk and its first kPopulateBytes, if not there yet.
  void prepare() {
    std::lock_guard Lock(Mutex);
    if (!usable() || !Chunks.empty())
      return;
    addChunk(kPopulateBytes);
    Chunk &C = Chunks.back();
    (void)madvise(C.W, kPopulateBytes, MADV_POPULATE_WRITE);
    C.Populated = kPopulateBytes;
  }

  void release(uint8_t *X, size_t Size) {
    std::lock_guard Lock(Mutex);
    auto [It, Inserted] = Free.emplace(X, Size);
    // Merge with the free neighbours of the same chunk.
    auto Next = std::next(It);
    if (Next != Free.end() && It->first + It->second == Next->first &&
        sameChunk(It->first, Next->first)) {
      It->second += Next->second;
      Free.erase(Next);
    }
    if (It != Free.begin()) {
      auto Prev = std::prev(It);
      if (Prev->first + Prev->second == It->first &&
          sameChunk(Prev->first, It->first)) {
        Prev->second += It->second;
        Free.erase(It);
      }
    }
  }

private:
  struct Chunk {
    uint8_t *W;
    uint8_t *X;
    size_t Size;
    size_t Used;
    size_t Populated; ///< bytes of the writable view already mapped in
  };
  static constexpr size_t kChunkBytes = 4 << 20;
  /// Pages are mapped in (one madvise) this many bytes at a time as the
  /// chunk fills: a fault per page costs ~10 µs on these machines, and
  /// populating a whole chunk up front cost the first compile 20 ms.
  static constexpr size_t kPopulateBytes = 64 << 10;

  static void populate(Chunk &C) {
    if (C.Used <= C.Populated)
      return;
    size_t End = std::min(C.Size, (C.Used + kPopulateBytes - 1) /
                                      kPopulateBytes * kPopulateBytes);
    // Best effort (Linux 5.14+); without it the pages fault in as written.
    (void)madvise(C.W + C.Populated, End - C.Populated, MADV_POPULATE_WRITE);
    C.Populated = End;
  }

  Arena() { Fd = memfd_create("vmjit-baseline-code", MFD_CLOEXEC); }

  void addChunk(size_t Need) {
    const size_t Size = std::max(kChunkBytes, (Need + pageSize() - 1) /
                                                  pageSize() * pageSize());
    const off_t Off = FileBytes;
    if (ftruncate(Fd, Off + static_cast<off_t>(Size)) != 0)
      refused("reserve", Size);
    // The writable view is populated as it fills (populate); the
    // executable view faults in the pages that run.
    void *W = mmap(nullptr, Size, PROT_READ | PROT_WRITE, MAP_SHARED, Fd, Off);
    if (W == MAP_FAILED)
      refused("map", Size);
    void *X = mmap(nullptr, Size, PROT_READ | PROT_EXEC, MAP_SHARED, Fd, Off);
    if (X == MAP_FAILED) {
      munmap(W, Size);
      refused("map", Size);
    }
    FileBytes += static_cast<off_t>(Size);
    // The rest of the last chunk becomes free space.
    if (!Chunks.empty() && Chunks.back().Used < Chunks.back().Size) {
      Chunk &Last = Chunks.back();
      Free.emplace(Last.X + Last.Used, Last.Size - Last.Used);
      Last.Used = Last.Size;
    }
    Chunks.push_back({static_cast<uint8_t *>(W), static_cast<uint8_t *>(X),
                      Size, 0, 0});
  }

  const Chunk &chunkOf(const uint8_t *X) const {
    for (const Chunk &C : Chunks)
      if (X >= C.X && X < C.X + C.Size)
        return C;
    __builtin_trap(); // only blocks of this arena come back
  }
  uint8_t *writableOf(uint8_t *X) const {
    const Chunk &C = chunkOf(X);
    return C.W + (X - C.X);
  }
  bool sameChunk(const uint8_t *A, const uint8_t *B) const {
    return &chunkOf(A) == &chunkOf(B);
  }

  std::mutex Mutex;
  int Fd = -1;
  off_t FileBytes = 0;
  std::vector<Chunk> Chunks;
  /// Free blocks by executable address.
  std::map<uint8_t *, size_t> Free;
};

} // namespace

void prepareCodeMemory() { Arena::get().prepare(); }

CodeBlock::CodeBlock(size_t Want) {
  Size = (std::max<size_t>(Want, 1) + 15) & ~size_t(15);
  Arena &A = Arena::get();
  if (A.usable()) {
    std::tie(W, X) = A.allocate(Size);
    return;
  }
  OwnPages = true;
  Size = (Size + pageSize() - 1) / pageSize() * pageSize();
  void *P = mmap(nullptr, Size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (P == MAP_FAILED)
    refused("map", Size);
  W = X = static_cast<uint8_t *>(P);
}

CodeBlock::~CodeBlock() {
  if (!X)
    return;
  if (OwnPages)
    munmap(X, Size);
  else
    Arena::get().release(X, Size);
}

void CodeBlock::seal() {
  if (OwnPages && mprotect(X, Size, PROT_READ | PROT_EXEC) != 0)
    refused("protect", Size);
  // The code is published to other threads with release order by whoever
  // stores its address (the tier manager's code slots).
}

void writePerfMapEntry(const void *Start, size_t Size, std::string_view Name) {
  static std::mutex Mutex;
  static FILE *Map = nullptr;
  std::lock_guard Lock(Mutex);
  if (!Map) {
    std::string Path = fmt::format("/tmp/perf-{}.map", getpid());
    Map = std::fopen(Path.c_str(), "a");
    if (!Map)
      return; // perf support is best effort
  }
  fmt::print(Map, "{:x} {:x} {}\n", reinterpret_cast<uintptr_t>(Start), Size,
             Name);
  std::fflush(Map);
}

} // namespace vmjit::jit::baseline
