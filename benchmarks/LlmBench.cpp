//===- LlmBench.cpp - A language model's generate loop --------------------===//
//
// The llm model of the TVM models folder (a Llama-style decoder TVM compiled
// with its paged KV cache; see TvmModelsBench.cpp for where the folder is),
// driven as examples/generate/llm_generate.h drives it:
//
//   llm/prefill/TIER      add a sequence, embed the 8-token prompt, reshape,
//                         begin_forward, prefill, end_forward, argmax,
//                         remove the sequence (TVM's "prefill step");
//   llm/decode_step/TIER  embed one token, reshape, begin_forward, decode,
//                         end_forward, argmax (TVM's "decode step"); the
//                         sequence goes from 9 to 58 tokens and is popped
//                         back to 9 (TVM measured steps at 9..58);
//   llm/decode_step/floor the kernels one decode step runs (at 33 tokens),
//                         called directly from a C++ loop with the recorded
//                         arguments: embed's and decode's kernels, seen by
//                         an instrument, and those the cache's attention
//                         runs, seen by setBuiltinKernelObserver.
//
// TIER is bytecode, baseline, compiled, tiered (steady state).
//
// llm+kernels/...: the same with the kernel tier (model.bc compiled for
// this CPU before the generator is made, cached in the user's object
// cache; every call runs vmjit's kernels), its floor through the tier's
// entries. llm+kernels+bound/...: also the weights bound once
// (vm/bind_params.h): the calls on weights alone the kernels' effects
// prove foldable (every weight's transpose) ran when binding; the floor is
// the kernels a bound decode step still runs.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "llm_generate.h"

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/library.h"
#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/vm/program.h"
#endif

#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

const std::vector<int32_t> kPrompt = {1, 17, 42, 99, 5, 64, 127, 3};
constexpr int64_t kFirstLength = 9, kLastLength = 58;

/// Which kernels a generator runs: TVM's machine code, the kernel tier's,
/// or the kernel tier's with the weights bound (llm::Generator's
/// BindWeights: the weight transposes folded).
enum class Variant { Tvm, Kernels, Bound };

const char *prefixOf(Variant V) {
  switch (V) {
  case Variant::Tvm:
    return "llm/";
  case Variant::Kernels:
    return "llm+kernels/";
  case Variant::Bound:
    return "llm+kernels+bound/";
  }
  return "";
}

#ifdef VMJIT_HAVE_JIT
/// The kernel tier of the llm (compiled now, or loaded from the user's
/// object cache), kept for the process; throws if it fails.
const jit::KernelTier &kernelTier(const std::filesystem::path &Dir) {
  static std::shared_ptr<jit::KernelTier> Tier;
  if (!Tier) {
    OpenedProgram P = openProgram((Dir / "model.so").string());
    jit::KernelTierOptions O;
    O.CacheDir = jit::cacheDirFor("");
    O.Background = false;
    Tier = jit::KernelTier::start((Dir / "model.bc").string(),
                                  P.Libraries.front(), O);
  }
  const jit::KernelTierStatus St = Tier->status();
  if (St.State != jit::KernelTierState::Ready)
    throwError("JITError", St.Warning);
  return *Tier;
}
#endif

std::unique_ptr<llm::Generator> makeGenerator(const std::filesystem::path &Dir,
                                              ExecMode Mode, Variant V) {
  std::vector<std::shared_ptr<KernelLibrary>> Ahead;
  KernelEffectsLookup Effects;
#ifdef VMJIT_HAVE_JIT
  if (V != Variant::Tvm) {
    Ahead = {kernelTier(Dir).library()};
    Effects = effectsIn(kernelTier(Dir).effects());
  }
#endif
  auto G = std::make_unique<llm::Generator>(Dir, [&](VirtualMachine &VM) {
#ifdef VMJIT_HAVE_JIT
    jit::JITOptions O;
    O.Mode = Mode;
    O.Threshold = jit::kDefaultTierThreshold;
    jit::enableJIT(VM, O);
#else
    (void)VM;
    (void)Mode;
#endif
  }, std::move(Ahead), V == Variant::Bound ? &Effects : nullptr);
  // Warm up as bench::makeVM does: past the tier-up threshold, compiles
  // drained, then more.
  Any Cache = G->newCache();
  G->start(Cache, 0, kPrompt);
  int32_t Tok = 0;
#ifdef VMJIT_HAVE_JIT
  const int64_t Threshold = jit::kDefaultTierThreshold;
#else
  const int64_t Threshold = 100;
#endif
  for (int64_t I = 0; I < 2 * Threshold + 200; ++I) {
    Tok = llm::Generator::argmax(G->step(Cache, 0, {Tok}, "decode"));
    if (G->TotalLength(Cache).cast<int64_t>() >= kLastLength)
      G->PopN(Cache, 0, kLastLength - kFirstLength);
#ifdef VMJIT_HAVE_JIT
    if (I == 2 * Threshold && Mode == ExecMode::Tiered)
      jit::tierManagerOf(G->vm())->drain();
#endif
  }
  return G;
}

void runDecodeStep(benchmark::State &State, llm::Generator &G) {
  Any Cache = G.newCache();
  G.start(Cache, 0, kPrompt);
  int32_t Tok = 0;
  for (auto _ : State) {
    Tok = llm::Generator::argmax(G.step(Cache, 0, {Tok}, "decode"));
    if (G.TotalLength(Cache).cast<int64_t>() >= kLastLength)
      G.PopN(Cache, 0, kLastLength - kFirstLength);
  }
}

