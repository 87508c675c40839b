//===- TvmFormatBench.cpp - Small programs in TVM's executable format -----===//
//
// tvm_PROGRAM/TIER/ARG: a program written in Apache TVM's VMExecutable
// format and loaded back, as TVM's compiler output would be, then one
// invocation timed per iteration:
//
//   tvm_fib/TIER/20             examples/fib.vmasm, fib(20) (VM-to-VM calls)
//   tvm_loop_sum/TIER/100000    examples/loop_sum.vmasm, n = 10^5
//   tvm_chain/TIER/N            N = 100 or 1000 scalar.add Calls on
//                               registers, then ret
//
// These are the workloads of the comparison with TVM's own VM (the same
// TVM-format programs run by TVM's runtime, measured in-process on these
// machines: "tvm_format" in docs/benchmarks.md), so that the
// vmjit side of it comes from the harness.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

struct TvmProgram {
  const char *Workload;
  std::shared_ptr<Executable> (*Make)(int64_t Size);
  int64_t Size; ///< the benchmark's size: main's argument or the chain's
  int64_t MainArg;
};

std::shared_ptr<Executable> example(const char *File) {
  return bench::viaTvmFormat(*loadProgram(bench::examplePath(File)));
}
std::shared_ptr<Executable> fib(int64_t) { return example("fib.vmasm"); }
std::shared_ptr<Executable> loopSum(int64_t) {
  return example("loop_sum.vmasm");
}
std::shared_ptr<Executable> chain(int64_t N) {
  return bench::viaTvmFormat(*bench::scalarChainProgram(N));
}

const TvmProgram kPrograms[] = {
    {"tvm_fib", fib, 20, 20},
    {"tvm_loop_sum", loopSum, 100000, 100000},
    {"tvm_chain", chain, 100, 1},
    {"tvm_chain", chain, 1000, 1},
};

void run(benchmark::State &State, const TvmProgram &P, ExecMode Mode) {
  const int64_t Arg = P.MainArg;
  auto VM = bench::makeVM(P.Make(P.Size), Mode,
                          [Arg](VirtualMachine &VM) { VM.call("main", Arg); });
  for (auto _ : State)
    benchmark::DoNotOptimize(VM->call("main", Arg));
}

#ifdef VMJIT_HAVE_JIT
constexpr ExecMode kModes[] = {ExecMode::Bytecode, ExecMode::Baseline,
                               ExecMode::Compiled, ExecMode::Tiered};
#else
constexpr ExecMode kModes[] = {ExecMode::Bytecode};
#endif

/// Registered at start-up: one benchmark per program and tier.
[[maybe_unused]] const bool Registered = [] {
  for (const TvmProgram &P : kPrograms)
    for (ExecMode Mode : kModes)
      benchmark::RegisterBenchmark(
          (std::string(P.Workload) + "/" + std::string(execModeName(Mode)) +
           "/" + std::to_string(P.Size))
              .c_str(),
          [&P, Mode](benchmark::State &S) { run(S, P, Mode); })
          ->Unit(benchmark::kMicrosecond);
  return true;
}();

} // namespace
