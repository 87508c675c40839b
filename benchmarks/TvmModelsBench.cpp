//===- TvmModelsBench.cpp - Models Apache TVM's compiler built ------------===//
//
// tvm_models/MODEL/TIER: one call of a model TVM's compiler wrote (the
// model.so of ../shared/tvm-models/MODEL, see its README.md) with the
// model's own inputs (in*.npy), per iteration, in the tiers bytecode,
// baseline, compiled and tiered (steady state, as every workload:
// bench::makeVM). The folder is VMJIT_TVM_MODELS when set, else
// ../shared/tvm-models next to the source tree; without it nothing is
// registered (one line on stderr says so). The `llm` folder has its own
// workload (LlmBench.cpp), registered from here.
//
// tvm_models/MODEL/floor: the model's kernels alone. The function runs once
// on the interpreter with an instrument that records every call of a
// kernel (a packed function that is not vm.builtin.* or another standard
// function, exported by the model's library): its function object and its
// arguments, whose tensors (outputs included) are kept alive. Each
// iteration then calls those kernels through their safe-call entries with
// the recorded arguments in the recorded order, from a C++ loop: no
// driver, no allocation. A tier's time minus the floor's is what its
// driver costs (allocation, shape checks, dispatch); scripts/bench-report.py
// prints it. Counter `kernels`: kernel calls per iteration.
//
// tvm_models/MODEL+kernels/TIER and .../floor: the same with the kernel
// tier (model.bc beside the model's library compiled for this CPU,
// include/vmjit/jit/kernel_tier.h), compiled before the benchmark's first
// iteration (cached in the user's object cache: the first run of a
// benchmark binary compiles, later ones load) and swapped in: every call
// runs vmjit's kernels. The floor is the same recorded calls through the
// kernel tier's entries: how far each tier is from its new floor.
//
// tvm_models/mlp+kernels+bound/TIER and .../floor: mlp with the kernel
// tier and its weights (every input after the first) bound once
// (vm/bind_params.h), the kernel calls on them that the kernel tier's
// effects prove foldable run at bind time: each call takes x alone, as
// MLC-LLM's engine calls a model whose weights it loaded once. Counter
// `folded`: calls folded.
//
// tvm_models/many_small+kernels-late/TIER (compiled, tiered): the kernel
// tier as `vmjit run` starts it by default, in the background, with no
// object cache (each run of the benchmark compiles its kernels anew,
// ~0.2 s): the VM is made and warmed as every workload while TVM's
// machine code runs, then the kernel tier is waited for, and the tier
// manager's compiles (those the kernels' arrival queued:
// jit::rebindPublishedKernels), and the model is timed. Counter `late`: 1
// when the kernels were still compiling once the VM was warm (the case
// measured; 0 on a machine fast enough to compile them first).
//
// A model whose function is not bytecode (TVM's exec_mode="compiled",
// compiled_mode.so: a `__vmtir__NAME` function of TVM's own code, which
// calls its kernels itself) has no floor: the instrument never sees those
// calls. Registration says so on stderr.
//
// The models are loaded when the benchmarks are registered, once per
// process: from main (registerTvmModelBenchmarks), not during static
// initialization.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"

#include "vmjit/builtins/builtins.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/library.h"
#include "vmjit/vm/bind_params.h"
#include "vmjit/vm/program.h"
#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/jit/tier_manager.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

struct ModelCase {
  const char *Name;    ///< the benchmark's MODEL
  const char *Folder;  ///< under the models directory
  const char *Library; ///< in Folder
  const char *Func;
  int NumInputs; ///< in0.npy .. in<N-1>.npy of Folder
};

constexpr ModelCase kCases[] = {
    {"mlp", "mlp", "model.so", "main", 5},
    {"decoder", "decoder", "model.so", "main", 1},
    {"dynshape", "dynshape", "model.so", "main", 3},
    {"control", "control", "model.so", "main", 3},
    {"many_small", "many_small", "model.so", "main", 1},
    {"kvcache", "kvcache", "model.so", "run3", 3},
    {"compiled_mode", "compiled_mode", "compiled_mode.so", "main", 5},
};

