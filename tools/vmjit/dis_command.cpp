//===- dis_command.cpp - vmjit dis -----------------------------------------===//
//
// vmjit dis PROG [-o OUT.vmasm] [--npy-dir DIR] [--npy-min-elements N]:
// print (or write) the vmasm text of a program in any format vmjit reads.
// With --npy-dir, tensor constants of at least N elements (default 64) go
// to DIR/cK.npy (K: the constant's index) and the text names them with
// `npy "PATH"`, relative to the text's file, so that `vmjit asm` of the
// text gives the same program.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/disassembler.h"
#include "vmjit/vm/program.h"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace vmjit::tool {
namespace {

struct DisOptions {
  std::string Input;
  std::string Output;
  std::string NpyDir;
  int64_t NpyMinElements = 64;
};

int dis(const DisOptions &O) {
  namespace fs = std::filesystem;
  auto Exe = vm::loadProgram(O.Input);
  vm::DisassembleOptions DO;
  DO.NpyMinElements = O.NpyMinElements;
  // Paths in the text are relative to the text's directory (the current
  // one when it goes to stdout).
  fs::path TextDir =
      O.Output.empty() ? fs::path(".") : fs::path(O.Output).parent_path();
  if (TextDir.empty())
    TextDir = ".";
  if (!O.NpyDir.empty()) {
    std::error_code EC;
    fs::create_directories(O.NpyDir, EC);
    if (EC)
      throwError("IOError", fmt::format("--npy-dir {}: cannot create it: {}",
                                        O.NpyDir, EC.message()));
    DO.SaveTensor = [&](size_t Index, const Tensor &T) {
      fs::path File = fs::path(O.NpyDir) / fmt::format("c{}.npy", Index);
      vm::writeNpy(T, File.string());
      return fs::proximate(File, TextDir).generic_string();
    };
  }
  std::string Text = vm::disassemble(*Exe, DO);
  if (O.Output.empty()) {
    std::fwrite(Text.data(), 1, Text.size(), stdout);
    return kExitOk;
  }
  std::ofstream Out(O.Output, std::ios::binary);
  Out.write(Text.data(), static_cast<std::streamsize>(Text.size()));
  if (!Out.flush())
    throwError("IOError", fmt::format("cannot write '{}'", O.Output));
  return kExitOk;
}

} // namespace

void addDisCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("dis", "print the vmasm text of an "
                                        "executable");
  auto O = std::make_shared<DisOptions>();
  Cmd->add_option("PROG", O->Input,
                  "the program, any format vmjit reads (by content; - reads "
                  "standard input)")
      ->required();
  Cmd->add_option("-o,--output", O->Output,
                  "write the text to this file (default: standard output)");
  Cmd->add_option("--npy-dir", O->NpyDir,
                  "save large tensor constants as DIR/cK.npy and name them "
                  "in the text (npy \"PATH\"), instead of writing their "
                  "values inline");
  Cmd->add_option("--npy-min-elements", O->NpyMinElements,
                  "with --npy-dir: tensors of at least N elements go to "
                  "files (default: 64)")
      ->check(CLI::PositiveNumber);
  Cmd->callback([&Run, O] {
    Run = [O] {
      try {
        return static_cast<int>(dis(*O));
      } catch (const Error &E) {
        return reportError(E);
      }
    };
  });
}

} // namespace vmjit::tool
