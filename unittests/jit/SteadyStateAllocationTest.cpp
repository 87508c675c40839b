// Tests that a warm call of every model of ../shared/tvm-models makes no
// heap allocation, in every execution mode: tensor and storage objects,
// shape and tuple objects, closures and small tensor data come from the
// per-VM storage pool and the per-thread object pools. This binary
// replaces malloc and its relatives with counting wrappers around glibc's
// own (__libc_malloc, ...), counting only the calling thread, so the
// background compiler's allocations do not count. Not built with
// sanitizers, whose runtimes own malloc. The models are skipped when
// ../shared is absent.
#include "TvmModelCalls.h"
#include "vmjit/files/npy.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/object_pool.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <malloc.h>

extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
}

namespace {
/// Allocations made by this thread (initial-exec TLS: reading it never
/// allocates).
__attribute__((tls_model(
    "initial-exec"))) thread_local unsigned long ThreadAllocations = 0;
} // namespace

// glibc declares these noexcept (__THROW); the definitions match.
extern "C" {
void *malloc(size_t N) noexcept {
  ++ThreadAllocations;
  return __libc_malloc(N);
}
void *calloc(size_t N, size_t S) noexcept {
  ++ThreadAllocations;
  return __libc_calloc(N, S);
}
void *realloc(void *P, size_t N) noexcept {
  ++ThreadAllocations;
  return __libc_realloc(P, N);
}
void *memalign(size_t A, size_t N) noexcept {
  ++ThreadAllocations;
  return __libc_memalign(A, N);
}
void *aligned_alloc(size_t A, size_t N) noexcept {
  ++ThreadAllocations;
  return __libc_memalign(A, N);
}
int posix_memalign(void **Out, size_t A, size_t N) noexcept {
  ++ThreadAllocations;
  void *P = __libc_memalign(A, N);
  if (!P)
    return ENOMEM;
  *Out = P;
  return 0;
}
void free(void *P) noexcept { __libc_free(P); }
}

using namespace vmjit;
using namespace vmjit::vm;

namespace {

const std::filesystem::path kModels = VMJIT_TVM_MODELS;

using ModelCall = jittest::TvmModelCall;

const std::vector<ModelCall> &modelCalls() { return jittest::tvmModelCalls(); }

/// A VM of the model library `Library` (relative to kModels) in `Mode`,
/// tiering up at the first call, compiling in the foreground.
std::unique_ptr<VirtualMachine> modelVM(const char *Library, ExecMode Mode) {
  OpenedProgram P = openProgram((kModels / Library).string());
  VMOptions Opts;
  Opts.Libraries = P.Libraries;
  auto VM = VirtualMachine::create(P.Exe, std::move(Opts));
  jit::JITOptions J;
  J.Mode = Mode;
  J.Threshold = 1;
  J.Background = false;
  jit::enableJIT(*VM, J);
  return VM;
}

/// Allocations per call over `Calls` warm calls of Func.
double allocationsPerCall(VirtualMachine &VM, const ModelCall &M,
                          const std::vector<AnyView> &Args, int Calls) {
  const int64_t F = VM.functionIndex(M.Func);
  const unsigned long Before = ThreadAllocations;
  for (int I = 0; I < Calls; ++I)
    VM.invoke(F, Args);
  return double(ThreadAllocations - Before) / Calls;
}

class SteadyStateAllocationTest : public ::testing::TestWithParam<ExecMode> {};

TEST_P(SteadyStateAllocationTest, WarmCallsOfEveryModelAllocateNothing) {
  if (!std::filesystem::exists(kModels / "README.md"))
    GTEST_SKIP() << "no TVM models at " << kModels;
  if (GetParam() == ExecMode::Baseline && !jit::baselineAvailable())
    GTEST_SKIP() << "this build has no baseline tier";
  for (const ModelCall &M : modelCalls()) {
    SCOPED_TRACE(M.Name);
    auto VM = modelVM(M.Library, GetParam());
    std::vector<Tensor> Inputs;
    for (const char *In : M.Inputs)
      Inputs.push_back(readNpy((kModels / In).string()));
    std::vector<AnyView> Args(Inputs.begin(), Inputs.end());
    // Warm up: tier-up, compiles, first-use pools and caches.
    allocationsPerCall(*VM, M, Args, 20);
    EXPECT_EQ(allocationsPerCall(*VM, M, Args, 200), 0.0);
  }
}

TEST_P(SteadyStateAllocationTest, AWarmDecodeStepOfTheLlmAllocatesNothing) {
  // begin_forward, decode, end_forward on TVM's paged KV cache: the cache's
  // plan and page tables reuse their buffers. (The host's own values, the
  // embedding and the shapes, are made once here.)
  if (!std::filesystem::exists(kModels / "llm" / "model.so"))
    GTEST_SKIP() << "no TVM models at " << kModels;
  if (GetParam() == ExecMode::Baseline && !jit::baselineAvailable())
    GTEST_SKIP() << "this build has no baseline tier";
  auto VM = modelVM("llm/model.so", GetParam());
  std::vector<Any> Params;
  for (int I = 0; I < 15; ++I)
    Params.emplace_back(readNpy(
        (kModels / "llm" / ("param_" + std::to_string(I) + ".npy")).string()));
  Array Weights(std::move(Params));
  Any Cache = VM->call("create_tir_paged_kv_cache", Shape{1}, Shape{256},
                       Shape{64}, Shape{16});
  auto fn = [](const char *Name) { return *Registry::global().find(Name); };
  Function Add = fn("vm.builtin.kv_state_add_sequence");
  Function Begin = fn("vm.builtin.kv_state_begin_forward");
  Function End = fn("vm.builtin.kv_state_end_forward");
  Function PopN = fn("vm.builtin.kv_state_popn");
  Add(Cache, 0);
  Tensor H = Tensor::empty({1, 1, 64}, DLDataType{kDLFloat, 32, 1});
  std::fill_n(H.data<float>(), 64, 0.25f);
  const Shape Seq{0}, One{1};
  const int64_t Decode = VM->functionIndex("decode");
  const std::vector<AnyView> Args{H, Cache, Weights};
  auto steps = [&](int N) {
    const unsigned long Before = ThreadAllocations;
    for (int I = 1; I <= N; ++I) {
      Begin(Cache, Seq, One);
      Any R = VM->invoke(Decode, Args);
      End(Cache);
      if (I % 40 == 0)
        PopN(Cache, 0, 40);
    }
    return double(ThreadAllocations - Before) / N;
  };
  steps(120);
  EXPECT_EQ(steps(200), 0.0);
}

TEST_P(SteadyStateAllocationTest, TheCounterSeesAllocations) {
  // The counting wrappers are in effect: a fresh large tensor allocates.
  const unsigned long Before = ThreadAllocations;
  Tensor T = Tensor::empty({1024}, DLDataType{kDLFloat, 32, 1});
  EXPECT_GT(ThreadAllocations, Before);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, SteadyStateAllocationTest,
                         ::testing::ValuesIn(kAllExecModes),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param));
                         });

} // namespace
