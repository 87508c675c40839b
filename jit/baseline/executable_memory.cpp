//===- executable_memory.cpp - Pages for baseline code ----------------------===//

#include "executable_memory.h"
#include "vmjit/runtime/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace vmjit::jit::baseline {

ExecutableMemory::ExecutableMemory(size_t Want) {
  const size_t Page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Size = (Want + Page - 1) / Page * Page;
  if (Size == 0)
    Size = Page;
  void *P = mmap(nullptr, Size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (P == MAP_FAILED)
    throwError("JITError", fmt::format("cannot map {} bytes for baseline "
                                       "code: {}",
                                       Size, std::strerror(errno)));
  Base = static_cast<uint8_t *>(P);
}

ExecutableMemory::~ExecutableMemory() {
  if (Base)
    munmap(Base, Size);
}

void ExecutableMemory::seal() {
  if (mprotect(Base, Size, PROT_READ | PROT_EXEC) != 0)
    throwError("JITError", fmt::format("cannot make baseline code "
                                       "executable: {}",
                                       std::strerror(errno)));
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
