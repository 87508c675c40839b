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
                                    const vm::OpenedProgram &Prog) {
  nlohmann::ordered_json J;
  J["file"] = Name;
  J["file_bytes"] = Bytes;
  J["format"] = std::string(vm::programFormatName(Format));
  J.update(report::executableStatsJson(*Prog.Exe, Prog.Libraries));
  return J;
}

void printText(const nlohmann::ordered_json &J) {
  fmt::print("file: {} ({}, {} bytes)\n", J["file"].get<std::string>(),
             J["format"].get<std::string>(), J["file_bytes"].get<uint64_t>());
  fmt::print("{}", report::executableStatsText(J));
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
                           vm::detectProgramFormat(Bytes, Name), Prog);
        } else {
          auto Prog = vm::openProgram(*Input);
          std::error_code Ec;
          auto Size = std::filesystem::file_size(*Input, Ec);
          J = collectStats(*Input, Ec ? 0 : Size,
                           vm::detectProgramFormat(*Input), Prog);
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
