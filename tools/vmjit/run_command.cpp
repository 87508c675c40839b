//===- run_command.cpp - vmjit run -----------------------------------------===//
//
// vmjit run PROG [ARG...] [--func F] [--mode M] [--lib L]... [--repeat N]
//           [--json] [--output OUT.npy] [--stats] [--tier-threshold N]
//           [--max-steps N] [--timeout-ms MS] [--max-call-depth N]
// Loads PROG (.bin or .vmasm), creates a VM, calls the function, prints the
// result (as the JSON value encoding), and exits 0, 1 (runtime error) or 2
// (bad usage or input). Ctrl-C (SIGINT) interrupts the running call, which
// then fails with an InterruptedError (exit 1); a second one kills.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "run_args.h"
#include "value_json.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/npy.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/tier_manager.h"
#endif

#include <atomic>
#include <charconv>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>

namespace vmjit::tool {
namespace {

using nlohmann::ordered_json;

struct RunOptions {
  std::string Program;
  std::vector<std::string> Args;
  std::string Func = "main";
  std::string Mode = "tiered";
  std::vector<std::string> Libs;
  int64_t TierThreshold = 0;     // 0: not given
  int64_t BaselineThreshold = 0; // 0: not given
  int OptLevel = -1;         // -1: the engine's default
  std::string CacheDir;
  bool NoCache = false;
  bool Perf = false;
  bool Gdb = false;
  int64_t Repeat = 1;
  bool Json = false;
  std::string Output;
  bool Stats = false;
  uint64_t MaxSteps = 0;    // 0: unlimited
  int64_t TimeoutMs = 0;    // 0: none
  int64_t MaxCallDepth = 0; // 0: the VM's default
};

/// The VM a SIGINT interrupts (async-signal-safe: interrupt() is one
/// lock-free atomic store).
std::atomic<vm::VirtualMachine *> InterruptTarget{nullptr};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

extern "C" void onSigint(int) {
  if (vm::VirtualMachine *VM = InterruptTarget.load())
    VM->interrupt();
  std::signal(SIGINT, SIG_DFL); // a second Ctrl-C ends the process
}

/// Routes SIGINT to `VM` while it runs the command's calls.
class SigintScope {
public:
  explicit SigintScope(vm::VirtualMachine &VM) {
    InterruptTarget.store(&VM);
    Old = std::signal(SIGINT, onSigint);
  }
  ~SigintScope() {
    std::signal(SIGINT, Old == SIG_ERR ? SIG_DFL : Old);
    InterruptTarget.store(nullptr);
  }

private:
  void (*Old)(int) = SIG_DFL;
};

#ifdef VMJIT_HAVE_JIT
const char *kJitNote = "JIT: LLVM ORC";
#else
const char *kJitNote = "the JIT is not available in this build: functions "
                       "run on the interpreter";
#endif

ordered_json collectStats(const vm::VirtualMachine &VM, const RunOptions &O,
                          double WallMs) {
  ordered_json S;
  S["mode"] = O.Mode;
  S["jit"] = kJitNote;
  S["repeat"] = O.Repeat;
  S["wall_ms"] = WallMs;
  ordered_json Fns = ordered_json::array();
  const vm::Executable &Exe = VM.executable();
#ifdef VMJIT_HAVE_JIT
  jit::TierManager *TM = jit::tierManagerOf(VM);
  if (TM) {
    S["baseline_threshold"] = TM->threshold();
    S["tier_threshold"] = TM->options().Threshold;
  }
  int64_t Compiles = 0, CacheHits = 0, BaselineCompiles = 0;
#endif
  for (size_t I = 0; I < Exe.functions().size(); ++I) {
    const vm::FunctionInfo &F = Exe.functions()[I];
    int64_t K = static_cast<int64_t>(I);
    uint64_t Calls = VM.callCount(K);
    if (F.Kind != vm::FunctionKind::Bytecode && Calls == 0)
      continue;
    ordered_json E;
    E["name"] = F.Name;
    E["kind"] = std::string(vm::functionKindName(F.Kind));
    E["calls"] = Calls;
    if (F.Kind != vm::FunctionKind::Bytecode) {
      E["tier"] = "packed";
      Fns.push_back(std::move(E));
      continue;
    }
    const bool Native = VM.isNative(K) || VM.osrCount(K);
    E["tier"] = Native ? "native" : "interpreter";
    E["backward_jumps"] = VM.backEdgeCount(K);
    E["osr_entries"] = VM.osrCount(K);
    double CompileMs = 0;
#ifdef VMJIT_HAVE_JIT
    if (TM) {
      jit::FunctionJITStats JS = TM->stats(K);
      // Which native tier the function reached: "baseline" (tier 1,
      // copy-and-patch) or "optimized" (tier 2, LLVM).
      if (Native)
        E["tier"] = JS.tier() == 2 ? "optimized" : "baseline";
      // How many calls each tier ran.
      const uint64_t Interp = VM.interpretedCalls(K);
      const uint64_t Base = O.Mode == "baseline" ? Calls - Interp
                                                 : JS.BaselineCalls;
      E["calls_by_tier"] = {{"interpreter", Interp},
                            {"baseline", Base},
                            {"optimized", Calls - Interp - Base}};
      CompileMs = JS.CompileMs;
      E["baseline"] = JS.Baseline;
      E["baseline_us"] = JS.BaselineUs;
      E["compiled"] = JS.Compiled;
      E["cache_hit"] = JS.CacheHit;
      if (JS.UnitFunctions > 1)
        E["unit_functions"] = JS.UnitFunctions;
      if (JS.Requested && !JS.Compiled && !JS.Failed)
        E["tier2"] = "queued";
      if (JS.StaysAtBaseline)
        E["tier2"] = "not worth it";
      if (JS.Failed)
        E["compile_failed"] = true;
      Compiles += JS.Compiled && !JS.CacheHit;
      CacheHits += JS.Compiled && JS.CacheHit;
      BaselineCompiles += JS.Baseline;
    }
#endif
    E["compile_ms"] = CompileMs;
    Fns.push_back(std::move(E));
  }
#ifdef VMJIT_HAVE_JIT
  S["baseline_compiles"] = BaselineCompiles;
  S["compiles"] = Compiles;
  S["cache_hits"] = CacheHits;
#endif
  S["functions"] = std::move(Fns);
  return S;
}

void printStatsText(const ordered_json &S) {
  fmt::print(stderr, "mode: {} ({})\n", S["mode"].get<std::string>(),
             S["jit"].get<std::string>());
  fmt::print(stderr, "calls: {} in {:.3f} ms", S["repeat"].get<int64_t>(),
             S["wall_ms"].get<double>());
  if (S.contains("compiles"))
    fmt::print(stderr,
               "; baseline compiles: {}, compiles: {}, object cache hits: {}",
               S["baseline_compiles"].get<int64_t>(),
               S["compiles"].get<int64_t>(), S["cache_hits"].get<int64_t>());
  fmt::print(stderr,
             "\n{:<20} {:<8} {:>10} {:<16} {:>22} {:>11} {:>10} {:>4}\n",
             "function", "kind", "calls", "tier", "calls interp/base/opt",
             "baseline us", "compile ms", "osr");
  for (const auto &F : S["functions"]) {
    std::string Tier = F["tier"].get<std::string>();
    if (F.contains("tier2") && F["tier2"] == "queued")
      Tier += "+queued";
    std::string ByTier = "-";
    if (F.contains("calls_by_tier")) {
      const auto &B = F["calls_by_tier"];
      ByTier = fmt::format("{}/{}/{}", B["interpreter"].get<uint64_t>(),
                           B["baseline"].get<uint64_t>(),
                           B["optimized"].get<uint64_t>());
    }
    fmt::print(stderr,
               "{:<20} {:<8} {:>10} {:<16} {:>22} {:>11.1f} {:>10.3f} {:>4}\n",
               F["name"].get<std::string>(), F["kind"].get<std::string>(),
               F["calls"].get<uint64_t>(), Tier, ByTier,
               F.value("baseline_us", 0.0), F.value("compile_ms", 0.0),
               F.value("osr_entries", uint64_t(0)));
  }
}

ordered_json errorJson(const Error &E) {
  return {{"kind", E.kind()}, {"message", E.message()}, {"frames", E.frames()}};
}

int run(const RunOptions &O) {
  ordered_json Out;
  auto Fail = [&](const Error &E) {
    if (O.Json) {
      Out["error"] = errorJson(E);
      Out["mode"] = O.Mode;
      Out["func"] = O.Func;
      fmt::print("{}\n", Out.dump());
    }
    return reportError(E);
  };
  std::unique_ptr<vm::VirtualMachine> VM;
  std::vector<Any> Args;
  try {
    const std::optional<vm::ExecMode> Mode = vm::parseExecMode(O.Mode);
    if (!Mode)
      throwError("UsageError",
                 fmt::format("--mode must be bytecode, baseline, compiled or "
                             "tiered, not '{}'",
                             O.Mode));
    if (O.Repeat < 1)
      throwError("UsageError", "--repeat must be at least 1");
#ifndef VMJIT_HAVE_JIT
    if (*Mode == vm::ExecMode::Compiled || *Mode == vm::ExecMode::Baseline)
      throwError("UsageError",
                 fmt::format("--mode {} needs the JIT, which is not available "
                             "in this build (use --mode bytecode or tiered)",
                             O.Mode));
#endif
    for (size_t I = 0; I < O.Args.size(); ++I)
      Args.push_back(parseRunArgument(O.Args[I], I + 1));
    vm::OpenedProgram Prog = vm::openProgram(O.Program);
    auto Exe = Prog.Exe;
    vm::VMOptions Opts;
    // A model library's own kernels come first, as in TVM.
    Opts.Libraries = std::move(Prog.Libraries);
    Opts.Limits.MaxSteps = O.MaxSteps;
    Opts.Limits.Timeout = std::chrono::milliseconds(O.TimeoutMs);
    if (O.MaxCallDepth > 0)
      Opts.MaxCallDepth = O.MaxCallDepth;
    for (const std::string &L : O.Libs)
      Opts.Libraries.push_back(KernelLibrary::load(L));
    VM = vm::VirtualMachine::create(Exe, std::move(Opts));
#ifdef VMJIT_HAVE_JIT
    jit::JITOptions JO;
    JO.Mode = *Mode;
    JO.Threshold = O.TierThreshold;
    JO.BaselineThreshold = O.BaselineThreshold;
    if (O.OptLevel >= 0)
      JO.OptLevel = O.OptLevel;
    // The object cache is on by default for the command (a second run of
    // the same program compiles nothing at tier 2).
    JO.NoCache = O.NoCache;
    JO.CacheDir = O.CacheDir;
    if (!O.NoCache && JO.CacheDir.empty() && !std::getenv("VMJIT_CACHE_DIR"))
      JO.CacheDir = jit::defaultCacheDir();
    JO.PerfSupport = O.Perf;
    JO.DebuggerSupport = O.Gdb;
    jit::enableJIT(*VM, JO);
#endif
    // A missing function or a wrong argument count is a usage error.
    const vm::FunctionInfo &F = Exe->function(VM->functionIndex(O.Func));
    if (F.Kind == vm::FunctionKind::Bytecode &&
        static_cast<int64_t>(Args.size()) != F.NumParams)
      throwError("UsageError",
                 fmt::format("function '{}' takes {} argument{}, {} given",
                             O.Func, F.NumParams, F.NumParams == 1 ? "" : "s",
                             Args.size()));
  } catch (const Error &E) {
    if (E.kind() == "LookupError")
      return Fail(Error("UsageError", O.Program + ": " + E.message()));
    return Fail(E);
  }

  Any Result;
  std::vector<AnyView> Views(Args.begin(), Args.end());
  auto Start = std::chrono::steady_clock::now();
  try {
    SigintScope Sigint(*VM);
    for (int64_t I = 0; I < O.Repeat; ++I)
      Result = VM->invoke(O.Func, Views);
  } catch (const Error &E) {
    return Fail(E);
  }
  double WallMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - Start)
                      .count();