struct Model {
  OpenedProgram Prog;
  std::string Func;
  std::vector<Any> Inputs;
  std::vector<AnyView> Views;
  /// model.bc beside the library, or "".
  std::string Bitcode;
  /// With the kernel tier: its library ahead of the model's.
  bool Kernels = false;
  std::shared_ptr<KernelLibrary> KernelTierLibrary;
  /// With every input after the first bound (Views then holds the first):
  /// the bound executable, once made, and the calls folded.
  bool Bound = false;
  std::shared_ptr<Executable> BoundExe;
  size_t Folded = 0;
#ifdef VMJIT_HAVE_JIT
  std::shared_ptr<jit::KernelTier> Tier;
#endif

  /// The executable the benchmarks run.
  const std::shared_ptr<Executable> &exe() const {
    return BoundExe ? BoundExe : Prog.Exe;
  }

  VMOptions options() const {
    VMOptions O;
    O.Libraries = Prog.Libraries;
    if (KernelTierLibrary)
      O.Libraries.insert(O.Libraries.begin(), KernelTierLibrary);
    return O;
  }
};

#ifdef VMJIT_HAVE_JIT
/// Compiles `M`'s kernel tier (once; kept for the process) and puts its
/// library ahead of the model's; false, with the benchmark skipped, when
/// it does not compile.
bool startKernelTier(benchmark::State &State, Model &M) {
  static std::vector<std::shared_ptr<jit::KernelTier>> Tiers;
  if (M.KernelTierLibrary)
    return true;
  jit::KernelTierOptions O;
  O.CacheDir = jit::cacheDirFor("");
  O.Background = false;
  auto T = jit::KernelTier::start(M.Bitcode, M.Prog.Libraries.front(), O);
  const jit::KernelTierStatus St = T->status();
  if (St.State != jit::KernelTierState::Ready) {
    State.SkipWithError(St.Warning.c_str());
    return false;
  }
  M.KernelTierLibrary = T->library();
  M.Tier = T;
  Tiers.push_back(std::move(T));
  return true;
}

/// Binds every input of `M` after the first (once), folding with the
/// kernel tier's effects.
void bindWeights(Model &M) {
  if (M.BoundExe)
    return;
  auto VM = VirtualMachine::create(M.Prog.Exe, M.options());
  std::vector<ParamBinding> P;
  for (size_t I = 1; I < M.Inputs.size(); ++I)
    P.emplace_back(static_cast<int64_t>(I), M.Inputs[I]);
  BindResult B = bindParams(*VM, M.Func, P, effectsIn(M.Tier->effects()));
  M.BoundExe = B.Exe;
  M.Folded = B.Folded.size();
  M.Views.resize(1);
}
#endif

/// Makes `M` ready for a benchmark: with the kernel tier if it asks for
/// it, its weights bound if it asks for that.
bool prepare(benchmark::State &State, Model &M) {
#ifdef VMJIT_HAVE_JIT
  if (M.Kernels && !startKernelTier(State, M))
    return false;
  if (M.Bound) {
    bindWeights(M);
    State.counters["folded"] = static_cast<double>(M.Folded);
  }
#else
  (void)State;
#endif
  return true;
}

std::string modelsDir() {
  if (const char *E = std::getenv("VMJIT_TVM_MODELS"); E && *E)
    return E;
  return std::string(VMJIT_SOURCE_DIR) + "/../shared/tvm-models";
}

void runTier(benchmark::State &State, Model &M, ExecMode Mode) {
  if (!prepare(State, M))
    return;
  auto VM = bench::makeVM(M.exe(), M.options(), Mode, [&](VirtualMachine &V) {
    V.invoke(M.Func, M.Views);
  });
  int64_t F = VM->functionIndex(M.Func);
  for (auto _ : State) {
    Any R = VM->invoke(F, M.Views);
    benchmark::DoNotOptimize(R);
  }
}

