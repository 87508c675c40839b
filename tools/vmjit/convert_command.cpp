//===- convert_command.cpp - vmjit convert, and the formats asm writes ----===//
//
// vmjit convert PROG -o OUT [--format vmjit|tvm|vmasm]: load a program in
// any format vmjit reads (vmasm, vmjit binary, TVM VMExecutable) and write
// it in the chosen one, by default the one OUT's name says
// (vm::writeProgram and vm::formatForPath, shared with `vmjit asm
// --format` and Python's Executable.save).
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/program.h"

#include <fmt/format.h>

namespace vmjit::tool {

void addConvertCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand(
      "convert", "load a program in any format vmjit reads (vmasm, vmjit "
                 "binary, TVM VMExecutable) and write it in another");
  auto Input = std::make_shared<std::string>();
  auto Output = std::make_shared<std::string>();
  auto Format = std::make_shared<std::string>();
  Cmd->add_option("PROG", *Input, "the program, any format vmjit reads (by content; - reads standard input)")->required();
  Cmd->add_option("-o,--output", *Output, "the file to write")->required();
  Cmd->add_option("--format", *Format,
                  "what to write: vmjit (vmjit's binary format), tvm (TVM's "
                  "VMExecutable format, as ex.mod.write_to_file writes it) or "
                  "vmasm (text); default: by the output's name, vmasm for "
                  ".vmasm, tvm for .tvmexec, else vmjit")
      ->check(CLI::IsMember({"vmjit", "tvm", "vmasm"}));
  Cmd->callback([&Run, Input, Output, Format] {
    Run = [Input, Output, Format] {
      try {
        auto Exe = vm::loadProgram(*Input);
        vm::writeProgram(*Exe,
                         Format->empty() ? vm::formatForPath(*Output) : *Format,
                         *Input, *Output);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
