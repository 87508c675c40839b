//===- DispatchBench.cpp - Cost of a Call instruction ----------------------===//
//
// dispatch_int/TIER/N and dispatch_tensor/TIER/N: a function whose body is
// a chain of N calls r[i+1] = f(r[i]) to a trivial packed function (an int
// increment, or a function returning its Tensor argument), then ret.
// Time per iteration is one invocation; the counter ns_per_call divides by
// N. The slope between N = 1 and N = 1000 is the cost of one Call; the
// intercept is the fixed cost of one VM invocation.
//
//   bytecode  the interpreter;
//   native    a hand-written C++ driver making the same N calls through
//             the same safe-call entries: the floor.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "vmjit/bytecode/builder.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

extern "C" int benchIncInt(void *, const VMJITAny *Args, int32_t,
                           VMJITAny *Result) {
  Result->type_index = kVMJITInt;
  Result->zero_padding = 0;
  Result->v_int64 = Args[0].v_int64 + 1;
  return 0;
}

extern "C" int benchPassTensor(void *, const VMJITAny *Args, int32_t,
                               VMJITAny *Result) {
  *Result = Args[0];
  VMJITObjectIncRef(Result->v_obj);
  return 0;
}

void registerBenchFunctions() {
  static bool Done = [] {
    Registry::global().add("bench.inc_int",
                           Function::fromSafeCall(benchIncInt, "bench.inc_int"),
                           true);
    Registry::global().add(
        "bench.pass_tensor",
        Function::fromSafeCall(benchPassTensor, "bench.pass_tensor"), true);
    return true;
  }();
  (void)Done;
}

/// main(x): r1 = f(x); ...; rN = f(rN-1); ret rN.
std::shared_ptr<Executable> chainProgram(const std::string &Callee, int64_t N) {
  ExecutableBuilder B;
  int64_t F = B.declarePacked(Callee);
  FunctionBuilder &Main = B.beginFunction("main", {"x"});
  for (int64_t I = 0; I < N; ++I)
    Main.emitCall(I + 1, F, {Arg::reg(I)});
  Main.emitRet(N);
  B.endFunction();
  return B.finish();
}

Any argumentFor(bool Tensor) {
  if (Tensor)
    return Any(vmjit::Tensor::empty({4}, dtype::Float32));
  return Any(int64_t(0));
}

/// The VM in the given tier (tiered: after warming up, in the steady
/// state).
std::unique_ptr<VirtualMachine> vmFor(std::shared_ptr<Executable> Exe,
                                      ExecMode Mode, const Any &Arg) {
  return bench::makeVM(std::move(Exe), Mode, [&Arg](VirtualMachine &VM) {
    AnyView A(Arg);
    VM.invoke(VM.functionIndex("main"), {&A, 1});
  });
}

/// Times main(X) on `Exe` in the given tier; ns_per_call divides by N.
void runChain(benchmark::State &State, std::shared_ptr<Executable> Exe,
              ExecMode Mode, const Any &X) {
  auto VM = vmFor(std::move(Exe), Mode, X);
  int64_t Main = VM->functionIndex("main");
  AnyView Arg(X);
  for (auto _ : State) {
    Any R = VM->invoke(Main, {&Arg, 1});
    benchmark::DoNotOptimize(R);
  }
  State.counters["ns_per_call"] = benchmark::Counter(
      static_cast<double>(State.range(0)) * State.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void vmChain(benchmark::State &State, bool IsTensor, ExecMode Mode) {
  registerBenchFunctions();
  runChain(State,
           chainProgram(IsTensor ? "bench.pass_tensor" : "bench.inc_int",
                        State.range(0)),
           Mode, argumentFor(IsTensor));
}

/// dispatch_int_tvm: the same chain after a trip through TVM's
/// VMExecutable format (written, then loaded as a TVM file would be), so
/// per-call cost can be compared between the two formats.
void tvmChain(benchmark::State &State, ExecMode Mode) {
  registerBenchFunctions();
  runChain(State,
           bench::viaTvmFormat(*chainProgram("bench.inc_int", State.range(0))),
           Mode, argumentFor(false));
}

void nativeChain(benchmark::State &State, bool IsTensor) {
  registerBenchFunctions();
  int64_t N = State.range(0);
  Function F =
      *Registry::global().find(IsTensor ? "bench.pass_tensor" : "bench.inc_int");
  FunctionObj *Fn = F.get();
  VMJITSafeCallType Entry = Fn->entry();
  Any X = argumentFor(IsTensor);
  // The same register file a driver would keep, moved through by hand.
  std::vector<Any> Regs(static_cast<size_t>(N) + 1);
  for (auto _ : State) {
    Regs[0] = X;
    for (int64_t I = 0; I < N; ++I) {
      VMJITAny Result;
      detail::setNone(Result);
      if (Entry(Fn, &Regs[static_cast<size_t>(I)].raw(), 1, &Result) != 0)
        throwRaisedError();
      Regs[static_cast<size_t>(I) + 1] = Any::fromRawOwned(Result);
    }
    Any R = std::move(Regs[static_cast<size_t>(N)]);
    for (Any &A : Regs)
      A.reset();
    benchmark::DoNotOptimize(R);
  }
  State.counters["ns_per_call"] = benchmark::Counter(
      static_cast<double>(N) * State.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void sizes(benchmark::internal::Benchmark *B) {
  for (int64_t N : {1, 10, 100, 1000})
    B->Arg(N);
}

} // namespace

BENCHMARK_CAPTURE(vmChain, int_bytecode, false, ExecMode::Bytecode)
    ->Name("dispatch_int/bytecode")
    ->Apply(sizes);
BENCHMARK_CAPTURE(nativeChain, int, false)
    ->Name("dispatch_int/native")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, tensor_bytecode, true, ExecMode::Bytecode)
    ->Name("dispatch_tensor/bytecode")
    ->Apply(sizes);
BENCHMARK_CAPTURE(nativeChain, tensor, true)
    ->Name("dispatch_tensor/native")
    ->Apply(sizes);
BENCHMARK_CAPTURE(tvmChain, bytecode, ExecMode::Bytecode)
    ->Name("dispatch_int_tvm/bytecode")
    ->Apply(sizes);
#ifdef VMJIT_HAVE_JIT
BENCHMARK_CAPTURE(tvmChain, compiled, ExecMode::Compiled)
    ->Name("dispatch_int_tvm/compiled")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, int_baseline, false, ExecMode::Baseline)
    ->Name("dispatch_int/baseline")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, tensor_baseline, true, ExecMode::Baseline)
    ->Name("dispatch_tensor/baseline")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, int_compiled, false, ExecMode::Compiled)
    ->Name("dispatch_int/compiled")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, int_tiered, false, ExecMode::Tiered)
    ->Name("dispatch_int/tiered")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, tensor_compiled, true, ExecMode::Compiled)
    ->Name("dispatch_tensor/compiled")
    ->Apply(sizes);
BENCHMARK_CAPTURE(vmChain, tensor_tiered, true, ExecMode::Tiered)
    ->Name("dispatch_tensor/tiered")
    ->Apply(sizes);
#endif
