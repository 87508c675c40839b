//===- WarmupBench.cpp - Tiered mode from the first call to steady state --===//
//
// warmup/tiered/PROGRAM: a fresh VM in tiered mode (default threshold, no
// object cache) calls `main` of examples/PROGRAM.vmasm (decode, mlp) with
// the example's input, timing every call (wall clock: the compile thread
// runs meanwhile), until every bytecode function runs natively and at
// least 200 calls and 200 more after that swap have been made.
//
// The iteration time (manual time) is the time to steady state: from the
// start of the first call to the end of the call after which every
// function is native. Counters (medians over the iterations):
//   swap_call            index (from 0) of that call;
//   swap_call_<F>        the same for each function F;
//   compile_ms_<F>       the background compile of F;
//   steady_ms            the time to steady state (= the iteration time);
//   target_ms            threshold x the interpreted per-call time + 2 ms
//                        (the target: steady_ms <= target_ms);
//   call<K>_us           the time of call K (K = 0, 1, 10, 50, 99, 100,
//                        150, 199);
//   bytecode_us          median interpreted call (calls 1 .. the first swap);
//   tiered_us            median call after the swap;
//   compiled_us          median call of a compiled-mode VM (measured in the
//                        same run);
//   tiered_vs_compiled   tiered_us / compiled_us.
// With VMJIT_BENCH_SERIES_DIR set, the per-call series (median over the
// iterations that made that call, microseconds) is written to DIR/<name with '/' as '_'>.json
// for scripts/bench-report.py.
//
//===----------------------------------------------------------------------===//

#ifdef VMJIT_HAVE_JIT

#include "BenchUtil.h"

#include "vmjit/files/npy.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/vm/program.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>

using namespace vmjit;
using namespace vmjit::vm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kSeriesCalls = 200;
constexpr int64_t kAfterSwap = 200;
constexpr int64_t kMaxCalls = 2000000;
constexpr double kMaxSeconds = 60;
const int64_t kSelected[] = {0, 1, 10, 50, 99, 100, 150, 199};

double median(std::vector<double> V) {
  if (V.empty())
    return 0;
  std::sort(V.begin(), V.end());
  size_t N = V.size();
  return N % 2 ? V[N / 2] : (V[N / 2 - 1] + V[N / 2]) / 2;
}

double nsBetween(Clock::time_point A, Clock::time_point B) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(B - A).count());
}

struct Run {
  std::vector<double> CallNs;
  int64_t SwapCall = -1;
  std::vector<int64_t> FnSwap; // per bytecode function
  std::vector<double> CompileMs;
  double SteadyNs = 0;
};

Run runOnce(const std::shared_ptr<const Executable> &Exe,
            const std::vector<int64_t> &Funcs, const Any &X) {
  auto VM = VirtualMachine::create(Exe);
  jit::JITOptions O;
  O.Mode = ExecMode::Tiered;
  O.Threshold = jit::kDefaultTierThreshold;
  jit::enableJIT(*VM, O);
  int64_t Main = VM->functionIndex("main");
  AnyView A(X);
  Run R;
  R.FnSwap.assign(Funcs.size(), -1);
  R.CallNs.reserve(1 << 16);
  Clock::time_point Start = Clock::now();
  for (int64_t I = 0; I < kMaxCalls; ++I) {
    Clock::time_point T0 = Clock::now();
    Any Res = VM->invoke(Main, {&A, 1});
    Clock::time_point T1 = Clock::now();
    benchmark::DoNotOptimize(Res);
    R.CallNs.push_back(nsBetween(T0, T1));
    if (R.SwapCall < 0) {
      bool All = true;
      for (size_t K = 0; K < Funcs.size(); ++K) {
        if (R.FnSwap[K] < 0 && VM->isNative(Funcs[K]))
          R.FnSwap[K] = I;
        All = All && R.FnSwap[K] >= 0;
      }
      if (All) {
        R.SwapCall = I;
        R.SteadyNs = nsBetween(Start, T1);
      }
    }
    if (R.SwapCall >= 0 && I + 1 >= kSeriesCalls &&
        I >= R.SwapCall + kAfterSwap)
      break;
    if (R.SwapCall < 0 && nsBetween(Start, T1) > kMaxSeconds * 1e9)
      break;
  }
  jit::TierManager *TM = jit::tierManagerOf(*VM);
  for (int64_t F : Funcs)
    R.CompileMs.push_back(TM->stats(F).CompileMs);
  return R;
}

/// Median call of a compiled-mode VM (after a few warm calls).
double compiledCallNs(const std::shared_ptr<const Executable> &Exe,
                      const Any &X) {
  auto VM = VirtualMachine::create(Exe);
  jit::JITOptions O;
  O.Mode = ExecMode::Compiled;
  jit::enableJIT(*VM, O);
  int64_t Main = VM->functionIndex("main");
  AnyView A(X);
  std::vector<double> T;
  for (int64_t I = 0; I < 10 + kAfterSwap; ++I) {
    Clock::time_point T0 = Clock::now();
    Any Res = VM->invoke(Main, {&A, 1});
    Clock::time_point T1 = Clock::now();
    benchmark::DoNotOptimize(Res);
    if (I >= 10)
      T.push_back(nsBetween(T0, T1));
  }
  return median(std::move(T));
}

