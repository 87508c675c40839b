//===- object_cache.cpp - On-disk cache of JIT object files ----------------===//
//
// See object_cache.h for the file layout. Plain POSIX I/O and xxHash.
//
//===----------------------------------------------------------------------===//

#include "object_cache.h"

#include "vmjit/runtime/logging.h"

#include <fmt/format.h>

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace vmjit::jit {

namespace {

constexpr char Magic[8] = {'V', 'M', 'J', 'I', 'T', 'O', 'C', '1'};
constexpr size_t TrailerSize = 32;
/// Anything bigger is not one of ours (a JIT unit is kilobytes).
constexpr uint64_t MaxFileSize = uint64_t(1) << 30;

void putU64(char *P, uint64_t V) {
  for (int I = 0; I < 8; ++I)
    P[I] = static_cast<char>((V >> (8 * I)) & 0xff);
}

uint64_t getU64(const char *P) {
  uint64_t V = 0;
  for (int I = 0; I < 8; ++I)
    V |= uint64_t(static_cast<unsigned char>(P[I])) << (8 * I);
  return V;
}

std::string errnoText(int Err) { return std::strerror(Err); }

/// Writes all of `Data` to `FD`; returns 0 or an errno value.
int writeAll(int FD, const char *Data, size_t Size) {
  while (Size > 0) {
    ssize_t N = ::write(FD, Data, Size);
    if (N < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    Data += N;
    Size -= static_cast<size_t>(N);
  }
  return 0;
}

/// Reads the whole file at `Path`; returns 0 or an errno value (EFBIG for
/// an implausibly large file).
int readAll(const std::string &Path, std::string &Out) {
  int FD = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC);
  if (FD < 0)
    return errno;
  struct stat St;
  if (::fstat(FD, &St) != 0) {
    int Err = errno;
    ::close(FD);
    return Err;
  }
  if (St.st_size < 0 || static_cast<uint64_t>(St.st_size) > MaxFileSize) {
    ::close(FD);
    return EFBIG;
  }
  Out.resize(static_cast<size_t>(St.st_size));
  size_t Done = 0;
  while (Done < Out.size()) {
    ssize_t N = ::read(FD, Out.data() + Done, Out.size() - Done);
    if (N < 0) {
      if (errno == EINTR)
        continue;
      int Err = errno;
      ::close(FD);
      return Err;
    }
    if (N == 0)
      break; // Shrunk under us: the checks below reject it.
    Done += static_cast<size_t>(N);
  }
  Out.resize(Done);
  ::close(FD);
  return 0;
}

} // namespace

ObjectCache::ObjectCache(std::string Dir, uintmax_t MaxBytes)
    : Dir(std::move(Dir)), MaxBytes(MaxBytes) {}

std::string ObjectCache::pathFor(std::string_view Key) const {
  XXH128_hash_t H = XXH3_128bits(Key.data(), Key.size());
  char Hex[33];
  std::snprintf(Hex, sizeof(Hex), "%016llx%016llx",
                static_cast<unsigned long long>(H.high64),
                static_cast<unsigned long long>(H.low64));
  return Dir + "/" + Hex + ".o";
}

void ObjectCache::warn(const std::string &Message) const {
  if (!Warned.exchange(true))
    logger().warn("JIT object cache: {} (continuing without it)", Message);
  else
    logger().debug("JIT object cache: {}", Message);
}

bool ObjectCache::trusted() const {
  // As ccache and pip: code is loaded from a directory only this user can
  // write (one that does not exist yet is made by this user).
  struct stat St;
  if (::stat(Dir.c_str(), &St) != 0)
    return errno == ENOENT;
  if (St.st_uid != ::geteuid()) {
    warn(fmt::format("directory {} belongs to user {}, not to this one: not "
                     "loading code from it",
                     Dir, St.st_uid));
    return false;
  }
  if (St.st_mode & S_IWOTH) {
    warn(fmt::format("directory {} can be written by every user (mode "
                     "{:04o}): not loading code from it",
                     Dir, St.st_mode & 07777));
    return false;
  }
  return true;
}

std::optional<std::string> ObjectCache::load(std::string_view Key) const {
  if (!trusted())
    return std::nullopt;
  std::string Path = pathFor(Key);
  std::string Data;
  if (int Err = readAll(Path, Data)) {
    if (Err != ENOENT)
      warn("cannot read " + Path + ": " + errnoText(Err));
    return std::nullopt;
  }
  if (Data.size() < TrailerSize ||
      std::memcmp(Data.data() + Data.size() - 8, Magic, 8) != 0) {
    logger().warn("JIT object cache: ignoring damaged file {}", Path);
    return std::nullopt;
  }
  const char *T = Data.data() + Data.size() - TrailerSize;
  uint64_t ObjSize = getU64(T), KeySize = getU64(T + 8);
  uint64_t Sum = getU64(T + 16);
  uint64_t Payload = Data.size() - TrailerSize;
  if (ObjSize > Payload || KeySize != Payload - ObjSize ||
      XXH3_64bits(Data.data(), Payload) != Sum) {
    logger().warn("JIT object cache: ignoring damaged file {}", Path);
    return std::nullopt;
  }
  if (std::string_view(Data.data() + ObjSize, KeySize) != Key) {
    logger().debug("JIT object cache: hash collision on {}", Path);
    return std::nullopt;
  }
  Data.resize(ObjSize);
  // A hit makes the file the newest: trimming removes the least used.
  ::utimensat(AT_FDCWD, Path.c_str(), nullptr, 0);
  return Data;
}

void ObjectCache::store(std::string_view Key, std::string_view Object) const {
  std::error_code EC;
  // A directory made here is this user's alone.
  if (std::filesystem::create_directories(Dir, EC))
    ::chmod(Dir.c_str(), 0700);
  if (EC) {
    warn("cannot create directory " + Dir + ": " + EC.message());
    return;
  }
  if (!trusted())
    return;
  std::string Path = pathFor(Key);

  // A name no other writer uses: pid plus a per-process counter, created
  // exclusively (a stale file of a dead process with the same pid just
  // moves us on to the next number).
  static std::atomic<unsigned> Counter{0};
  std::string Tmp;
  int FD = -1;
  for (int Attempt = 0; Attempt < 16 && FD < 0; ++Attempt) {
    Tmp = Path + ".tmp." + std::to_string(::getpid()) + "." +
          std::to_string(Counter.fetch_add(1));
    FD = ::open(Tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (FD < 0 && errno != EEXIST)
      break;
  }
  if (FD < 0) {
    warn("cannot create " + Tmp + ": " + errnoText(errno));
    return;
  }

  std::string Trailer(TrailerSize, '\0');
  putU64(Trailer.data(), Object.size());
  putU64(Trailer.data() + 8, Key.size());
  XXH3_state_t *State = XXH3_createState();
  uint64_t Sum = 0;
  if (State) {
    XXH3_64bits_reset(State);
    XXH3_64bits_update(State, Object.data(), Object.size());
    XXH3_64bits_update(State, Key.data(), Key.size());
    Sum = XXH3_64bits_digest(State);
    XXH3_freeState(State);
  }
  putU64(Trailer.data() + 16, Sum);
  std::memcpy(Trailer.data() + 24, Magic, 8);

  int Err = 0;
  if (!State)
    Err = ENOMEM;
  if (!Err)
    Err = writeAll(FD, Object.data(), Object.size());
  if (!Err)
    Err = writeAll(FD, Key.data(), Key.size());
  if (!Err)
    Err = writeAll(FD, Trailer.data(), Trailer.size());
  if (::close(FD) != 0 && !Err)
    Err = errno;
  if (!Err && ::rename(Tmp.c_str(), Path.c_str()) != 0)
    Err = errno;
  if (Err) {
    ::unlink(Tmp.c_str());
    warn("cannot write " + Path + ": " + errnoText(Err));
    return;
  }
  trim();
}

void ObjectCache::trim() const {
  // Oldest first (a hit refreshes a file's time, see load), down to 3/4
  // of the bound so that stores do not trim every time.
  struct Entry {
    std::filesystem::file_time_type Time;
    uintmax_t Size;
    std::filesystem::path Path;
  };
  std::vector<Entry> Files;
  uintmax_t Total = 0;
  std::error_code EC;
  // A writer that died between creating its temporary file and renaming
  // it left the file behind: one an hour old is nobody's any more.
  const auto StaleBefore =
      std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto &E : std::filesystem::directory_iterator(Dir, EC)) {
    std::error_code FEC;
    if (E.path().filename().string().find(".o.tmp.") != std::string::npos) {
      if (E.last_write_time(FEC) < StaleBefore && !FEC)
        std::filesystem::remove(E.path(), FEC);
      continue;
    }
    if (E.path().extension() != ".o" || !E.is_regular_file(FEC))
      continue;
    uintmax_t Size = E.file_size(FEC);
    auto Time = E.last_write_time(FEC);
    if (FEC)
      continue;
    Files.push_back({Time, Size, E.path()});
    Total += Size;
  }
  if (EC || Total <= MaxBytes)
    return;
  std::sort(Files.begin(), Files.end(),
            [](const Entry &A, const Entry &B) { return A.Time < B.Time; });
  for (const Entry &F : Files) {
    if (Total <= MaxBytes / 4 * 3)
      break;
    std::error_code REC;
    if (std::filesystem::remove(F.Path, REC))
      Total -= F.Size;
  }
  logger().debug("JIT object cache: trimmed {} to {} bytes", Dir, Total);
}

} // namespace vmjit::jit