void runPrefill(benchmark::State &State, llm::Generator &G) {
  Any Cache = G.newCache();
  int32_t Tok = 0;
  for (auto _ : State) {
    Tok = llm::Generator::argmax(G.start(Cache, 1, kPrompt));
    G.RemoveSequence(Cache, 1);
  }
  benchmark::DoNotOptimize(Tok);
}

/// A recorded kernel call: the kernel and owned copies of its arguments
/// (DLTensor pointers copied, with their shapes, as they were).
struct RecordedCall {
  Function Kernel;
  std::vector<Any> Args;
  std::deque<DLTensor> Tensors;
  std::deque<std::vector<int64_t>> Shapes;
  std::vector<AnyView> Views;

  void add(const AnyView &A) {
    if (A.typeIndex() == kVMJITDLTensorPtr) {
      const DLTensor *T = A.cast<DLTensor *>();
      Shapes.emplace_back(T->shape, T->shape + T->ndim);
      Tensors.push_back(*T);
      Tensors.back().shape = Shapes.back().data();
      Views.emplace_back(&Tensors.back());
      return;
    }
    Args.emplace_back(A);
    Views.emplace_back(Args.back());
  }
};

/// Whether call `E` of the VM is a call of one of the model's kernels.
bool isKernel(const CallEvent &E) {
  const FunctionInfo &Info = E.VM.executable().function(E.Callee);
  return Info.Kind == FunctionKind::Packed &&
         !E.CalleeName.starts_with("vm.builtin.") &&
         !standardFunction(E.CalleeName);
}

void observe(void *Ctx, const Function &K, std::span<const AnyView> Args) {
  auto &Calls = *static_cast<std::deque<RecordedCall> *>(Ctx);
  RecordedCall &C = Calls.emplace_back();
  C.Kernel = K;
  C.Args.reserve(Args.size());
  for (const AnyView &A : Args)
    C.add(A);
}

void runDecodeFloor(benchmark::State &State, llm::Generator &G) {
  Any Cache = G.newCache();
  G.start(Cache, 0, kPrompt);
  int32_t Tok = 0;
  while (G.TotalLength(Cache).cast<int64_t>() < 32)
    Tok = llm::Generator::argmax(G.step(Cache, 0, {Tok}, "decode"));
  // Record the 33rd token's step.
  std::deque<RecordedCall> Calls;
  G.vm().setInstrument([&](const CallEvent &E) {
    if (E.Before && isKernel(E)) {
      RecordedCall &C = Calls.emplace_back();
      C.Kernel = Function(ObjectPtr<Object>::share(E.VM.poolEntry(E.Callee)));
      C.Args.reserve(E.Args.size());
      for (const AnyView &A : E.Args)
        C.add(A);
    }
    return InstrumentAction::Continue;
  });
  setBuiltinKernelObserver(observe, &Calls);
  G.step(Cache, 0, {Tok}, "decode");
  setBuiltinKernelObserver(nullptr, nullptr);
  G.vm().setInstrument({});
  for (auto _ : State) {
    for (const RecordedCall &C : Calls) {
      Any R;
      if (C.Kernel.get()->safeCall(
              C.Views.data(), static_cast<int32_t>(C.Views.size()), &R) != 0)
        throwRaisedError();
      benchmark::DoNotOptimize(R);
    }
  }
  State.counters["kernels"] = static_cast<double>(Calls.size());
}

} // namespace

namespace vmjit::bench {

void registerLlmBenchmarks(const std::filesystem::path &ModelsDir) {
  const std::filesystem::path Dir = ModelsDir / "llm";
  if (!std::filesystem::exists(Dir / "model.so")) {
    std::fprintf(stderr, "vmjit-bench: no llm benchmarks: %s is absent\n",
                 (Dir / "model.so").string().c_str());
    return;
  }
  std::vector<ExecMode> Tiers = {ExecMode::Bytecode};
#ifdef VMJIT_HAVE_JIT
  for (ExecMode T : {ExecMode::Baseline, ExecMode::Compiled, ExecMode::Tiered})
    Tiers.push_back(T);
#endif
  // Made on first use (a tiered generator warms up for a while), kept
  // until the process exits.
  static std::map<std::pair<ExecMode, Variant>,
                  std::unique_ptr<llm::Generator>>
      Generators;
  auto generator = [Dir](ExecMode T, Variant V) -> llm::Generator & {
    auto &G = Generators[{T, V}];
    if (!G)
      G = makeGenerator(Dir, T, V);
    return *G;
  };
  std::vector<Variant> Variants = {Variant::Tvm};
#ifdef VMJIT_HAVE_JIT
  if (std::filesystem::exists(Dir / "model.bc"))
    Variants.insert(Variants.end(), {Variant::Kernels, Variant::Bound});
#endif
  for (Variant K : Variants) {
    const std::string Prefix = prefixOf(K);
    for (ExecMode T : Tiers) {
      std::string Name(execModeName(T));
      benchmark::RegisterBenchmark(
          (Prefix + "prefill/" + Name).c_str(),
          [generator, T, K](benchmark::State &S) {
            runPrefill(S, generator(T, K));
          })
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          (Prefix + "decode_step/" + Name).c_str(),
          [generator, T, K](benchmark::State &S) {
            runDecodeStep(S, generator(T, K));
          })
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(
        (Prefix + "decode_step/floor").c_str(),
        [generator, K](benchmark::State &S) {
          runDecodeFloor(S, generator(ExecMode::Bytecode, K));
        })
        ->Unit(benchmark::kMicrosecond);
  }
}

} // namespace vmjit::bench
