//===- run_command.cpp - vmjit run ----------------------------------------===//
//
// vmjit run PROG [ARG...] [--func F] [--mode M] [--lib L]... [--repeat N]
//           [--bind NAME=FILE.npy]... [--kernels BC] [--no-kernels]
//           [--wait-kernels] [--fast-math]
//           [--json] [--output OUT.npy] [--stats] [--tier-threshold N]
//           [--max-steps N] [--timeout-ms MS] [--max-call-depth N] ...
// Loads PROG (any format, by content; - is standard input), creates a VM,
// calls the function, prints the result (as the JSON value encoding; large
// tensors summarized unless --json), and exits 0, 1 (runtime error) or 2
// (bad usage or input). Options the mode makes no use of get a warning.
// Ctrl-C (SIGINT) interrupts the running call, which then fails with an
// InterruptedError; the command prints it (and --stats) and exits 130. A
// second Ctrl-C kills.
//
//===----------------------------------------------------------------------===//

#include "command.h"
#include "run_args.h"
#include "run_bind.h"
#include "run_output.h"
#include "value_json.h"
#include "vmjit/report/stats_json.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/jit/tier_manager.h"
#endif

#include <atomic>
#include <charconv>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <unistd.h>
#include <fmt/format.h>

namespace vmjit::tool {
namespace {

using nlohmann::ordered_json;

struct JitOptionUse;

struct RunOptions {
  std::string Program;
  std::vector<std::string> Args;
  /// --bind NAME=FILE.npy / INDEX=FILE.npy, in order.
  std::vector<std::string> Binds;
  std::string Func = "main";
  std::string Mode = "tiered";
  std::vector<std::string> Libs;
  std::string Kernels; // --kernels: the kernels' bitcode
  bool NoKernels = false;
  bool WaitKernels = false;
  bool FastMath = false;
  int64_t TierThreshold = 0;     // 0: not given
  int64_t BaselineThreshold = 0; // 0: not given
  int OptLevel = -1;         // -1: the engine's default
  std::string CacheDir;
  bool NoCache = false;
  bool Perf = false;
  bool Gdb = false;
  bool DeoptStress = false;
  int64_t Repeat = 1;
  bool Json = false;
  std::string Output;
  bool Stats = false;
  uint64_t MaxSteps = 0;    // 0: unlimited
  int64_t TimeoutMs = 0;    // 0: none
  int64_t MaxCallDepth = 0; // 0: the VM's default
  bool WaitCompiles = false;
  /// The JIT options given on the command line (rows of kJitOptionUses).
  std::vector<const JitOptionUse *> GivenJitOptions;
};

/// The kernels a run found: notes on the kernel libraries found by
/// themselves, and the kernel tier (model.bc compiled for this CPU).
struct RunKernels {
  std::vector<std::string> Found;
#ifdef VMJIT_HAVE_JIT
  std::shared_ptr<jit::KernelTier> Tier;
  /// Whether the tier's warning was printed.
  bool Warned = false;
#endif
};

/// The VM a SIGINT interrupts (async-signal-safe: interrupt() is one
/// lock-free atomic store).
std::atomic<vm::VirtualMachine *> InterruptTarget{nullptr};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

/// Set when Ctrl-C interrupted the run: the command then exits 130, as a
/// shell reports a process that SIGINT ended.
std::atomic<bool> SigintSeen{false};
constexpr int kExitSigint = 128 + SIGINT;

extern "C" void onSigint(int) {
  SigintSeen.store(true);
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

const char *kAotNote = "ahead-of-time code from vmjit compile";

/// Whether `VM` runs a `vmjit compile` library's code.
bool runsAotCode(const vm::VirtualMachine &VM) {
  const vm::TierController *TC = VM.tierController();
  if (!TC)
    return false;
  for (size_t I = 0; I < VM.executable().functions().size(); ++I)
    if (TC->tierStats(static_cast<int64_t>(I)).AheadOfTime)
      return true;
  return false;
}

ordered_json collectStats(const vm::VirtualMachine &VM, const RunOptions &O,
                          double WallMs, const RunKernels &Kernels,
                          const ordered_json &Bound) {
  ordered_json S;
  S["mode"] = O.Mode;
  S["jit"] = runsAotCode(VM) ? kAotNote : kJitNote;
  // Kernel libraries found by themselves (none named on the command line),
  // and the kernel tier's line.
  S["kernels_found"] = Kernels.Found;
#ifdef VMJIT_HAVE_JIT
  if (Kernels.Tier) {
    const jit::KernelTierStatus St = Kernels.Tier->status();
    S["kernels_found"].push_back(St.note());
    S["kernel_tier"] = ordered_json::parse(St.json());
  }
#endif
  if (!Bound.is_null())
    S["bind"] = Bound;
  S["repeat"] = O.Repeat;
  S["wall_ms"] = WallMs;
#ifdef VMJIT_HAVE_JIT
  if (jit::TierManager *TM = jit::tierManagerOf(VM)) {
    S["baseline_threshold"] = TM->threshold();
    S["tier_threshold"] = TM->options().Threshold;
  }
  S.update(report::vmStatsJson(VM, /*CompileCounts=*/true));
#else
  S.update(report::vmStatsJson(VM, /*CompileCounts=*/false));
#endif
  return S;
}

void printStatsText(const ordered_json &S) {
  fmt::print(stderr, "mode: {} ({})\n", S["mode"].get<std::string>(),
             S["jit"].get<std::string>());
  for (const auto &K : S["kernels_found"])
    fmt::print(stderr, "{}\n", K.get<std::string>());
  if (S.contains("bind"))
    printBindStats(S["bind"]);
  fmt::print(stderr, "calls: {} in {:.3f} ms", S["repeat"].get<int64_t>(),
             S["wall_ms"].get<double>());
  if (S.contains("compiles"))
    fmt::print(stderr,
               "; baseline compiles: {}, compiles: {}, object cache hits: {}",
               S["baseline_compiles"].get<int64_t>(),
               S["compiles"].get<int64_t>(), S["cache_hits"].get<int64_t>());
  fmt::print(stderr, "\n{}", report::vmStatsTable(S));
}

ordered_json errorJson(const Error &E) {
  // frames: as printed (repeats collapsed, long traces cut); frame_count:
  // every frame the error passed through.
  return {{"kind", E.kind()},
          {"message", E.message()},
          {"frames", E.frames()},
          {"frame_count", E.frameCount()}};
}

/// Where each JIT option has an effect: one row per option, read by the
/// warnings and by the command line's bookkeeping of what was given.
struct JitOptionUse {
  const char *Option;
  bool Baseline, Compiled, Tiered;
  const char *Why;
};
constexpr JitOptionUse kJitOptionUses[] = {
    {"--opt-level", false, true, true, "it sets the optimizing tier's level"},
    {"--tier-threshold", false, false, true, "only tiered mode tiers up"},
    {"--baseline-threshold", false, false, true, "only tiered mode tiers up"},
    {"--cache-dir", false, true, true, "the cache holds optimized code"},
    {"--no-cache", false, true, true, "the cache holds optimized code"},
    {"--perf", true, true, true, "the interpreter makes no native code"},
    {"--gdb", false, true, true, "only optimized code is registered with GDB"},
    {"--deopt-stress", false, true, true, "only optimized code speculates"},
};

/// Says which given options the mode makes no use of (one warning each).
void warnInapplicable(const RunOptions &O, vm::ExecMode Mode) {
  for (const JitOptionUse *U : O.GivenJitOptions) {
#ifndef VMJIT_HAVE_JIT
    fmt::print(stderr, "vmjit: warning: {} has no effect: this build has no "
                       "JIT\n",
               U->Option);
    continue;
#endif
    bool Applies = (Mode == vm::ExecMode::Baseline && U->Baseline) ||
                   (Mode == vm::ExecMode::Compiled && U->Compiled) ||
                   (Mode == vm::ExecMode::Tiered && U->Tiered);
    if (!Applies)
      fmt::print(stderr, "vmjit: warning: {} has no effect with --mode {} "
                         "({})\n",
                 U->Option, O.Mode,
                 Mode == vm::ExecMode::Bytecode
                     ? "the interpreter makes no native code"
                     : U->Why);
  }
}

#ifdef VMJIT_HAVE_JIT
/// The cache directory the run uses, or "" (with a warning) when it cannot
/// be created or written: the run goes on without the cache.
std::string usableCacheDir(const std::string &Dir, bool Given) {
  std::error_code EC;
  std::filesystem::create_directories(Dir, EC);
  if (!EC && ::access(Dir.c_str(), W_OK | X_OK) == 0)
    return Dir;
  fmt::print(stderr, "vmjit: warning: {}{}: {}; no object cache for this run\n",
             Given ? "--cache-dir " : "the object cache ", Dir,
             EC ? "cannot be created (" + EC.message() + ")"
                : std::string("cannot be written"));
  return "";
}
#endif

#ifdef VMJIT_HAVE_JIT
/// Prints the kernel tier's warning once it has failed (once; nothing for a
/// compile the end of the process abandons).
void warnIfKernelTierFailed(RunKernels &K) {
  if (!K.Tier || K.Warned)
    return;
  const jit::KernelTierStatus St = K.Tier->status();
  if (St.State != jit::KernelTierState::Failed)
    return;
  fmt::print(stderr, "vmjit: warning: {}\n", St.Warning);
  K.Warned = true;
}

/// The kernel tier: TVM's kernels compiled for this CPU from the bitcode
/// `--kernels` names or that lies beside the program (model.bc beside
/// model.tvmexec or model.so), in the background unless --wait-kernels;
/// its library goes ahead of the library it replaces, the first of
/// `Libs`.
void addKernelTier(const RunOptions &O,
                   std::vector<std::shared_ptr<KernelLibrary>> &Libs,
                   RunKernels &K) {
  if (O.NoKernels)
    return;
  std::string Bitcode = O.Kernels;
  if (Bitcode.empty() && !Libs.empty() && !vm::isStreamPath(O.Program))
    Bitcode = jit::kernelBitcodeBeside(O.Program);
  if (Bitcode.empty())
    return;
  if (Libs.empty()) {
    fmt::print(stderr,
               "vmjit: warning: --kernels {}: no kernel library to "
               "check it against (give the model's with --lib); "
               "not used\n",
               Bitcode);
    return;
  }
  jit::KernelTierOptions KO;
  if (const std::string Dir = jit::cacheDirFor(O.CacheDir);
      !O.NoCache && !Dir.empty())
    KO.CacheDir = usableCacheDir(Dir, !O.CacheDir.empty());
  KO.FastMath = O.FastMath;
  KO.Background = !O.WaitKernels;
  KO.PerfSupport = O.Perf;
  K.Tier = jit::KernelTier::start(Bitcode, Libs.front(), KO);
  warnIfKernelTierFailed(K);
  Libs.insert(Libs.begin(), K.Tier->library());
}
#endif

/// Returns `VM` once the call `O` asks for exists: a missing function or a
/// wrong argument count is a usage error.
std::unique_ptr<vm::VirtualMachine>
checkedCall(std::unique_ptr<vm::VirtualMachine> VM, const RunOptions &O,
            const std::vector<Any> &Args) {
  const vm::FunctionInfo &F =
      VM->executable().function(VM->functionIndex(O.Func));
  if (F.Kind == vm::FunctionKind::Bytecode &&
      static_cast<int64_t>(Args.size()) != F.NumParams)
    throwError("UsageError",
               fmt::format("function '{}' takes {} argument{}, {} given",
                           O.Func, F.NumParams, F.NumParams == 1 ? "" : "s",
                           Args.size()));
  return VM;
}

/// Runs the program's ahead-of-time code in `VM`; says (a warning) why
/// not when it cannot, and which given JIT options then do nothing.
bool attachAotCode(vm::VirtualMachine &VM, const vm::AotCode &Code,
                   const RunOptions &O) {
  std::string Why = Code.attach(VM);
  if (!Why.empty()) {
    fmt::print(stderr, "vmjit: warning: {}: its ahead-of-time code is not "
                       "used: {}\n",
               O.Program, Why);
    return false;
  }
  for (const JitOptionUse *U : O.GivenJitOptions)
    fmt::print(stderr, "vmjit: warning: {} has no effect: {} runs the native "
                       "code vmjit compile made\n",
               U->Option, O.Program);
  return true;
}

/// The kernels' effects binding folds calls by (vm/bind_params.h): the
/// kernel tier's, proven from model.bc, or those a `vmjit compile
/// --kernels` library recorded; none (nothing folded) without either.
vm::KernelEffectsLookup bindEffects(const RunKernels &K,
                                    const vm::OpenedProgram &Prog) {
#ifdef VMJIT_HAVE_JIT
  if (K.Tier)
    return vm::effectsIn(K.Tier->effects());
#endif
  (void)K;
  if (Prog.Aot && !Prog.Aot->kernelEffects().empty())
    return vm::effectsIn(Prog.Aot->kernelEffects());
  return {};
}

/// Makes the VM for `O`, running the program's ahead-of-time code or with
/// the JIT attached; the arguments are parsed first, so that a typing
/// mistake costs no load.
std::unique_ptr<vm::VirtualMachine> setUp(const RunOptions &O,
                                          std::vector<Any> &Args,
                                          RunKernels &Kernels,
                                          ordered_json &Bound) {
  const std::optional<vm::ExecMode> Mode = vm::parseExecMode(O.Mode);
  if (!Mode)
    throwError("UsageError",
               fmt::format("--mode must be bytecode, baseline, compiled or "
                           "tiered, not '{}'",
                           O.Mode));
  if (O.Repeat < 1)
    throwError("UsageError", "--repeat must be at least 1");
  for (size_t I = 0; I < O.Args.size(); ++I)
    Args.push_back(parseRunArgument(O.Args[I], I + 1));
  std::vector<vm::ParamBinding> Binds;
  for (const std::string &B : O.Binds)
    Binds.push_back(parseBindOption(B));
  if (!O.Output.empty())
    checkOutputPath(O.Output);
  vm::OpenedProgram Prog = vm::openProgram(O.Program);
  if (O.NoKernels)
    vm::dropCompiledKernels(Prog);
  Kernels.Found = Prog.KernelNotes;
  if (O.Libs.empty())
    for (const std::string &M : Prog.MissingKernels)
      fmt::print(stderr, "vmjit: warning: {}: pass its kernels with --lib\n",
                 M);
  const bool Aot = Prog.Aot && vm::modeRunsAotCode(*Mode) && Binds.empty();
#ifndef VMJIT_HAVE_JIT
  if (*Mode == vm::ExecMode::Baseline ||
      (*Mode == vm::ExecMode::Compiled && !Aot))
    throwError("UsageError",
               fmt::format("--mode {} needs the JIT, which is not available "
                           "in this build (use --mode bytecode or tiered, or "
                           "run a library vmjit compile wrote)",
                           O.Mode));
#endif
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
  if (!O.Kernels.empty()) {
    std::error_code EC;
    if (!std::filesystem::is_regular_file(O.Kernels, EC))
      throwError("UsageError",
                 fmt::format("--kernels {}: no such file", O.Kernels));
  }
#ifdef VMJIT_HAVE_JIT
  addKernelTier(O, Opts.Libraries, Kernels);
#else
  if (!O.Kernels.empty() || O.WaitKernels || O.FastMath)
    fmt::print(stderr, "vmjit: warning: --kernels, --wait-kernels and "
                       "--fast-math have no effect: this build has no JIT\n");
#endif
  const vm::VMOptions BoundOpts = Opts;
  auto VM = vm::VirtualMachine::create(Exe, std::move(Opts));
  if (!Binds.empty()) {
    // The function rewritten (its kernel calls on constants run now, on
    // this VM's kernels), then a VM like this one of the result.
    vm::BindResult B =
        vm::bindParams(*VM, O.Func, Binds, bindEffects(Kernels, Prog));
    Bound = report::bindStatsJson(O.Func, Binds, B);
    VM = vm::VirtualMachine::create(B.Exe, BoundOpts);
  }
  if (Aot && attachAotCode(*VM, *Prog.Aot, O))
    return checkedCall(std::move(VM), O, Args);
  warnInapplicable(O, *Mode);
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
  const bool UsesCache = *Mode == vm::ExecMode::Compiled ||
                         *Mode == vm::ExecMode::Tiered;
  if (!O.NoCache && UsesCache) {
    const std::string Dir = jit::cacheDirFor(O.CacheDir);
    if (!Dir.empty()) {
      JO.CacheDir = usableCacheDir(Dir, !O.CacheDir.empty());
      JO.NoCache = JO.CacheDir.empty();
    }
  }
  JO.PerfSupport = O.Perf;
  JO.DebuggerSupport = O.Gdb;
  JO.DeoptStress = O.DeoptStress;
  jit::enableJIT(*VM, JO);
#endif
  return checkedCall(std::move(VM), O, Args);
}

/// Waits for the kernel tier and for the tier-2 compiles the run queued,
/// and those its kernels queued (--wait-compiles).
void waitForCompiles(vm::VirtualMachine &VM, const RunKernels &K) {
#ifdef VMJIT_HAVE_JIT
  if (K.Tier)
    K.Tier->wait();
  if (jit::TierManager *TM = jit::tierManagerOf(VM))
    TM->drain();
#else
  (void)VM;
  (void)K;
#endif
}

int run(const RunOptions &O) {
  ordered_json Out;
  ordered_json Stats;
  // Errors: the JSON object or the message, then the stats table (a run
  // that failed or was interrupted still shows what ran); Ctrl-C exits 130.
  auto Fail = [&](const Error &E) {
    if (O.Json) {
      Out["error"] = errorJson(E);
      Out["mode"] = O.Mode;
      Out["func"] = O.Func;
      if (!Stats.is_null())
        Out["stats"] = Stats;
      fmt::print("{}\n", Out.dump());
    }
    int Code = reportError(E);
    if (!O.Json && !Stats.is_null())
      printStatsText(Stats);
    return SigintSeen.load() && E.kind() == "InterruptedError" ? kExitSigint
                                                               : Code;
  };
  std::unique_ptr<vm::VirtualMachine> VM;
  std::vector<Any> Args;
  RunKernels Kernels;
  ordered_json Bound;
  try {
    VM = setUp(O, Args, Kernels, Bound);
  } catch (const Error &E) {
    if (E.kind() == "LookupError")
      return Fail(Error("UsageError", O.Program + ": " + E.message()));
    if (E.kind() == "LinkError") // which program's functions are missing
      return Fail(Error("LinkError", O.Program + ": " + E.message()));
    return Fail(E);
  }

  Any Result;
  std::optional<Error> RunError;
  std::vector<AnyView> Views(Args.begin(), Args.end());
  auto Start = std::chrono::steady_clock::now();
  try {
    SigintScope Sigint(*VM);
    for (int64_t I = 0; I < O.Repeat; ++I) {
      // The last call's result is dropped first, as time_evaluator drops
      // every result: a call may then reuse what it held (the allocation
      // call sites of vm/alloc_sites.h).
      Result.reset();
      Result = VM->invoke(O.Func, Views);
    }
  } catch (const Error &E) {
    RunError = E;
  }
  double WallMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - Start)
                      .count();
  if (O.WaitCompiles)
    waitForCompiles(*VM, Kernels);
#ifdef VMJIT_HAVE_JIT
  warnIfKernelTierFailed(Kernels);
#endif
  if (O.Stats)
    Stats = collectStats(*VM, O, WallMs, Kernels, Bound);
  if (RunError)
    return Fail(*RunError);

  if (!O.Output.empty()) {
    try {
      saveOutput(Result, O.Output);
    } catch (const Error &E) {
      return Fail(E);
    }
  }

  if (O.Json) {
    Out["result"] = valueToJson(Result);
    Out["mode"] = O.Mode;
    Out["func"] = O.Func;
    if (O.Stats)
      Out["stats"] = Stats;
    fmt::print("{}\n", Out.dump());
  } else {
    fmt::print("{}\n", valueToJson(Result, /*Summarize=*/true).dump());
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
  Cmd->add_option("PROG", O->Program,
                  "the program, any format vmjit reads (recognised by its "
                  "content; - reads standard input)")
      ->required();
  Cmd->add_option("ARG", O->Args,
                  "arguments: 42, 0x2a, -3, 1.5, -inf, nan, true, x.npy, "
                  "float32[2]=1,2 (any vmasm dtype, float16 and bfloat16 "
                  "too), shape:2,3, str:text, null");
  Cmd->add_option("--func", O->Func, "function to call (default: main)");
  Cmd->add_option("--bind", O->Binds,
                  "NAME=FILE.npy or INDEX=FILE.npy: bind a parameter of the "
                  "function to a tensor before the calls (repeatable); the "
                  "ARGs are then the unbound parameters, and kernel calls "
                  "on bound values run once (docs/tvm.md)");
  Cmd->add_option("--mode", O->Mode,
                  "bytecode, baseline, compiled or tiered (default: tiered)");
  Cmd->add_option("--lib", O->Libs,
                  "load a kernel library (repeatable)");
  Cmd->add_option("--kernels", O->Kernels,
                  "LLVM bitcode of the kernels (TVM's model.bc), compiled "
                  "for this CPU and run instead of the kernel library's "
                  "machine code (default: STEM.bc beside the program, if "
                  "there is one)");
  Cmd->add_flag("--no-kernels", O->NoKernels,
                "run the kernel library's own machine code, not the kernels "
                "compiled from model.bc");
  Cmd->add_flag("--wait-kernels", O->WaitKernels,
                "compile the kernels before the first call (default: in the "
                "background, TVM's machine code running until they are "
                "ready)");
  Cmd->add_flag("--fast-math", O->FastMath,
                "compile the kernels with fast math (FMA fusion, "
                "reassociation): faster, but the outputs differ from TVM's "
                "in the last bits");
#ifdef VMJIT_HAVE_JIT
  const std::string TierDefault =
      fmt::format("; default {}", jit::kDefaultTierThreshold);
  const std::string BaselineDefault =
      fmt::format("; default {}: the second call runs at the baseline tier",
                  jit::kDefaultBaselineThreshold);
#else
  const std::string TierDefault, BaselineDefault;
#endif
  Cmd->add_option("--tier-threshold", O->TierThreshold,
                  "calls or backward jumps before a function is queued for "
                  "the optimizing tier (also VMJIT_TIER_THRESHOLD" +
                      TierDefault + ")")
      ->check(positiveCount());
  Cmd->add_option("--baseline-threshold", O->BaselineThreshold,
                  "calls or backward jumps on the interpreter before a "
                  "function is compiled at the baseline tier, at most the "
                  "tier threshold (also VMJIT_BASELINE_THRESHOLD" +
                      BaselineDefault + ")")
      ->check(positiveCount());
  Cmd->add_option("--repeat", O->Repeat,
                  "call the function N times, report the last result")
      ->check(positiveCount());
  Cmd->add_flag("--json", O->Json, "print exactly one JSON object");
  Cmd->add_option("--output", O->Output,
                  "also save a tensor result as .npy (a tuple of tensors: "
                  "one file per element, OUT.0.npy, OUT.1.npy, ...)");
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
  Cmd->add_flag("--gdb", O->Gdb, "register optimized JIT code with GDB");
  Cmd->add_flag("--deopt-stress", O->DeoptStress,
                "testing: optimized code speculates from deliberately wrong "
                "type feedback, so that its guards fail and frames "
                "deoptimize (also VMJIT_DEOPT_STRESS=1); results must not "
                "change");
  Cmd->add_flag("--wait-compiles", O->WaitCompiles,
                "after the calls, wait for the tier-2 compiles they queued "
                "and for the kernel tier (so that --stats shows where the "
                "functions end up)");
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
  Cmd->callback([&Run, O, Cmd] {
    O->Program = unmarkRunValue(O->Program);
    for (const JitOptionUse &U : kJitOptionUses)
      if (Cmd->count(U.Option))
        O->GivenJitOptions.push_back(&U);
    Run = [O] { return run(*O); };
  });
}

} // namespace vmjit::tool
