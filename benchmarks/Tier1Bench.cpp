//===- Tier1Bench.cpp - Tier 1 on long straight-line code, and its size ---===//
//
// scalar_chain/TIER/N: main(x) is a chain of N scalar.add Calls on
// registers, r[(i+1) % 8] = r[i % 8] + x, then ret: straight-line code
// whose size, not its work, decides the time once N is large (N = 100 ..
// 10^4; bytecode and baseline). Time per invocation; ns_per_instr divides
// by N.
//
// tier1_size/SHAPE: a function of 1000 instructions of one shape, run at
// tier 1 (baseline mode). Counters: hot_bytes, the bytes per instruction
// of the code that runs when every instruction takes its fast path (the
// instructions in order), and bytes, the same with the out-of-line slow
// paths and the stencils' out-of-line parts. Time is one invocation.
//
//   scalar_rr     r = scalar.add(r, x)         (a fused stencil)
//   scalar_ri     r = scalar.add(r, 1)         (a fused stencil)
//   scalar_const  r = scalar.add(r, $c)        (argument stencils + call)
//   packed_call   r = vm.builtin.copy(r)       (a direct call, "cpacked")
//   pool_call     r = id(r), id bytecode       (a call through the pool)
//   null_value    r = vm.builtin.null_value()  (inline)
//   if            if c else +1                 (c true)
//
//===----------------------------------------------------------------------===//

#ifdef VMJIT_HAVE_JIT

#include "BenchUtil.h"

#include "vmjit/bytecode/builder.h"
#include "vmjit/vm/function_stats.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

/// main's argument x = 1.
AnyView one() { return AnyView(int64_t(1)); }

/// Calls main(1) once (the warm-up before timing).
void callMain(VirtualMachine &VM) {
  AnyView A = one();
  VM.invoke(VM.functionIndex("main"), {&A, 1});
}

void runMain(benchmark::State &State, VirtualMachine &VM, double Instrs) {
  const int64_t Main = VM.functionIndex("main");
  AnyView Arg = one();
  for (auto _ : State) {
    Any R = VM.invoke(Main, {&Arg, 1});
    benchmark::DoNotOptimize(R);
  }
  State.counters["ns_per_instr"] = benchmark::Counter(
      Instrs * static_cast<double>(State.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void chain(benchmark::State &State, ExecMode Mode) {
  auto VM =
      bench::makeVM(bench::scalarChainProgram(State.range(0)), Mode, callMain);
  runMain(State, *VM, static_cast<double>(State.range(0)));
}

constexpr int64_t kShapeInstrs = 1000;

/// main(x) of kShapeInstrs instructions, each made by `Emit(F, K)`; x and
/// registers 1..8 hold ints, register 9 is true.
using EmitFn = std::function<void(FunctionBuilder &, int64_t)>;
std::shared_ptr<Executable>
shapeProgram(const std::function<EmitFn(ExecutableBuilder &)> &Declare) {
  ExecutableBuilder B;
  const int64_t Copy = B.declarePacked("vm.builtin.copy");
  EmitFn Emit = Declare(B);
  FunctionBuilder &F = B.beginFunction("main", {"x"});
  for (int64_t R = 1; R <= 8; ++R)
    F.emitCall(R, Copy, {Arg::reg(0)});
  F.emitCall(9, Copy, {Arg::imm(1)});
  for (int64_t K = 9; K < kShapeInstrs - 1; ++K)
    Emit(F, K);
  F.emitRet(1);
  B.endFunction();
  return B.finish();
}

/// r[(k+1) % 8] = Callee(r[k % 8], Second...).
EmitFn callShape(int64_t Callee, std::vector<Arg> Rest) {
  return [=](FunctionBuilder &F, int64_t K) {
    std::vector<Arg> Args = {Arg::reg(1 + K % 8)};
    Args.insert(Args.end(), Rest.begin(), Rest.end());
    F.emitCall(1 + (K + 1) % 8, Callee, Args);
  };
}

std::shared_ptr<Executable> shape(const std::string &Name) {
  return shapeProgram([&Name](ExecutableBuilder &B) -> EmitFn {
    if (Name == "scalar_rr")
      return callShape(B.declarePacked("scalar.add"), {Arg::reg(0)});
    if (Name == "scalar_ri")
      return callShape(B.declarePacked("scalar.add"), {Arg::imm(1)});
    if (Name == "scalar_const")
      return callShape(B.declarePacked("scalar.add"),
                       {Arg::constant(B.addConstant(Any(int64_t(3))))});
    if (Name == "packed_call")
      return callShape(B.declarePacked("vm.builtin.copy"), {});
    if (Name == "pool_call") {
      const int64_t Id = B.declareFunction("id", {"v"});
      FunctionBuilder &G = B.beginFunction("id", {"v"});
      G.emitRet(0);
      B.endFunction();
      return callShape(Id, {});
    }
    if (Name == "null_value") {
      const int64_t Null = B.declarePacked("vm.builtin.null_value");
      return [Null](FunctionBuilder &F, int64_t K) {
        F.emitCall(10 + K % 8, Null, {});
      };
    }
    return [](FunctionBuilder &F, int64_t) { F.emitIfOffset(9, 1); };
  });
}

void size(benchmark::State &State, const std::string &Name) {
  auto VM = bench::makeVM(shape(Name), ExecMode::Baseline, callMain);
  runMain(State, *VM, double(kShapeInstrs));
  for (const FunctionStats &S : collectFunctionStats(*VM))
    if (S.Name == "main" && S.JIT && S.JIT->Baseline) {
      State.counters["hot_bytes"] =
          double(S.JIT->BaselineHotBytes) / double(kShapeInstrs);
      State.counters["bytes"] =
          double(S.JIT->BaselineBytes) / double(kShapeInstrs);
      return;
    }
  State.SkipWithError("main has no tier-1 code");
}

void chainSizes(benchmark::internal::Benchmark *B) {
  for (int64_t N : {100, 1000, 3000, 10000})
    B->Arg(N);
}

} // namespace

BENCHMARK_CAPTURE(chain, bytecode, ExecMode::Bytecode)
    ->Name("scalar_chain/bytecode")
    ->Apply(chainSizes);
BENCHMARK_CAPTURE(chain, baseline, ExecMode::Baseline)
    ->Name("scalar_chain/baseline")
    ->Apply(chainSizes);
BENCHMARK_CAPTURE(size, scalar_rr, "scalar_rr")->Name("tier1_size/scalar_rr");
BENCHMARK_CAPTURE(size, scalar_ri, "scalar_ri")->Name("tier1_size/scalar_ri");
BENCHMARK_CAPTURE(size, scalar_const, "scalar_const")
    ->Name("tier1_size/scalar_const");
BENCHMARK_CAPTURE(size, packed_call, "packed_call")
    ->Name("tier1_size/packed_call");
BENCHMARK_CAPTURE(size, pool_call, "pool_call")->Name("tier1_size/pool_call");
BENCHMARK_CAPTURE(size, null_value, "null_value")
    ->Name("tier1_size/null_value");
BENCHMARK_CAPTURE(size, if, "if")->Name("tier1_size/if");

#endif // VMJIT_HAVE_JIT