  if (!O.Output.empty()) {
    try {
      auto T = Result.as<Tensor>();
      if (!T)
        throwError("UsageError",
                   fmt::format("--output {}: the result is not a tensor but "
                               "a value of type {}",
                               O.Output, Result.typeName()));
      vm::writeNpy(*T, O.Output);
    } catch (const Error &E) {
      return Fail(E);
    }
  }

  ordered_json Stats;
  if (O.Stats)
    Stats = collectStats(*VM, O, WallMs);
  if (O.Json) {
    Out["result"] = valueToJson(Result);
    Out["mode"] = O.Mode;
    Out["func"] = O.Func;
    if (O.Stats)
      Out["stats"] = Stats;
    fmt::print("{}\n", Out.dump());
  } else {
    fmt::print("{}\n", valueToJson(Result).dump());
    if (O.Stats)
      printStatsText(Stats);
  }
  return kExitOk;
}

/// Checks a count option: "--repeat: must be a positive integer, not '0'"
/// (CLI::PositiveNumber would print the range up to DBL_MAX).
CLI::Validator positiveCount() {
  return CLI::Validator(
      [](std::string &S) -> std::string {
        int64_t V = 0;
        const char *E = S.data() + S.size();
        auto [P, Ec] = std::from_chars(S.data(), E, V);
        if (Ec != std::errc() || P != E || V < 1)
          return fmt::format("must be a positive integer, not '{}'", S);
        return {};
      },
      "POSITIVE");
}

} // namespace

