//===- object_cache.h - On-disk cache of JIT object files -------*- C++ -*-===//
//
// Private to vmjit_jit. Stores one relocatable object file per cache key in
// a directory: the file is Dir/<32 hex digits of XXH3-128(key)>.o. The file
// is the object exactly as the code generator produced it (so it is still a
// valid ELF file for objdump and friends), followed by the full key text
// and a 32-byte trailer:
//
//   [object bytes][key bytes][u64 object size][u64 key size]
//   [u64 XXH3-64 of object and key bytes]["VMJITOC1"]
//
// all integers little-endian. A load checks the magic, the sizes, the
// checksum and compares the stored key with the requested one, so a hash
// collision, a truncated or a corrupt file is a miss, never an error.
// Stores write a temporary file in the same directory and rename it over
// the final name, so readers (other threads, other processes) only ever
// see complete files. The directory is bounded (MaxBytes, 256 MiB by
// default): a store that takes it over removes the least recently used
// files (a hit refreshes a file's time), and temporary files an hour old
// (of a writer that died) go. A directory another user owns, or every user
// can write, is not used (as ccache and pip refuse one). Every I/O failure
// degrades to "no cache" with a warning in the vmjit log. Thread-safe.
//
// No LLVM headers here: this file compiles fast.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_OBJECT_CACHE_H
#define VMJIT_JIT_OBJECT_CACHE_H

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vmjit::jit {

class ObjectCache {
public:
  /// The default bound on the directory's object files.
  static constexpr uintmax_t kDefaultMaxBytes = uintmax_t(256) << 20;

  explicit ObjectCache(std::string Dir, uintmax_t MaxBytes = kDefaultMaxBytes);

  /// The object stored under `Key`, or nullopt on a miss (no file, a
  /// damaged file, another key with the same hash, an I/O error).
  std::optional<std::string> load(std::string_view Key) const;

  /// Stores `Object` under `Key`, replacing any previous file. Failures are
  /// logged and otherwise ignored.
  void store(std::string_view Key, std::string_view Object) const;

  /// The cache file used for `Key`.
  std::string pathFor(std::string_view Key) const;

  const std::string &directory() const { return Dir; }

private:
  /// Whether code may be loaded from (and stored in) the directory: it
  /// does not exist yet, or this user owns it and not every user can write
  /// it (a directory made here is mode 0700).
  bool trusted() const;
  void warn(const std::string &Message) const;
  /// Removes the least recently used files while the directory holds more
  /// than MaxBytes.
  void trim() const;

  std::string Dir;
  uintmax_t MaxBytes;
  /// Only the first failure is logged as a warning, later ones at debug
  /// level, so that an unwritable directory does not flood the log.
  mutable std::atomic<bool> Warned{false};
};

} // namespace vmjit::jit

#endif // VMJIT_JIT_OBJECT_CACHE_H
