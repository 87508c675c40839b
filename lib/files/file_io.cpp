//===- file_io.cpp - Reading and writing whole files ----------------------===//

#include "vmjit/files/file_io.h"
#include "vmjit/runtime/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace vmjit::vm {

std::string readWholeFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    throwError("IOError",
               fmt::format("cannot open '{}': {}", Path, std::strerror(errno)));
  std::ostringstream S;
  S << In.rdbuf();
  if (In.bad())
    throwError("IOError", fmt::format("cannot read '{}'", Path));
  return std::move(S).str();
}

void writeWholeFile(const std::string &Path, std::string_view Bytes) {
  std::FILE *F = std::fopen(Path.c_str(), "wb");
  if (!F)
    throwError("IOError", fmt::format("cannot write '{}': {}", Path,
                                      std::strerror(errno)));
  size_t Written = std::fwrite(Bytes.data(), 1, Bytes.size(), F);
  int CloseRc = std::fclose(F);
  if (Written != Bytes.size() || CloseRc != 0)
    throwError("IOError", fmt::format("cannot write '{}': {}", Path,
                                      std::strerror(errno)));
}

} // namespace vmjit::vm
