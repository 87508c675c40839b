//===- CompileBench.cpp - JIT compile latency ------------------------------===//
//
// compile/O<level>/<instructions>: lowering + optimization + codegen + link
// of one bytecode function of N instructions (a chain of scalar calls with
// a loop), as a tier-up compile does it; object cache off. A fresh
// executable per iteration, so nothing is reused. Level 1 is the tier-up
// level. N = 10 .. 10^4 at O0 and O1 (units over 200 instructions get O0
// codegen, see docs/jit.md), 10 .. 1000 at O2: O2 took 4.6 s at 1000
// instructions, and at 10^4 had not finished after 95 s (one iteration;
// machine loaded), too long for a harness run with repetitions.
// compile/baseline/<instructions>: the baseline tier's copy-and-patch of
// the same function, N = 10 .. 10^5.
// compile/cached_O1/<instructions>: the same compile with a warm object
// cache (a directory of this process, filled by one untimed compile per
// size): hashing the key, reading and linking the object.
//
//===----------------------------------------------------------------------===//

#ifdef VMJIT_HAVE_JIT

#include "vmjit/bytecode/builder.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

/// f(x): N-3 calls alternating scalar.add / scalar.mul, a scalar.lt, a
/// conditional backward jump and ret: N instructions.
std::shared_ptr<Executable> program(int64_t N) {
  ExecutableBuilder B;
  int64_t Add = B.declarePacked("scalar.add");
  int64_t Mul = B.declarePacked("scalar.mul");
  int64_t Lt = B.declarePacked("scalar.lt");
  FunctionBuilder &F = B.beginFunction("f", {"x"});
  Label Top = F.newLabel();
  F.bind(Top);
  for (int64_t I = 0; I < N - 3; ++I)
    F.emitCall(1 + (I % 8), I % 2 ? Mul : Add,
               {Arg::reg(I == 0 ? 0 : 1 + ((I - 1) % 8)), Arg::imm(I)});
  F.emitCall(9, Lt, {Arg::reg(1), Arg::imm(0)});
  F.emitIf(9, Top);
  F.emitRet(1);
  B.endFunction();
  return B.finish();
}

/// f(x): a counted loop of x iterations whose body is N-7 calls alternating
/// scalar.add / scalar.mul on one register: N instructions over 4
/// registers, small enough for tier 2 to keep them in SSA values, and
/// typed once an interpreted call has given feedback.
std::shared_ptr<Executable> typedProgram(int64_t N) {
  ExecutableBuilder B;
  int64_t Add = B.declarePacked("scalar.add");
  int64_t Mul = B.declarePacked("scalar.mul");
  int64_t Lt = B.declarePacked("scalar.lt");
  int64_t Copy = B.declarePacked("vm.builtin.copy");
  FunctionBuilder &F = B.beginFunction("f", {"x"});
  F.emitCall(1, Copy, {Arg::imm(0)}); // i
  F.emitCall(2, Copy, {Arg::reg(0)}); // a
  Label Top = F.newLabel(), Done = F.newLabel();
  F.bind(Top);
  for (int64_t I = 0; I < N - 7; ++I)
    F.emitCall(2, I % 2 ? Mul : Add, {Arg::reg(2), Arg::imm(I % 2 ? 3 : I)});
  F.emitCall(1, Add, {Arg::reg(1), Arg::imm(1)});
  F.emitCall(3, Lt, {Arg::reg(1), Arg::reg(0)});
  F.emitIf(3, Done);
  F.emitGoto(Top);
  F.bind(Done);
  F.emitRet(2);
  B.endFunction();
  return B.finish();
}

/// Instructions of the function definitions in IR text.
double irInstructions(const std::string &Text) {
  double N = 0;
  bool In = false;
  size_t Pos = 0;
  while (Pos < Text.size()) {
    size_t End = Text.find('\n', Pos);
    if (End == std::string::npos)
      End = Text.size();
    std::string_view Line(Text.data() + Pos, End - Pos);
    if (Line.starts_with("define "))
      In = true;
    else if (Line.starts_with("}"))
      In = false;
    else if (In && Line.starts_with("  ") && Line.size() > 2)
      ++N;
    Pos = End + 1;
  }
  return N;
}

/// compile/typed_O1/<instructions>: typedProgram(N) compiled at tier 2
/// (O1) after one interpreted call of f(3), which gives the feedback tier
/// 2 speculates on; counters: IR instructions per bytecode instruction as
/// lowered and after the pipeline.
void typedCompileLatency(benchmark::State &State, int64_t N) {
  double Lowered = 0, Optimized = 0;
  for (auto _ : State) {
    State.PauseTiming();
    auto VM = VirtualMachine::create(typedProgram(N));
    jit::JITOptions O;
    O.Threshold = INT64_MAX;
    O.BaselineThreshold = INT64_MAX;
    O.Background = false;
    jit::enableJIT(*VM, O);
    jit::TierManager *TM = jit::tierManagerOf(*VM);
    const int64_t F = VM->functionIndex("f");
    VM->call("f", 3); // feedback
    if (Lowered == 0) {
      Lowered = irInstructions(TM->irText(F, false)) / double(N);
      Optimized = irInstructions(TM->irText(F, true)) / double(N);
    }
    State.ResumeTiming();
    if (!TM->compileNow({F})) {
      State.SkipWithError("compile failed");
      break;
    }
    State.PauseTiming();
    VM.reset();
    State.ResumeTiming();
  }
  State.counters["ir_per_instr_lowered"] = Lowered;
  State.counters["ir_per_instr"] = Optimized;
}

