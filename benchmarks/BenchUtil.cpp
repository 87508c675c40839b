//===- BenchUtil.cpp - Helpers shared by the vmjit-bench workloads ---------===//
//
// See BenchUtil.h. Also, once per process: the harness never uses an object
// cache named by the environment (VMJIT_CACHE_DIR is removed; the warm-cache
// compile benchmark names its own directory), and the benchmark context
// (printed and in the JSON output) records the JIT's LLVM version and CPU.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "vmjit/builtins/builtins.h"
#include "vmjit/bytecode/builder.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/host_info.h"
#include "vmjit/jit/tier_manager.h"
#endif

#include <cmath>
#include <cstdlib>

namespace vmjit::bench {

namespace {

[[maybe_unused]] const bool ProcessSetUp = [] {
  ::unsetenv("VMJIT_CACHE_DIR");
#ifdef VMJIT_HAVE_JIT
  benchmark::AddCustomContext("vmjit_jit", "on");
  benchmark::AddCustomContext("llvm_version", jit::hostInfo().LLVMVersion);
  benchmark::AddCustomContext("llvm_host_cpu", jit::hostInfo().CPU);
#else
  benchmark::AddCustomContext("vmjit_jit", "off");
#endif
  if (const char *T = std::getenv("OPENBLAS_CORETYPE"))
    benchmark::AddCustomContext("openblas_coretype", T);
  return true;
}();

} // namespace

std::shared_ptr<vm::Executable> scalarChainProgram(int64_t N) {
  vm::ExecutableBuilder B;
  const int64_t Add = B.declarePacked("scalar.add");
  vm::FunctionBuilder &F = B.beginFunction("main", {"x"});
  for (int64_t K = 0; K < N; ++K)
    F.emitCall(1 + (K + 1) % 8, Add,
               {vm::Arg::reg(K == 0 ? 0 : 1 + K % 8), vm::Arg::reg(0)});
  F.emitRet(1 + N % 8);
  B.endFunction();
  return B.finish();
}

std::shared_ptr<vm::Executable> viaTvmFormat(const vm::Executable &Exe) {
  std::string Image = vm::serializeTvmExecutable(Exe);
  return vm::loadExecutableFromBytes(Image, "program.tvmexec");
}

std::string examplePath(const char *Name) {
  return std::string(VMJIT_SOURCE_DIR) + "/examples/" + Name;
}

namespace {
/// Calls every non-tiered VM makes before it is measured.
constexpr int kWarmCalls = 100;
} // namespace

std::unique_ptr<vm::VirtualMachine>
makeVM(std::shared_ptr<const vm::Executable> Exe, vm::ExecMode Mode,
       const std::function<void(vm::VirtualMachine &)> &Warm) {
  return makeVM(std::move(Exe), vm::VMOptions(), Mode, Warm);
}

std::unique_ptr<vm::VirtualMachine>
makeVM(std::shared_ptr<const vm::Executable> Exe, vm::VMOptions Opts,
       vm::ExecMode Mode,
       const std::function<void(vm::VirtualMachine &)> &Warm) {
  auto VM = vm::VirtualMachine::create(std::move(Exe), std::move(Opts));
#ifdef VMJIT_HAVE_JIT
  jit::JITOptions O;
  O.Mode = Mode;
  O.Threshold = jit::kDefaultTierThreshold;
  jit::enableJIT(*VM, O);
  if (Mode == vm::ExecMode::Tiered) {
    for (int64_t I = 0; I < 2 * jit::kDefaultTierThreshold; ++I)
      Warm(*VM);
    jit::tierManagerOf(*VM)->drain();
    Warm(*VM);
    return VM;
  }
#else
  (void)Mode;
#endif
  // Every tier is measured from the same kind of state: the tiered VM has
  // run thousands of calls by now, and the kernels' allocations run faster
  // or slower depending on what the allocator's free lists hold (decode:
  // tiered measured 1.2x bytecode when only it was warmed, and equal to
  // compiled once every tier was).
  for (int I = 0; I < kWarmCalls; ++I)
    Warm(*VM);
  return VM;
}

void setPerItem(benchmark::State &State, double Items, const char *Name) {
  State.counters[Name] = benchmark::Counter(
      Items * static_cast<double>(State.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

FunctionObj *NativeCalls::fn(const char *Name) {
  vm::registerVMBuiltins();
  std::optional<Function> F = Registry::global().find(Name);
  if (!F)
    throwError("LookupError", std::string("no function ") + Name);
  Keep.push_back(*F);
  return Keep.back().get();
}

Tensor randomTensor(std::initializer_list<int64_t> Shape, float Scale,
                    uint64_t &Seed) {
  Tensor T = Tensor::empty(Shape, dtype::Float32);
  int64_t N = 1;
  for (int64_t D : Shape)
    N *= D;
  float *P = T.data<float>();
  // Uniform on [-a, a] has standard deviation a / sqrt(3).
  const float A = Scale * std::sqrt(3.0f);
  for (int64_t I = 0; I < N; ++I) {
    Seed ^= Seed << 13; // xorshift64
    Seed ^= Seed >> 7;
    Seed ^= Seed << 17;
    float U = static_cast<float>(Seed >> 40) * (1.0f / 16777216.0f);
    P[I] = (2.0f * U - 1.0f) * A;
  }
  return T;
}

} // namespace vmjit::bench
