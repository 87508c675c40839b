//===- convert_command.cpp - vmjit convert, and the formats asm writes -----===//
//
// vmjit convert PROG -o OUT [--format vmjit|tvm|vmasm]: load a program in
// any format vmjit reads (vmasm, vmjit binary, TVM VMExecutable) and write
// it in the chosen one. writeProgram is shared with `vmjit asm --format`.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/disassembler.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/serialize.h"
#include "vmjit/vm/tvm_format.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

namespace vmjit::tool {

void writeProgram(const vm::Executable &Exe, const std::string &Format,
                  const std::string &Input, const std::string &Path) {
  try {
    if (Format == "tvm") {
      vm::saveTvmExecutable(Exe, Path);
      return;
    }
    if (Format == "vmjit") {
      vm::saveExecutable(Exe, Path);
      return;
    }
    std::string Text = vm::disassemble(Exe);
    std::FILE *F = std::fopen(Path.c_str(), "wb");
    if (!F)
      throwError("IOError", fmt::format("cannot write '{}': {}", Path,
                                        std::strerror(errno)));
    size_t Written = std::fwrite(Text.data(), 1, Text.size(), F);
    if (std::fclose(F) != 0 || Written != Text.size())
      throwError("IOError", fmt::format("cannot write '{}'", Path));
  } catch (const Error &E) {
    // IOError already names the output; what the format cannot hold is a
    // property of the input.
    if (E.kind() == "IOError")
      throw;
    throwError(E.kind(), fmt::format("{}: cannot be written in {} format: {}",
                                     Input, Format, E.message()));
  }
}

void addConvertCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand(
      "convert", "load a program in any format vmjit reads (vmasm, vmjit "
                 "binary, TVM VMExecutable) and write it in another");
  auto Input = std::make_shared<std::string>();
  auto Output = std::make_shared<std::string>();
  auto Format = std::make_shared<std::string>("vmjit");
  Cmd->add_option("PROG", *Input, "the program, any format vmjit reads (by content; - reads standard input)")->required();
  Cmd->add_option("-o,--output", *Output, "the file to write")->required();
  Cmd->add_option("--format", *Format,
                  "what to write: vmjit (vmjit's binary format), tvm (TVM's "
                  "VMExecutable format, as ex.mod.write_to_file writes it) or "
                  "vmasm (text)")
      ->check(CLI::IsMember({"vmjit", "tvm", "vmasm"}))
      ->capture_default_str();
  Cmd->callback([&Run, Input, Output, Format] {
    Run = [Input, Output, Format] {
      try {
        auto Exe = vm::loadProgram(*Input);
        writeProgram(*Exe, *Format, *Input, *Output);
        return kExitOk;
      } catch (const Error &E) {
        return static_cast<ExitCode>(reportError(E));
      }
    };
  });
}

} // namespace vmjit::tool