void writeSeries(const std::string &Name, const std::vector<Run> &Runs,
                 const std::vector<std::string> &FnNames) {
  const char *Dir = std::getenv("VMJIT_BENCH_SERIES_DIR");
  if (!Dir || !*Dir || Runs.empty())
    return;
  size_t Len = 0;
  for (const Run &R : Runs)
    Len = std::max(Len, R.CallNs.size());
  std::string File = Name;
  std::replace(File.begin(), File.end(), '/', '_');
  std::ofstream Out(std::string(Dir) + "/" + File + ".json");
  Out << "{\"name\": \"" << Name << "\", \"threshold\": "
      << jit::kDefaultTierThreshold << ", \"swap_calls\": [";
  for (size_t K = 0; K < Runs.size(); ++K)
    Out << (K ? ", " : "") << Runs[K].SwapCall;
  Out << "], \"functions\": {";
  for (size_t F = 0; F < FnNames.size(); ++F) {
    Out << (F ? ", " : "") << "\"" << FnNames[F] << "\": [";
    for (size_t K = 0; K < Runs.size(); ++K)
      Out << (K ? ", " : "") << Runs[K].FnSwap[F];
    Out << "]";
  }
  Out << "}, \"calls_us\": [";
  for (size_t I = 0; I < Len; ++I) {
    std::vector<double> V;
    for (const Run &R : Runs)
      if (I < R.CallNs.size())
        V.push_back(R.CallNs[I]);
    char Buf[32];
    std::snprintf(Buf, sizeof(Buf), "%.3f", median(std::move(V)) / 1000);
    Out << (I ? ", " : "") << Buf;
  }
  Out << "]}\n";
}

void warmup(benchmark::State &State, const std::string &Name,
            const char *Program, const char *Input) {
  std::shared_ptr<const Executable> Exe =
      loadProgram(bench::examplePath(Program));
  Any X(readNpy(bench::examplePath(Input)));
  std::vector<int64_t> Funcs;
  std::vector<std::string> FnNames;
  for (size_t K = 0; K < Exe->functions().size(); ++K)
    if (Exe->functions()[K].Kind == FunctionKind::Bytecode) {
      Funcs.push_back(static_cast<int64_t>(K));
      FnNames.push_back(Exe->functions()[K].Name);
    }
  std::vector<Run> Runs;
  for (auto _ : State) {
    Runs.push_back(runOnce(Exe, Funcs, X));
    State.SetIterationTime(Runs.back().SteadyNs / 1e9);
    if (Runs.back().SwapCall < 0) {
      State.SkipWithError("no swap within the time limit");
      break;
    }
  }
  if (Runs.empty() || Runs.back().SwapCall < 0)
    return;
  double CompiledNs = compiledCallNs(Exe, X);

  auto Med = [&](auto Get) {
    std::vector<double> V;
    for (const Run &R : Runs)
      V.push_back(Get(R));
    return median(std::move(V));
  };
  auto &C = State.counters;
  C["threshold"] = static_cast<double>(jit::kDefaultTierThreshold);
  C["swap_call"] = Med([](const Run &R) { return double(R.SwapCall); });
  for (size_t F = 0; F < Funcs.size(); ++F) {
    C["swap_call_" + FnNames[F]] =
        Med([F](const Run &R) { return double(R.FnSwap[F]); });
    C["compile_ms_" + FnNames[F]] =
        Med([F](const Run &R) { return R.CompileMs[F]; });
  }
  C["steady_ms"] = Med([](const Run &R) { return R.SteadyNs / 1e6; });
  for (int64_t K : kSelected)
    C["call" + std::to_string(K) + "_us"] = Med([K](const Run &R) {
      return K < int64_t(R.CallNs.size()) ? R.CallNs[size_t(K)] / 1000 : 0;
    });
  double BytecodeUs = Med([](const Run &R) {
    int64_t First = R.SwapCall;
    for (int64_t S : R.FnSwap)
      First = std::min(First, S);
    std::vector<double> V(R.CallNs.begin() + 1,
                          R.CallNs.begin() + std::max<int64_t>(First, 2));
    return median(std::move(V)) / 1000;
  });
  double TieredUs = Med([](const Run &R) {
    std::vector<double> V(R.CallNs.begin() + R.SwapCall + 1, R.CallNs.end());
    return median(std::move(V)) / 1000;
  });
  C["bytecode_us"] = BytecodeUs;
  C["target_ms"] =
      static_cast<double>(jit::kDefaultTierThreshold) * BytecodeUs / 1000 + 2;
  C["tiered_us"] = TieredUs;
  C["compiled_us"] = CompiledNs / 1000;
  C["tiered_vs_compiled"] = TieredUs / (CompiledNs / 1000);
  writeSeries(Name, Runs, FnNames);
}

bool registerWarmupBenchmarks() {
  struct Case {
    const char *Name, *Program, *Input;
  };
  for (Case C : {Case{"warmup/tiered/decode", "decode.vmasm",
                      "weights/decode/x.npy"},
                 Case{"warmup/tiered/mlp", "mlp.vmasm", "weights/mlp/x.npy"}}) {
    std::string Name = C.Name;
    benchmark::RegisterBenchmark(Name.c_str(),
                                 [C, Name](benchmark::State &S) {
                                   warmup(S, Name, C.Program, C.Input);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}

[[maybe_unused]] const bool Registered = registerWarmupBenchmarks();

} // namespace

#endif // VMJIT_HAVE_JIT
