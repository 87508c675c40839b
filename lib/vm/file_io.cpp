//===- file_io.cpp - Reading whole files -----------------------------------===//

#include "file_io.h"
#include "vmjit/runtime/error.h"

#include <cerrno>
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

} // namespace vmjit::vm
