//===- CompileBench.cpp - JIT compile latency ------------------------------===//
//
// compile/O<level>/<instructions>: lowering + optimization + codegen + link
// of one bytecode function of N instructions (a chain of scalar calls with
// a loop), as a tier-up compile does it; object cache off. A fresh
// executable per iteration, so nothing is reused.
//
//===----------------------------------------------------------------------===//

#ifdef VMJIT_HAVE_JIT

#include "vmjit/jit/tier_manager.h"
#include "vmjit/vm/builder.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

/// f(x): N-2 calls alternating scalar.add / tensor-free packed calls, then
/// a conditional backward jump and ret: N instructions.
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

void compileLatency(benchmark::State &State) {
  int Level = static_cast<int>(State.range(0));
  int64_t N = State.range(1);
  for (auto _ : State) {
    State.PauseTiming();
    auto VM = VirtualMachine::create(program(N));
    jit::JITOptions O;
    O.OptLevel = Level;
    O.Threshold = INT64_MAX;
    O.Background = false;
    jit::enableJIT(*VM, O);
    jit::TierManager *TM = jit::tierManagerOf(*VM);
    int64_t F = VM->functionIndex("f");
    State.ResumeTiming();
    if (!TM->compileNow({F}))
      State.SkipWithError("compile failed");
  }
}

} // namespace

BENCHMARK(compileLatency)
    ->Name("compile")
    ->ArgNames({"O", "instrs"})
    ->ArgsProduct({{0, 1, 2}, {10, 50, 100, 1000}})
    ->Unit(benchmark::kMillisecond);

#endif // VMJIT_HAVE_JIT
