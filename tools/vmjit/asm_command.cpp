//===- asm_command.cpp - vmjit asm -----------------------------------------===//
//
// vmjit asm PROG.vmasm -o OUT [--format vmjit|tvm]: assemble and verify,
// write vmjit's binary format (the default) or TVM's VMExecutable format.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/program.h"

#include <fmt/format.h>

namespace vmjit::tool {

void addAsmCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("asm", "assemble a .vmasm file into a binary "
                                        "executable");
  auto Input = std::make_shared<std::string>();
  auto Output = std::make_shared<std::string>();
  auto Format = std::make_shared<std::string>("vmjit");
  auto Strip = std::make_shared<bool>(false);
  auto StripLines = std::make_shared<bool>(false);
  Cmd->add_option("PROG", *Input, "the vmasm text (- reads standard input)")
      ->required();
  Cmd->add_option("-o,--output", *Output, "the binary executable to write")
      ->required();
  Cmd->add_option("--format", *Format,
                  "vmjit (vmjit's binary format) or tvm (TVM's VMExecutable "
                  "format, as ex.mod.write_to_file writes it)")
      ->check(CLI::IsMember({"vmjit", "tvm"}))
      ->capture_default_str();
  Cmd->add_flag("--strip-names", *Strip,
                "leave out the register, label and constant names (the NAME "
                "and CNAM sections `vmjit dis` reads them back from) and the "
                "source positions");
  Cmd->add_flag("--strip-lines", *StripLines,
                "leave out the source positions only (the LINE section: "
                "runtime errors name each frame's FILE:LINE:COL from it)");
  Cmd->callback([&Run, Input, Output, Format, Strip, StripLines] {
    Run = [Input, Output, Format, Strip, StripLines] {
      try {
        // "-" is standard input. A program in another format is named as
        // what it is; text that is not vmasm gets the assembler's message.
        const std::string Name = vm::inputName(*Input);
        std::string Text = vm::readInput(*Input, vm::LoadOptions().MaxFileBytes);
        vm::ProgramFormat F = vm::detectProgramFormat(Text, Name);
        if (F != vm::ProgramFormat::Vmasm && F != vm::ProgramFormat::Unknown)
          throwError("FormatError",
                     fmt::format("{}: this is {}, not vmasm text (`vmjit dis` "
                                 "prints a program's text; `vmjit convert` "
                                 "writes it in another format)",
                                 Name, vm::describeProgramFormat(F)));
        auto Exe = vm::assemble(Text, Name);
        if (*Strip) {
          Exe->setDebugNames({});
          Exe->setConstantNames({});
        }
        if (*Strip || *StripLines)
          Exe->setSourceMap({});
        vm::writeProgram(*Exe, *Format, *Input, *Output);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
