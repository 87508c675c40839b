//===- logging.cpp - The vmjit logger --------------------------------------===//

#include "vmjit/runtime/logging.h"

#include <cstdlib>
#include <optional>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace vmjit {
namespace {

std::optional<spdlog::level::level_enum> parseLevel(std::string_view Name) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum>
      Levels[] = {{"trace", spdlog::level::trace},
                  {"debug", spdlog::level::debug},
                  {"info", spdlog::level::info},
                  {"warn", spdlog::level::warn},
                  {"warning", spdlog::level::warn},
                  {"error", spdlog::level::err},
                  {"critical", spdlog::level::critical},
                  {"off", spdlog::level::off}};
  for (const auto &[Text, Level] : Levels)
    if (Text == Name)
      return Level;
  return std::nullopt;
}

std::shared_ptr<spdlog::logger> makeLogger() {
  auto Sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto L = std::make_shared<spdlog::logger>("vmjit", std::move(Sink));
  L->set_pattern("[vmjit %l] %v");
  L->set_level(spdlog::level::off);
  if (const char *Env = std::getenv("VMJIT_LOG_LEVEL")) {
    if (auto Level = parseLevel(Env)) {
      L->set_level(*Level);
    } else {
      // Say so once, then stay silent as by default.
      L->set_level(spdlog::level::warn);
      L->warn("ignoring unknown VMJIT_LOG_LEVEL '{}' (use trace, debug, "
              "info, warn, error, critical or off)",
              Env);
      L->set_level(spdlog::level::off);
    }
  }
  return L;
}

} // namespace

spdlog::logger &logger() {
  static std::shared_ptr<spdlog::logger> *L =
      new std::shared_ptr<spdlog::logger>(makeLogger());
  return **L;
}

bool setLogLevel(std::string_view Level) {
  auto L = parseLevel(Level);
  if (!L)
    return false;
  logger().set_level(*L);
  return true;
}

} // namespace vmjit
