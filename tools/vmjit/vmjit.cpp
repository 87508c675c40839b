//===- vmjit.cpp - The vmjit command ---------------------------------------===//
//
// `vmjit`: the command-line face of the engine. This file wires up the
// global options; each subcommand lives in its own file.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "run_args.h"
#include "vmjit/runtime/logging.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/host_info.h"
#include "vmjit/jit/tier_manager.h"
#endif

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#ifndef VMJIT_VERSION
#define VMJIT_VERSION "unknown"
#endif

namespace {

std::string versionText() {
  std::string S = std::string("vmjit ") + VMJIT_VERSION + "\n";
#ifdef VMJIT_HAVE_JIT
  const vmjit::jit::HostInfo &H = vmjit::jit::hostInfo();
  S += "  LLVM " + H.LLVMVersion + ", target " + H.Triple + ", cpu " + H.CPU +
       "\n";
  // Part of every object-cache key: code another build made is not used.
  S += "  JIT build " + vmjit::jit::jitBuildIdentity() + "\n";
#endif
  // The execution modes this build has (tests read this line).
#ifdef VMJIT_HAVE_JIT
  S += vmjit::jit::baselineAvailable()
           ? "  modes: bytecode, baseline, compiled, tiered"
           : "  modes: bytecode, compiled, tiered (no baseline tier for this "
             "target)";
#else
  S += "  modes: bytecode, tiered (built without the JIT: tiered runs the "
       "interpreter only)";
#endif
  return S;
}

} // namespace

int main(int Argc, char **Argv) {
  CLI::App App{"vmjit: run register-bytecode executables with a tier-up JIT",
               "vmjit"};
  // Every message has the form "vmjit: KIND: message", CLI11's own
  // included (a bad command line is a UsageError, exit status 2).
  App.failure_message([](const CLI::App *, const CLI::Error &E) {
    return std::string("vmjit: UsageError: ") + E.what() +
           "\nRun with --help for more information.\n";
  });
  // Global options (--log-level) may also follow the subcommand.
  App.fallthrough();
  App.set_version_flag("--version", versionText);
  std::string LogLevel;
  App.add_option("--log-level", LogLevel,
                 "log level: trace, debug, info, warn, error, critical, off "
                 "(default: VMJIT_LOG_LEVEL, else off)");
  App.require_subcommand(0, 1);
  vmjit::tool::Runner Run;
  vmjit::tool::addAsmCommand(App, Run);
  vmjit::tool::addDisCommand(App, Run);
  vmjit::tool::addStatsCommand(App, Run);
  vmjit::tool::addRunCommand(App, Run);
  vmjit::tool::addIrCommand(App, Run);
  vmjit::tool::addConvertCommand(App, Run);
  vmjit::tool::addCompileCommand(App, Run);
  // CLI11 takes the arguments last first.
  std::vector<std::string> Args(Argv + 1, Argv + Argc);
  vmjit::tool::protectRunValues(Args);
  std::reverse(Args.begin(), Args.end());
  try {
    App.parse(std::move(Args));
  } catch (const CLI::ParseError &E) {
    int Code = App.exit(E);
    return Code == 0 ? 0 : 2;
  }
  // The logger reads VMJIT_LOG_LEVEL when it is made, and warns once about
  // a value it does not know: make it now, not on the first log line.
  (void)vmjit::logger();
  if (!LogLevel.empty() && !vmjit::setLogLevel(LogLevel)) {
    std::fprintf(stderr, "vmjit: UsageError: unknown --log-level '%s'\n",
                 LogLevel.c_str());
    return 2;
  }
  if (!Run) {
    std::fputs(App.help().c_str(), stdout);
    return 0;
  }
  const int Code = Run();
#ifdef VMJIT_HAVE_JIT
  // Background compiles (tier 2, the kernel tier) stop here, before any
  // static is destroyed: the atexit fallback would run after the static
  // destructors of libraries loaded later (libvmjit_polly.so's libLLVM).
  vmjit::jit::stopBackgroundCompiles();
#endif
  return Code;
}
