//===- BenchUtil.h - Helpers shared by the vmjit-bench workloads -*- C++ -*-===//
//
// What several workloads need: a VM in a given tier (bytecode, compiled, or
// tiered after its warm-up), the "native" floor's way of calling packed
// functions through their safe-call entries, per-item counters, and
// deterministic random weights.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_BENCHMARKS_BENCHUTIL_H
#define VMJIT_BENCHMARKS_BENCHUTIL_H

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/virtual_machine.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace vmjit::bench {

/// examples/NAME in the source tree.
std::string examplePath(const char *Name);

/// A VM for `Exe` in tier `Mode`. Tiered: `Warm` (one invocation) runs
/// twice the default threshold times, the compile queue is drained, and
/// `Warm` runs once more, so every hot function has been swapped: the
/// steady state. The threshold is always the default one (the
/// environment's VMJIT_TIER_THRESHOLD is ignored) and no object cache is
/// used. Without the JIT every mode is the interpreter.
std::unique_ptr<vm::VirtualMachine>
makeVM(std::shared_ptr<const vm::Executable> Exe, vm::ExecMode Mode,
       const std::function<void(vm::VirtualMachine &)> &Warm);
/// The same with VM options (a model library's kernels: Opts.Libraries).
std::unique_ptr<vm::VirtualMachine>
makeVM(std::shared_ptr<const vm::Executable> Exe, vm::VMOptions Opts,
       vm::ExecMode Mode,
       const std::function<void(vm::VirtualMachine &)> &Warm);

/// Sets counter `Name` to the time per item (Items items per iteration).
void setPerItem(benchmark::State &State, double Items, const char *Name);

/// The native floor: packed functions looked up once, then called through
/// their safe-call entries with borrowed argument views, as a hand-written
/// C++ driver would.
class NativeCalls {
public:
  /// The function `Name` of the global registry (the standard library and
  /// VM builtins are registered first). Aborts the benchmark if missing.
  FunctionObj *fn(const char *Name);
  static Any call(FunctionObj *F, std::initializer_list<AnyView> Args) {
    Any R;
    if (F->safeCall(Args.begin(), static_cast<int32_t>(Args.size()), &R) != 0)
      throwRaisedError();
    return R;
  }

private:
  std::vector<Function> Keep;
};

/// A float32 tensor of `Shape` with uniform values of standard deviation
/// `Scale` (deterministic: a fixed-seed generator advanced per call).
Tensor randomTensor(std::initializer_list<int64_t> Shape, float Scale,
                    uint64_t &Seed);

/// main(x): a chain of N scalar.add Calls on registers, r[(i+1) % 8] =
/// r[i % 8] + x (registers 1..8, x in register 0), then ret: N + 1
/// instructions of straight-line code.
std::shared_ptr<vm::Executable> scalarChainProgram(int64_t N);

/// `Exe` written in Apache TVM's VMExecutable format and loaded back, as a
/// file TVM's compiler wrote would be.
std::shared_ptr<vm::Executable> viaTvmFormat(const vm::Executable &Exe);

/// Registers tvm_models/* (TvmModelsBench.cpp): called by main, since it
/// loads the models' libraries.
void registerTvmModelBenchmarks();
/// Registers llm/* (LlmBench.cpp) for the models folder `ModelsDir`.
void registerLlmBenchmarks(const std::filesystem::path &ModelsDir);

} // namespace vmjit::bench

#endif // VMJIT_BENCHMARKS_BENCHUTIL_H