/// The object-cache directory of the warm-cache variant; removed at exit.
class CacheDir {
public:
  ~CacheDir() {
    if (!Path.empty())
      std::filesystem::remove_all(Path);
  }
  const std::string &get() {
    if (Path.empty()) {
      char Template[] = "/tmp/vmjit-compilebench-XXXXXX";
      if (!::mkdtemp(Template)) {
        std::perror("CompileBench: mkdtemp");
        std::abort();
      }
      Path = Template;
    }
    return Path;
  }

private:
  std::string Path;
};

CacheDir &cacheDir() {
  static CacheDir Dir;
  return Dir;
}

/// A fresh VM for program(N) and its tier manager (no background thread,
/// no tier-up: compileNow only).
struct CompileSetup {
  std::unique_ptr<VirtualMachine> VM;
  jit::TierManager *TM;
  int64_t F;
  CompileSetup(int64_t N, int Level, const std::string &Cache) {
    VM = VirtualMachine::create(program(N));
    jit::JITOptions O;
    O.OptLevel = Level;
    O.Threshold = INT64_MAX;
    O.Background = false;
    O.CacheDir = Cache;
    jit::enableJIT(*VM, O);
    TM = jit::tierManagerOf(*VM);
    F = VM->functionIndex("f");
  }
};

void compileLatency(benchmark::State &State, int Level, int64_t N,
                    bool Cached) {
  std::string Cache;
  static std::set<std::pair<int, int64_t>> Filled;
  if (Cached) {
    Cache = cacheDir().get();
    if (Filled.insert({Level, N}).second) {
      CompileSetup Fill(N, Level, Cache); // untimed: fills the cache
      if (!Fill.TM->compileNow({Fill.F})) {
        State.SkipWithError("compile failed");
        return;
      }
    }
  }
  for (auto _ : State) {
    State.PauseTiming();
    auto S = std::make_unique<CompileSetup>(N, Level, Cache);
    State.ResumeTiming();
    if (!S->TM->compileNow({S->F})) {
      State.SkipWithError("compile failed");
      break;
    }
    State.PauseTiming();
    if (Cached && !S->TM->stats(S->F).CacheHit) {
      State.SkipWithError("expected an object-cache hit");
      break;
    }
    S.reset(); // destroying the VM and its code is not part of the compile
    State.ResumeTiming();
  }
}

double threadCpuSeconds() {
  timespec T;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &T);
  return static_cast<double>(T.tv_sec) + 1e-9 * static_cast<double>(T.tv_nsec);
}

/// compile/baseline/<instructions>: tier 1's copy-and-patch of the same
/// function (counted code, as tiered mode makes it), pages mapped and
/// sealed included.
void baselineLatency(benchmark::State &State, int64_t N) {
  if (!jit::baselineAvailable()) {
    State.SkipWithError("no baseline tier in this build");
    return;
  }
  // Timed by hand around the compile alone, in this thread's CPU time: a
  // compile of 10 instructions takes microseconds, less than pausing and
  // resuming the timers or than one preemption on a loaded machine.
  auto Exe = program(N);
  jit::JITOptions O;
  O.Background = false;
  // Keeps the tier-2 engine alive across iterations (a manager per VM of
  // another executable shares it): otherwise every iteration would build
  // an LLJIT (~1 ms, untimed but making a run take minutes).
  auto Keeper = VirtualMachine::create(program(10));
  jit::enableJIT(*Keeper, O);
  for (auto _ : State) {
    auto VM = VirtualMachine::create(Exe);
    jit::enableJIT(*VM, O);
    jit::TierManager *TM = jit::tierManagerOf(*VM);
    const int64_t F = VM->functionIndex("f");
    const double Start = threadCpuSeconds();
    bool Ok = TM->compileBaselineNow(F, /*Counted=*/true);
    State.SetIterationTime(threadCpuSeconds() - Start);
    if (!Ok) {
      State.SkipWithError("baseline compile failed");
      break;
    }
  }
  // Seconds per bytecode instruction (shown with the time's unit prefix).
  State.counters["per_instr"] = benchmark::Counter(
      static_cast<double>(State.iterations()) * static_cast<double>(N),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

bool registerCompileBenchmarks() {
  for (int64_t N : {10, 50, 100, 1000, 10000, 100000}) {
    std::string Name = "compile/baseline/" + std::to_string(N);
    benchmark::RegisterBenchmark(Name.c_str(),
                                 [N](benchmark::State &S) {
                                   baselineLatency(S, N);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  // Sizes are part of the names (Arg() would add "/instrs:N" again).
  for (int Level : {0, 1, 2})
    for (int64_t N : {10, 50, 100, 1000, 10000}) {
      if (Level == 2 && N > 1000)
        continue;
      std::string Name = "compile/O" + std::to_string(Level) + "/" +
                         std::to_string(N);
      benchmark::RegisterBenchmark(Name.c_str(),
                                   [Level, N](benchmark::State &S) {
                                     compileLatency(S, Level, N, false);
                                   })
          ->Unit(benchmark::kMillisecond);
    }
  for (int64_t N : {10, 50}) {
    std::string Name = "compile/typed_O1/" + std::to_string(N);
    benchmark::RegisterBenchmark(Name.c_str(), [N](benchmark::State &S) {
      typedCompileLatency(S, N);
    })->Unit(benchmark::kMillisecond);
  }
  for (int64_t N : {10, 50, 100, 1000, 10000}) {
    std::string Name = "compile/cached_O1/" + std::to_string(N);
    benchmark::RegisterBenchmark(Name.c_str(),
                                 [N](benchmark::State &S) {
                                   compileLatency(S, 1, N, true);
                                 })
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}

[[maybe_unused]] const bool Registered = registerCompileBenchmarks();

} // namespace

#endif // VMJIT_HAVE_JIT