#ifdef VMJIT_HAVE_JIT
/// tvm_models/MODEL+kernels-late/TIER (see the file comment).
void runLate(benchmark::State &State, Model &M, ExecMode Mode) {
  jit::KernelTierOptions KO;
  KO.Background = true; // and no cache: a tier of its own, compiling now
  auto T = jit::KernelTier::start(M.Bitcode, M.Prog.Libraries.front(), KO);
  VMOptions O;
  O.Libraries = M.Prog.Libraries;
  O.Libraries.insert(O.Libraries.begin(), T->library());
  auto VM = bench::makeVM(
      M.exe(), O, Mode, [&](VirtualMachine &V) { V.invoke(M.Func, M.Views); });
  State.counters["late"] =
      T->status().State == jit::KernelTierState::Compiling ? 1 : 0;
  T->wait();
  if (T->status().State != jit::KernelTierState::Ready) {
    State.SkipWithError(T->status().Warning.c_str());
    return;
  }
  jit::tierManagerOf(*VM)->drain();
  int64_t F = VM->functionIndex(M.Func);
  VM->invoke(F, M.Views);
  for (auto _ : State) {
    Any R = VM->invoke(F, M.Views);
    benchmark::DoNotOptimize(R);
  }
}
#endif

/// One recorded kernel call: the callee and its arguments (owned).
struct KernelCall {
  FunctionObj *Fn;
  std::vector<Any> Args;
  std::vector<AnyView> Views;
};

/// Whether call `E` is a call of one of the model's kernels.
bool isKernel(const CallEvent &E, const Model &M) {
  const FunctionInfo &Info = E.VM.executable().function(E.Callee);
  if (Info.Kind != FunctionKind::Packed ||
      E.CalleeName.starts_with("vm.builtin.") ||
      standardFunction(E.CalleeName))
    return false;
  for (const auto &L : M.Prog.Libraries)
    if (L->findEntry(E.CalleeName))
      return true;
  return false;
}

void runFloor(benchmark::State &State, Model &M) {
  if (!prepare(State, M))
    return;
  // The VM owns the kernels' function objects and the storage the
  // recorded tensors live in; its code runs only once, to record.
  auto VM = VirtualMachine::create(M.exe(), M.options());
  std::vector<KernelCall> Calls;
  VM->setInstrument([&](const CallEvent &E) {
    if (E.Before && isKernel(E, M)) {
      KernelCall C{E.VM.poolEntry(E.Callee), {}, {}};
      for (const AnyView &A : E.Args)
        C.Args.emplace_back(A);
      Calls.push_back(std::move(C));
    }
    return InstrumentAction::Continue;
  });
  {
    Any R = VM->invoke(M.Func, M.Views);
    benchmark::DoNotOptimize(R);
  }
  VM->setInstrument({});
  for (KernelCall &C : Calls)
    for (const Any &A : C.Args)
      C.Views.emplace_back(A);
  if (Calls.empty()) {
    State.SkipWithError("the instrument saw no kernel call");
    return;
  }
  for (auto _ : State) {
    for (const KernelCall &C : Calls) {
      Any R;
      if (C.Fn->safeCall(C.Views.data(), static_cast<int32_t>(C.Views.size()),
                         &R) != 0)
        throwRaisedError();
      benchmark::DoNotOptimize(R);
    }
  }
  State.counters["kernels"] = static_cast<double>(Calls.size());
}

/// Loads case `C` from `Dir`; throws an Error if a file is missing or bad.
std::unique_ptr<Model> loadModel(const std::filesystem::path &Dir,
                                 const ModelCase &C) {
  auto M = std::make_unique<Model>();
  const std::filesystem::path Folder = Dir / C.Folder;
  M->Prog = openProgram((Folder / C.Library).string());
  M->Func = C.Func;
  if (!M->Prog.Exe->findFunction(C.Func))
    throwError("LookupError", std::string("no function ") + C.Func + " in " +
                                  (Folder / C.Library).string());
  for (int I = 0; I < C.NumInputs; ++I)
    M->Inputs.emplace_back(
        readNpy((Folder / ("in" + std::to_string(I) + ".npy")).string()));
  for (const Any &A : M->Inputs)
    M->Views.emplace_back(A);
#ifdef VMJIT_HAVE_JIT
  M->Bitcode = jit::kernelBitcodeBeside((Folder / C.Library).string());
#endif
  return M;
}

