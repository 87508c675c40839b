//===- LoopBench.cpp - Loops, VM-to-VM calls, closures --------------------===//
//
// loop/TIER/n: examples/loop_sum.vmasm (compare, add, add, branch per
//   iteration); time per iteration in the counter ns_per_iter. native: the
//   same loop in C++ calling scalar.add / scalar.ge through their safe-call
//   entries (JIT code inlines these builtins, so it can beat this floor).
// calls/TIER/25: recursive fib(25) of examples/fib.vmasm (VM-to-VM calls);
//   native: a C++ recursive fib calling the same scalar functions through
//   their safe-call entries. compiled-call: compiled mode with
//   JITOptions::DirectBodyLimit 0, fib's direct entry calling its code
//   instead of holding a copy (docs/jit.md#direct-calls).
// closure/TIER/n: examples/closure.vmasm, a loop calling
//   vm.builtin.invoke_closure. native: the same loop in C++; the closure is
//   a C++ lambda with its captured values, whose body calls scalar.mul and
//   scalar.add through their safe-call entries, as do the loop's compare
//   and adds.
// owned/TIER/n: examples/thread_state.vmasm, a state tuple handed from call
//   to call at its last use (two calls of bytecode functions and a
//   make_tuple per iteration); ns_per_iter. compiled-lent: compiled mode
//   with JITOptions::OwnedArguments off, every argument lent (an increment
//   in the callee, a decrement in the caller), the comparison for owned
//   arguments (docs/jit.md#owned-arguments).
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/tier_manager.h"
#endif

using namespace vmjit;
using namespace vmjit::vm;

namespace {

std::unique_ptr<VirtualMachine> exampleVM(const char *Name, ExecMode Mode,
                                          int64_t WarmArg) {
  return bench::makeVM(loadProgram(bench::examplePath(Name)), Mode,
                       [WarmArg](VirtualMachine &VM) { VM.call("main", WarmArg); });
}

/// Times main(n) of VM per iteration (the counter ns_per_iter: per turn of
/// the program's loop, n turns).
void timeLoop(benchmark::State &State, VirtualMachine &VM) {
  int64_t N = State.range(0);
  for (auto _ : State)
    benchmark::DoNotOptimize(VM.call("main", N));
  bench::setPerItem(State, static_cast<double>(N), "ns_per_iter");
}

/// loop, closure and owned: main(n) of an example with a loop of n turns.
void exampleLoop(benchmark::State &State, const char *File, ExecMode Mode) {
  timeLoop(State, *exampleVM(File, Mode, 100));
}

void fibCalls(benchmark::State &State, ExecMode Mode) {
  int64_t N = State.range(0);
  auto VM = exampleVM("fib.vmasm", Mode, 5);
  for (auto _ : State)
    benchmark::DoNotOptimize(VM->call("main", N));
}

/// Two-argument int calls through safe-call entries (the native floors).
int64_t intCall(FunctionObj *F, int64_t A, int64_t B) {
  VMJITAny Args[2] = {{kVMJITInt, {0}, {A}}, {kVMJITInt, {0}, {B}}};
  VMJITAny R;
  detail::setNone(R);
  if (F->entry()(F, Args, 2, &R) != 0)
    throwRaisedError();
  return R.v_int64;
}

/// fib through the same scalar functions' safe-call entries: the floor.
struct NativeFib {
  FunctionObj *Lt, *Sub, *Add;
  int64_t fib(int64_t N) {
    if (intCall(Lt, N, 2))
      return N;
    return intCall(Add, fib(intCall(Sub, N, 1)), fib(intCall(Sub, N, 2)));
  }
};

void fibNative(benchmark::State &State) {
  bench::NativeCalls C;
  NativeFib F{C.fn("scalar.lt"), C.fn("scalar.sub"), C.fn("scalar.add")};
  for (auto _ : State)
    benchmark::DoNotOptimize(F.fib(State.range(0)));
}

void loopNative(benchmark::State &State) {
  bench::NativeCalls C;
  FunctionObj *Add = C.fn("scalar.add"), *Ge = C.fn("scalar.ge"),
              *Lt = C.fn("scalar.lt");
  int64_t N = State.range(0);
  for (auto _ : State) {
    // loop_sum's rotated loop: s += i; i += 1; until i >= n.
    int64_t S = 0, I = 0;
    if (intCall(Lt, I, N)) {
      do {
        S = intCall(Add, S, I);
        I = intCall(Add, I, 1);
      } while (!intCall(Ge, I, N));
    }
    benchmark::DoNotOptimize(S);
  }
  bench::setPerItem(State, static_cast<double>(N), "ns_per_iter");
}

void closureNative(benchmark::State &State) {
  bench::NativeCalls C;
  FunctionObj *Add = C.fn("scalar.add"), *Mul = C.fn("scalar.mul"),
              *Lt = C.fn("scalar.lt");
  int64_t N = State.range(0);
  const int64_t A = 3, B = 1; // the captured values
  auto Affine = [&](int64_t I) {
    return intCall(Add, intCall(Mul, A, I), B);
  };
  for (auto _ : State) {
    int64_t Acc = 0;
    for (int64_t I = 0; intCall(Lt, I, N); I = intCall(Add, I, 1))
      Acc = intCall(Add, Acc, Affine(I));
    benchmark::DoNotOptimize(Acc);
  }
  bench::setPerItem(State, static_cast<double>(N), "ns_per_iter");
}

#ifdef VMJIT_HAVE_JIT
/// Example `File` in compiled mode with `O` (its Mode set here), warmed
/// as bench::makeVM warms compiled mode (100 calls of main(WarmArg)).
std::unique_ptr<VirtualMachine> compiledWith(const char *File, int64_t WarmArg,
                                             jit::JITOptions O) {
  auto VM = VirtualMachine::create(loadProgram(bench::examplePath(File)));
  O.Mode = ExecMode::Compiled;
  jit::enableJIT(*VM, O);
  for (int I = 0; I < 100; ++I)
    VM->call("main", WarmArg);
  return VM;
}

void threadStateLent(benchmark::State &State) {
  jit::JITOptions O;
  O.OwnedArguments = false;
  timeLoop(State, *compiledWith("thread_state.vmasm", 100, O));
}

void fibCallingCode(benchmark::State &State) {
  jit::JITOptions O;
  O.DirectBodyLimit = 0;
  auto VM = compiledWith("fib.vmasm", 5, O);
  for (auto _ : State)
    benchmark::DoNotOptimize(VM->call("main", State.range(0)));
}
#endif

} // namespace

