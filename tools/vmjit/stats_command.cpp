//===- stats_command.cpp - vmjit stats -------------------------------------===//
//
// vmjit stats PROG [--json]: functions, sizes, constants and instruction
// counts of an executable.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/report/stats_json.h"
#include "vmjit/vm/program.h"

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vmjit::tool {
namespace {

nlohmann::ordered_json collectStats(const std::string &Name, uint64_t Bytes,
                                    vm::ProgramFormat Format,
                                    const vm::Executable &Exe) {
  nlohmann::ordered_json J;
  J["file"] = Name;
  J["file_bytes"] = Bytes;
  J["format"] = std::string(vm::programFormatName(Format));
  J.update(report::executableStatsJson(Exe));
  return J;
}

void printText(const nlohmann::ordered_json &J) {
  fmt::print("file: {} ({}, {} bytes)\n", J["file"].get<std::string>(),
             J["format"].get<std::string>(), J["file_bytes"].get<uint64_t>());
  const auto &F = J["functions"];
  fmt::print("functions: {} ({} bytecode, {} packed, {} native)\n",
             F["count"].get<int64_t>(), F["by_kind"]["bytecode"].get<int64_t>(),
             F["by_kind"]["packed"].get<int64_t>(),
             F["by_kind"]["native"].get<int64_t>());
  const auto &C = J["constants"];
  std::string Kinds;
  for (const auto &[K, V] : C["by_kind"].items())
    Kinds += fmt::format("{}{} {}", Kinds.empty() ? "" : ", ", V.get<int64_t>(),
                         K);
  fmt::print("constants: {}{}{}, tensor data {} bytes\n",
             C["count"].get<int64_t>(), Kinds.empty() ? "" : " (" + Kinds,
             Kinds.empty() ? "" : ")", C["tensor_bytes"].get<uint64_t>());
  fmt::print("instructions: {} ({} words)\n",
             J["instructions"].get<int64_t>(), J["code_words"].get<int64_t>());
  fmt::print("\n{:>5}  {:<8}  {:<24}  {:>6}  {:>9}  {:>12}  {:>6}\n", "index",
             "kind", "name", "params", "registers", "instructions", "calls");
  for (const auto &E : J["function_table"]) {
    auto Num = [&](const char *K) {
      return E.contains(K) ? std::to_string(E[K].get<int64_t>())
                           : std::string("-");
    };
    fmt::print("{:>5}  {:<8}  {:<24}  {:>6}  {:>9}  {:>12}  {:>6}\n",
               E["index"].get<int64_t>(), E["kind"].get<std::string>(),
               E["name"].get<std::string>(), Num("params"), Num("registers"),
               Num("instructions"), Num("calls"));
  }
}

} // namespace

void addStatsCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("stats", "functions, sizes, constants and "
                                          "instruction counts");
  auto Input = std::make_shared<std::string>();
  auto Json = std::make_shared<bool>(false);
  Cmd->add_option("PROG", *Input,
                  "the program, any format vmjit reads (by content; - reads standard input)")
      ->required();
  Cmd->add_flag("--json", *Json, "print one JSON object instead of a table");
  Cmd->callback([&Run, Input, Json] {
    Run = [Input, Json] {
      try {
        nlohmann::ordered_json J;
        if (vm::isStreamPath(*Input)) {
          // Standard input or a pipe: read once, measured as read.
          const std::string Name = vm::inputName(*Input);
          std::string Bytes =
              vm::readInput(*Input, vm::LoadOptions().MaxFileBytes);
          auto Prog = vm::openProgramBytes(Bytes, Name);
          J = collectStats(Name, Bytes.size(),
                           vm::detectProgramFormat(Bytes, Name), *Prog.Exe);
        } else {
          auto Exe = vm::loadProgram(*Input);
          std::error_code Ec;
          auto Size = std::filesystem::file_size(*Input, Ec);
          J = collectStats(*Input, Ec ? 0 : Size,
                           vm::detectProgramFormat(*Input), *Exe);
        }
        if (*Json)
          fmt::print("{}\n", J.dump());
        else
          printText(J);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