/// Registers tvm_models/NAME/TIER for `Tiers`, and tvm_models/NAME/floor
/// unless the function is TVM's compiled-mode code.
void registerModel(
    const std::string &Name, const char *Func, Model &M,
    const std::vector<std::pair<std::string_view, ExecMode>> &Tiers) {
  const std::string Prefix = "tvm_models/" + Name + "/";
  for (const auto &[TierName, Mode] : Tiers) {
    ExecMode T = Mode;
    benchmark::RegisterBenchmark(
        (Prefix + std::string(TierName)).c_str(),
        [&M, T](benchmark::State &S) { runTier(S, M, T); })
        ->Unit(benchmark::kMicrosecond);
  }
  const FunctionInfo &F =
      M.Prog.Exe->function(*M.Prog.Exe->findFunction(M.Func));
  if (F.Kind != FunctionKind::Bytecode) {
    std::fprintf(stderr,
                 "vmjit-bench: no tvm_models/%s/floor: its %s is a %s "
                 "function (TVM's compiled mode), which calls its kernels "
                 "itself, unseen by an instrument\n",
                 Name.c_str(), Func,
                 std::string(functionKindName(F.Kind)).c_str());
    return;
  }
  benchmark::RegisterBenchmark((Prefix + "floor").c_str(),
                               [&M](benchmark::State &S) { runFloor(S, M); })
      ->Unit(benchmark::kMicrosecond);
}

} // namespace

namespace vmjit::bench {

void registerTvmModelBenchmarks() {
  const std::filesystem::path Dir = modelsDir();
  std::error_code EC;
  if (!std::filesystem::is_directory(Dir, EC)) {
    std::fprintf(stderr,
                 "vmjit-bench: no tvm_models benchmarks: %s is not a "
                 "directory (set VMJIT_TVM_MODELS to TVM's model folders)\n",
                 Dir.string().c_str());
    return;
  }
  // Never freed: the benchmarks refer to them until the process exits.
  static std::vector<std::unique_ptr<Model>> Models;
  std::vector<std::pair<std::string_view, ExecMode>> Tiers = {
      {execModeName(ExecMode::Bytecode), ExecMode::Bytecode}};
#ifdef VMJIT_HAVE_JIT
  for (ExecMode T : {ExecMode::Baseline, ExecMode::Compiled, ExecMode::Tiered})
    Tiers.emplace_back(execModeName(T), T);
#endif
  for (const ModelCase &C : kCases) {
    std::unique_ptr<Model> Loaded;
    try {
      Loaded = loadModel(Dir, C);
    } catch (const Error &E) {
      std::fprintf(stderr, "vmjit-bench: no tvm_models/%s benchmarks: %s\n",
                   C.Name, E.what());
      continue;
    }
    Model &M = *Models.emplace_back(std::move(Loaded));
    registerModel(C.Name, C.Func, M, Tiers);
    if (M.Bitcode.empty())
      continue;
    // The same model with the kernel tier (its own VMs and recordings).
    Models.push_back(loadModel(Dir, C));
    Models.back()->Kernels = true;
    registerModel(std::string(C.Name) + "+kernels", C.Func, *Models.back(),
                  Tiers);
#ifdef VMJIT_HAVE_JIT
    if (std::string_view(C.Name) == "many_small")
      for (ExecMode T : {ExecMode::Compiled, ExecMode::Tiered}) {
        Model *Late = Models.back().get();
        benchmark::RegisterBenchmark(
            ("tvm_models/" + std::string(C.Name) + "+kernels-late/" +
             std::string(execModeName(T)))
                .c_str(),
            [Late, T](benchmark::State &S) { runLate(S, *Late, T); })
            ->Unit(benchmark::kMicrosecond);
      }
#endif
    if (std::string_view(C.Name) != "mlp")
      continue;
    // Its weights bound (its own VMs and recordings).
    Models.push_back(loadModel(Dir, C));
    Models.back()->Kernels = true;
    Models.back()->Bound = true;
    registerModel(std::string(C.Name) + "+kernels+bound", C.Func,
                  *Models.back(), Tiers);
  }
  registerLlmBenchmarks(Dir);
}

} // namespace vmjit::bench
