//===- executable_memory.h - Pages for baseline code ----------------*- C++ -*-===//
//
// Baseline code lives in pages of its own: written while they are
// read-write, then sealed read-execute (never both), and unmapped when the
// owner goes. Also the perf map (/tmp/perf-PID.map) that lets `perf
// report` name the code.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_BASELINE_EXECUTABLE_MEMORY_H
#define VMJIT_JIT_BASELINE_EXECUTABLE_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vmjit::jit::baseline {

class ExecutableMemory {
public:
  /// Maps at least `Size` bytes read-write. Throws Error("JITError") when
  /// the system refuses.
  explicit ExecutableMemory(size_t Size);
  ~ExecutableMemory();
  ExecutableMemory(const ExecutableMemory &) = delete;
  ExecutableMemory &operator=(const ExecutableMemory &) = delete;

  uint8_t *data() const noexcept { return Base; }
  size_t size() const noexcept { return Size; }
  /// Makes the pages read-execute; no more writes.
  void seal();

private:
  uint8_t *Base = nullptr;
  size_t Size = 0;
};

/// Appends "START SIZE NAME" to /tmp/perf-PID.map (thread-safe).
void writePerfMapEntry(const void *Start, size_t Size, std::string_view Name);

} // namespace vmjit::jit::baseline

#endif // VMJIT_JIT_BASELINE_EXECUTABLE_MEMORY_H
