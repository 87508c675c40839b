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
#include "vmjit/vm/program.h"

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

  VMOptions options() const {
    VMOptions O;
    O.Libraries = Prog.Libraries;
    return O;
  }
};

std::string modelsDir() {
  if (const char *E = std::getenv("VMJIT_TVM_MODELS"); E && *E)
    return E;
  return std::string(VMJIT_SOURCE_DIR) + "/../shared/tvm-models";
}

void runTier(benchmark::State &State, const Model &M, ExecMode Mode) {
  auto VM = bench::makeVM(M.Prog.Exe, M.options(), Mode,
                          [&](VirtualMachine &V) {
                            V.invoke(M.Func, M.Views);
                          });
  int64_t F = VM->functionIndex(M.Func);
  for (auto _ : State) {
    Any R = VM->invoke(F, M.Views);
    benchmark::DoNotOptimize(R);
  }
}

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

void runFloor(benchmark::State &State, const Model &M) {
  // The VM owns the kernels' function objects and the storage the
  // recorded tensors live in; its code runs only once, to record.
  auto VM = VirtualMachine::create(M.Prog.Exe, M.options());
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
  return M;
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
    const Model &M = *Models.emplace_back(std::move(Loaded));
    const std::string Prefix = std::string("tvm_models/") + C.Name + "/";
    for (const auto &[TierName, Mode] : Tiers) {
      ExecMode T = Mode;
      benchmark::RegisterBenchmark(
          (Prefix + std::string(TierName)).c_str(),
          [&M, T](benchmark::State &S) { runTier(S, M, T); })
          ->Unit(benchmark::kMicrosecond);
    }
    const FunctionInfo &F = M.Prog.Exe->function(*M.Prog.Exe->findFunction(M.Func));
    if (F.Kind != FunctionKind::Bytecode) {
      std::fprintf(stderr,
                   "vmjit-bench: no tvm_models/%s/floor: its %s is a %s "
                   "function (TVM's compiled mode), which calls its kernels "
                   "itself, unseen by an instrument\n",
                   C.Name, C.Func, std::string(functionKindName(F.Kind)).c_str());
      continue;
    }
    benchmark::RegisterBenchmark(
        (Prefix + "floor").c_str(),
        [&M](benchmark::State &S) { runFloor(S, M); })
        ->Unit(benchmark::kMicrosecond);
  }
  registerLlmBenchmarks(Dir);
}

} // namespace vmjit::bench
