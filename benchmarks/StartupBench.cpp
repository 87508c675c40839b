//===- StartupBench.cpp - From a program file to its first result ---------===//
//
// startup/MODE/PROGRAM: one iteration opens examples/PROGRAM.vmasm's
// program, makes a VM and calls `main` once with the example's input (the
// input is read before the clock starts):
//   bytecode  the .vmasm, on the interpreter;
//   compiled  the .vmasm, every function compiled at tier 2 first (no
//             object cache);
//   aot       the library `vmjit compile` makes of it (written once, before
//             the benchmark), its native code attached: nothing compiled.
// Counters (medians): first_call_us, the first call alone; steady_us, a
// call once 100 more were made (outside the iteration time: the code each
// mode runs for good, the JIT's direct calls against the library's calls
// through the function pool).
//
//===----------------------------------------------------------------------===//

#ifdef VMJIT_HAVE_JIT

#include "BenchUtil.h"

#include "vmjit/files/npy.h"
#include "vmjit/jit/aot.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/vm/program.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <unistd.h>

using namespace vmjit;
using namespace vmjit::vm;
using Clock = std::chrono::steady_clock;

namespace {

/// The library of examples/PROGRAM, written once per process.
std::string aotLibrary(const std::string &Program) {
  static std::map<std::string, std::string> Made;
  auto It = Made.find(Program);
  if (It != Made.end())
    return It->second;
  std::filesystem::path Dir = std::filesystem::temp_directory_path() /
                              ("vmjit-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(Dir);
  std::string Out = (Dir / (Program + ".so")).string();
  auto Exe = loadProgram(bench::examplePath(Program.c_str()));
  jit::compileAheadOfTime(*Exe, Out);
  return Made[Program] = Out;
}

void startup(benchmark::State &S, ExecMode Mode, bool Aot,
             const std::string &Program, const char *Input) {
  Any X(readNpy(bench::examplePath(Input)));
  AnyView A(X);
  const std::string Path =
      Aot ? aotLibrary(Program) : bench::examplePath(Program.c_str());
  std::vector<double> FirstCall, Steady;
  for (auto _ : S) {
    OpenedProgram P = openProgram(Path);
    auto VM = VirtualMachine::create(P.Exe);
    if (Aot) {
      if (std::string Why = P.Aot->attach(*VM); !Why.empty())
        S.SkipWithError(Why.c_str());
    } else if (Mode != ExecMode::Bytecode) {
      jit::JITOptions O;
      O.Mode = Mode;
      jit::enableJIT(*VM, O);
    }
    Clock::time_point T0 = Clock::now();
    Any R = VM->invoke("main", {&A, 1});
    FirstCall.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - T0).count());
    benchmark::DoNotOptimize(R);
    S.PauseTiming();
    for (int I = 0; I < 200; ++I) {
      Clock::time_point T1 = Clock::now();
      benchmark::DoNotOptimize(VM->invoke("main", {&A, 1}));
      if (I >= 100)
        Steady.push_back(std::chrono::duration<double, std::micro>(
                             Clock::now() - T1)
                             .count());
    }
    S.ResumeTiming();
  }
  auto Median = [](std::vector<double> &V) {
    std::sort(V.begin(), V.end());
    return V[V.size() / 2];
  };
  S.counters["first_call_us"] = Median(FirstCall);
  S.counters["steady_us"] = Median(Steady);
}

bool registerStartupBenchmarks() {
  struct Case {
    const char *Program, *Input;
  };
  struct Tier {
    const char *Name;
    ExecMode Mode;
    bool Aot;
  };
  for (Case C : {Case{"decode.vmasm", "weights/decode/x.npy"},
                 Case{"mlp.vmasm", "weights/mlp/x.npy"}})
    for (Tier T : {Tier{"bytecode", ExecMode::Bytecode, false},
                   Tier{"compiled", ExecMode::Compiled, false},
                   Tier{"aot", ExecMode::Compiled, true}}) {
      std::string Program = C.Program;
      std::string Name = std::string("startup/") + T.Name + "/" +
                         Program.substr(0, Program.find('.'));
      benchmark::RegisterBenchmark(Name.c_str(),
                                   [C, T, Program](benchmark::State &S) {
                                     startup(S, T.Mode, T.Aot, Program,
                                             C.Input);
                                   })
          ->Unit(benchmark::kMillisecond);
    }
  return true;
}

[[maybe_unused]] const bool Registered = registerStartupBenchmarks();

} // namespace

#endif // VMJIT_HAVE_JIT
