//===- dis_command.cpp - vmjit dis -----------------------------------------===//
//
// vmjit dis PROG: print the vmasm text of a program in any format vmjit
// reads (vmasm, vmjit binary, TVM VMExecutable).
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/disassembler.h"
#include "vmjit/vm/program.h"

#include <cstdio>

namespace vmjit::tool {

void addDisCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("dis", "print the vmasm text of an "
                                        "executable");
  auto Input = std::make_shared<std::string>();
  Cmd->add_option("PROG", *Input,
                  "the program, any format vmjit reads (by content; - reads standard input)")
      ->required();
  Cmd->callback([&Run, Input] {
    Run = [Input] {
      try {
        auto Exe = vm::loadProgram(*Input);
        std::string Text = vm::disassemble(*Exe);
        std::fwrite(Text.data(), 1, Text.size(), stdout);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
