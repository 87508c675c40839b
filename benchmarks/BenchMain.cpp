//===- BenchMain.cpp - main() of vmjit-bench ------------------------------===//
//
// Google Benchmark's main, with one different default: the minimum time per
// benchmark is 0.25 s instead of 0.5 s (unless --benchmark_min_time is
// given), so that e.g. `vmjit-bench --benchmark_filter=dispatch` stays well
// under a minute on a loaded 2-core machine. scripts/bench-report.py passes
// its own --benchmark_min_time. The tvm_models workload registers here,
// after the flags are read: it loads model libraries, which static
// initialization must not do.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

int main(int Argc, char **Argv) {
  std::vector<char *> Args(Argv, Argv + Argc);
  bool HasMinTime = false;
  for (char *A : Args)
    HasMinTime |= std::strncmp(A, "--benchmark_min_time", 20) == 0;
  static char DefaultMinTime[] = "--benchmark_min_time=0.25";
  if (!HasMinTime)
    Args.insert(Args.begin() + 1, DefaultMinTime);
  int N = static_cast<int>(Args.size());
  Args.push_back(nullptr);
  benchmark::Initialize(&N, Args.data());
  if (benchmark::ReportUnrecognizedArguments(N, Args.data()))
    return 1;
  vmjit::bench::registerTvmModelBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
