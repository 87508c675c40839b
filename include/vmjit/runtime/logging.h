//===- vmjit/runtime/logging.h - The vmjit logger ----------------*- C++ -*-===//
//
// One spdlog logger named "vmjit" writing to stderr. Silent by default; the
// level comes from VMJIT_LOG_LEVEL (trace, debug, info, warn, error,
// critical, off) when the logger is first used, or from setLogLevel.
// Include this only in .cpp files: spdlog is heavy.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_LOGGING_H
#define VMJIT_RUNTIME_LOGGING_H

#include "vmjit/runtime/c_api.h"

#include <spdlog/spdlog.h>

#include <string_view>

namespace vmjit {

/// The process-wide vmjit logger.
VMJIT_DLL spdlog::logger &logger();

/// Sets the level by name; returns false (and changes nothing) for an
/// unknown name.
VMJIT_DLL bool setLogLevel(std::string_view Level);

} // namespace vmjit

#endif // VMJIT_RUNTIME_LOGGING_H