void addRunCommand(CLI::App &App, Runner &Run) {
  auto *Cmd = App.add_subcommand("run", "load a program and call a function");
  auto O = std::make_shared<RunOptions>();
  Cmd->add_option("PROG", O->Program, "the program (.bin or .vmasm)")
      ->required();
  Cmd->add_option("ARG", O->Args,
                  "arguments: 42, 1.5, true, x.npy, float32[2]=1,2, "
                  "shape:2,3, str:text, null");
  Cmd->add_option("--func", O->Func, "function to call (default: main)");
  Cmd->add_option("--mode", O->Mode,
                  "bytecode, baseline, compiled or tiered (default: tiered)");
  Cmd->add_option("--lib", O->Libs,
                  "load a kernel library (repeatable)");
  Cmd->add_option("--tier-threshold", O->TierThreshold,
                  "calls or backward jumps before a function is queued for "
                  "the optimizing tier (also VMJIT_TIER_THRESHOLD)")
      ->check(positiveCount());
  Cmd->add_option("--baseline-threshold", O->BaselineThreshold,
                  "calls or backward jumps on the interpreter before a "
                  "function is compiled at the baseline tier, at most the "
                  "tier threshold (also VMJIT_BASELINE_THRESHOLD)")
      ->check(positiveCount());
  Cmd->add_option("--repeat", O->Repeat,
                  "call the function N times, report the last result")
      ->check(positiveCount());
  Cmd->add_flag("--json", O->Json, "print exactly one JSON object");
  Cmd->add_option("--output", O->Output, "also save a tensor result as .npy");
  Cmd->add_flag("--stats", O->Stats,
                "per function: calls, tier, compile time");
  Cmd->add_option("--opt-level", O->OptLevel,
                  "LLVM optimization level of JIT code, 0-3")
      ->check(CLI::Range(0, 3));
  Cmd->add_option("--cache-dir", O->CacheDir,
                  "on-disk object cache of optimized code (also "
                  "VMJIT_CACHE_DIR; default: $XDG_CACHE_HOME/vmjit or "
                  "~/.cache/vmjit)");
  Cmd->add_flag("--no-cache", O->NoCache,
                "no on-disk object cache for this run");
  Cmd->add_flag("--perf", O->Perf, "register JIT code with perf");
  Cmd->add_flag("--gdb", O->Gdb, "register JIT code with GDB");
  Cmd->add_option("--max-steps", O->MaxSteps,
                  "fail a call after N steps (function entries and backward "
                  "jumps; default: unlimited)")
      ->check(positiveCount());
  Cmd->add_option("--timeout-ms", O->TimeoutMs,
                  "fail a call that runs longer than MS milliseconds")
      ->check(positiveCount());
  Cmd->add_option("--max-call-depth", O->MaxCallDepth,
                  "deepest nesting of VM calls (default: 4096)")
      ->check(positiveCount());
  // Options may follow the arguments; a negative number is an argument.
  Cmd->allow_extras(false);
  Cmd->positionals_at_end(false);
  Cmd->callback([&Run, O] {
    if (O->TierThreshold == 0)
      if (const char *Env = std::getenv("VMJIT_TIER_THRESHOLD"))
        O->TierThreshold = std::atoll(Env);
    Run = [O] { return run(*O); };
  });
}

} // namespace vmjit::tool
