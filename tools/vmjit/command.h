//===- command.h - Subcommands of the vmjit tool ---------------------------===//
//
// Each subcommand adds itself to the CLI11 app and sets the runner that
// main() calls when it was chosen. Exit statuses follow the spec: 0
// success, 1 runtime error, 2 bad usage or an input that cannot be read,
// parsed or verified.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TOOLS_VMJIT_COMMAND_H
#define VMJIT_TOOLS_VMJIT_COMMAND_H

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace vmjit {
class Error;
namespace vm {
class Executable;
}
} // namespace vmjit

namespace vmjit::tool {

enum ExitCode { kExitOk = 0, kExitRuntimeError = 1, kExitInputError = 2 };

/// Set by the chosen subcommand; returns the exit status.
using Runner = std::function<int()>;

void addAsmCommand(CLI::App &App, Runner &Run);
void addDisCommand(CLI::App &App, Runner &Run);
void addStatsCommand(CLI::App &App, Runner &Run);
void addRunCommand(CLI::App &App, Runner &Run);
void addIrCommand(CLI::App &App, Runner &Run);
void addConvertCommand(CLI::App &App, Runner &Run);
void addCompileCommand(CLI::App &App, Runner &Run);

/// Prints `E` as "vmjit: <message>" on stderr and returns the exit status
/// its kind calls for (2 for input errors, 1 otherwise).
int reportError(const Error &E);

/// True for the error kinds that mean "bad input" (exit status 2).
bool isInputError(const Error &E);

} // namespace vmjit::tool

#endif // VMJIT_TOOLS_VMJIT_COMMAND_H
