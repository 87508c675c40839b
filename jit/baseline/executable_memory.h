//===- executable_memory.h - Memory for baseline code ---------------*- C++ -*-===//
//
// Baseline compiles take microseconds, so their memory must not cost a
// system call each: on the machines vmjit runs on (virtual machines), one
// mmap or mprotect costs tens of microseconds. Code therefore lives in a
// process-wide arena of large chunks, each mapped twice from one memfd: a
// read-write view the compiler writes through and a read-execute view the
// code runs from (no page is ever writable and executable in one mapping),
// mapped in 64 KiB at a time as the chunk fills.
// Blocks are handed out first-fit and reused after their owner frees them.
// Where memfd is not available, every block gets pages of its own, made
// read-execute when sealed.
//
// Also the perf map (/tmp/perf-PID.map) that lets `perf report` name code.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_BASELINE_EXECUTABLE_MEMORY_H
#define VMJIT_JIT_BASELINE_EXECUTABLE_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vmjit::jit::baseline {

/// A block of code memory: written through writable(), run at executable()
/// (the same bytes, maybe at another address). Freed on destruction.
class CodeBlock {
public:
  /// At least `Size` bytes, 16-aligned. Throws Error("JITError") when the
  /// system refuses memory.
  explicit CodeBlock(size_t Size);
  ~CodeBlock();
  CodeBlock(const CodeBlock &) = delete;
  CodeBlock &operator=(const CodeBlock &) = delete;

  uint8_t *writable() const noexcept { return W; }
  uint8_t *executable() const noexcept { return X; }
  size_t size() const noexcept { return Size; }
  /// No more writes: the code may run from now on.
  void seal();

private:
  uint8_t *W = nullptr;
  uint8_t *X = nullptr;
  size_t Size = 0;
  bool OwnPages = false; ///< the fallback: pages of its own
};

/// Maps the arena's first chunk and its first 64 KiB now, once per
/// process (later calls return at once): what the first baseline compile
/// would otherwise pay (~0.2 ms here, most of it page faults), paid when
/// the JIT starts instead (enableJIT). Throws as CodeBlock does.
void prepareCodeMemory();

/// Appends "START SIZE NAME" to /tmp/perf-PID.map (thread-safe).
void writePerfMapEntry(const void *Start, size_t Size, std::string_view Name);

} // namespace vmjit::jit::baseline

#endif // VMJIT_JIT_BASELINE_EXECUTABLE_MEMORY_H