BENCHMARK_CAPTURE(exampleLoop, bytecode, "loop_sum.vmasm", ExecMode::Bytecode)
    ->Name("loop/bytecode")
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(loopNative)->Name("loop/native")->Arg(1000000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fibCalls, bytecode, ExecMode::Bytecode)
    ->Name("calls/bytecode")->Arg(25)->Unit(benchmark::kMillisecond);
BENCHMARK(fibNative)->Name("calls/native")->Arg(25)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, bytecode, "closure.vmasm", ExecMode::Bytecode)
    ->Name("closure/bytecode")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(closureNative)->Name("closure/native")->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, bytecode, "thread_state.vmasm",
                  ExecMode::Bytecode)
    ->Name("owned/bytecode")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
#ifdef VMJIT_HAVE_JIT
BENCHMARK_CAPTURE(exampleLoop, compiled, "thread_state.vmasm",
                  ExecMode::Compiled)
    ->Name("owned/compiled")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(threadStateLent)
    ->Name("owned/compiled-lent")->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, tiered, "thread_state.vmasm", ExecMode::Tiered)
    ->Name("owned/tiered")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, baseline, "loop_sum.vmasm", ExecMode::Baseline)
    ->Name("loop/baseline")
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fibCalls, baseline, ExecMode::Baseline)
    ->Name("calls/baseline")->Arg(25)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, baseline, "closure.vmasm", ExecMode::Baseline)
    ->Name("closure/baseline")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, compiled, "loop_sum.vmasm", ExecMode::Compiled)
    ->Name("loop/compiled")
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, tiered, "loop_sum.vmasm", ExecMode::Tiered)
    ->Name("loop/tiered")
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fibCalls, compiled, ExecMode::Compiled)
    ->Name("calls/compiled")->Arg(25)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fibCalls, tiered, ExecMode::Tiered)
    ->Name("calls/tiered")->Arg(25)->Unit(benchmark::kMillisecond);
BENCHMARK(fibCallingCode)
    ->Name("calls/compiled-call")
    ->Arg(25)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, compiled, "closure.vmasm", ExecMode::Compiled)
    ->Name("closure/compiled")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(exampleLoop, tiered, "closure.vmasm", ExecMode::Tiered)
    ->Name("closure/tiered")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
#endif
