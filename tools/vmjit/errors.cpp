//===- errors.cpp - Reporting errors and choosing exit statuses ------------===//

#include "command.h"
#include "vmjit/runtime/error.h"

#include <cstdio>
#include <string_view>

namespace vmjit::tool {

bool isInputError(const Error &E) {
  static constexpr std::string_view InputKinds[] = {
      "IOError",      "ParseError", "FormatError", "VerifyError",
      "LibraryError", "UsageError", "LinkError",   "BindError"};
  for (std::string_view K : InputKinds)
    if (E.kind() == K)
      return true;
  return false;
}

int reportError(const Error &E) {
  std::fprintf(stderr, "vmjit: %s\n", E.format().c_str());
  return isInputError(E) ? kExitInputError : kExitRuntimeError;
}

} // namespace vmjit::tool
