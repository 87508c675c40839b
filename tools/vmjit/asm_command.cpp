//===- asm_command.cpp - vmjit asm -----------------------------------------===//
//
// vmjit asm PROG.vmasm -o PROG.bin: assemble and verify, write the binary.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/serialize.h"

namespace vmjit::tool {

void addAsmCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("asm", "assemble a .vmasm file into a binary "
                                        "executable");
  auto Input = std::make_shared<std::string>();
  auto Output = std::make_shared<std::string>();
  Cmd->add_option("PROG", *Input, "the .vmasm file")->required();
  Cmd->add_option("-o,--output", *Output, "the binary executable to write")
      ->required();
  Cmd->callback([&Run, Input, Output] {
    Run = [Input, Output] {
      try {
        auto Exe = vm::assembleFile(*Input);
        vm::saveExecutable(*Exe, *Output);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
