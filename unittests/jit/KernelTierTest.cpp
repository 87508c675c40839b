//===- KernelTierTest.cpp - TVM's kernels compiled from model.bc ----------===//
//
// The kernel tier (vmjit/jit/kernel_tier.h): for every model of
// ../shared/tvm-models with a model.bc, the model run with TVM's machine
// code (model.so) and with the kernels compiled from the bitcode gives the
// same bits, in every mode; a bitcode of another model is a warning and
// the model still runs on TVM's kernels; the context slots are filled.
// Skipped when ../shared/tvm-models or a model.bc is absent.
//
//===----------------------------------------------------------------------===//

#include "SameBits.h"
#include "TvmModelCalls.h"
#include "EveryMode.h"

#include "compile_pool.h"
#include "vmjit/files/npy.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace vmjit::jittest {
namespace {

using vm::readNpy;

const std::filesystem::path kModels = VMJIT_TVM_MODELS;

/// The object cache of this process's tests (each model compiles once),
/// removed when they end.
const std::string &testCache() {
  static const std::string Dir =
      (std::filesystem::temp_directory_path() /
       ("vmjit-kernel-tier-cache-" + std::to_string(::getpid())))
          .string();
  return Dir;
}

class RemoveTestCache : public ::testing::Environment {
public:
  void TearDown() override { std::filesystem::remove_all(testCache()); }
};
[[maybe_unused]] ::testing::Environment *const RemoveTestCacheEnv =
    ::testing::AddGlobalTestEnvironment(new RemoveTestCache);

jit::KernelTierOptions cachedOptions() {
  jit::KernelTierOptions O;
  O.CacheDir = testCache();
  return O;
}

/// The kernel tier of `Bc` for `Tvm`, compiled before it returns.
std::shared_ptr<jit::KernelTier>
startNow(const std::string &Bc, std::shared_ptr<KernelLibrary> Tvm,
         jit::KernelTierOptions O = cachedOptions()) {
  O.Background = false;
  return jit::KernelTier::start(Bc, std::move(Tvm), O);
}

/// The kernel tier's library ahead of the model's.
std::vector<std::shared_ptr<KernelLibrary>>
withTier(const jit::KernelTier &K,
         const std::vector<std::shared_ptr<KernelLibrary>> &Model) {
  std::vector<std::shared_ptr<KernelLibrary>> Libs = {K.library()};
  Libs.insert(Libs.end(), Model.begin(), Model.end());
  return Libs;
}

using ModelCall = jittest::TvmModelCall;

const std::vector<ModelCall> &modelCalls() { return jittest::tvmModelCalls(); }


/// Three calls (the last one's result), so that tiered mode runs tier 2.
Any callThrice(vm::VirtualMachine &VM, const ModelCall &C,
               const std::vector<AnyView> &Args) {
  Any R;
  for (int I = 0; I < 3; ++I) {
    R.reset();
    R = VM.invoke(C.Func, Args);
  }
  return R;
}

/// The inputs of `C` and the result of calling it on TVM's kernels (the
/// interpreter; three calls, as callThrice).
struct TvmRun {
  std::vector<Tensor> Inputs;
  std::vector<AnyView> Args;
  Any Expected;
};
TvmRun runOnTvm(const vm::OpenedProgram &P, const ModelCall &C) {
  TvmRun R;
  for (const char *In : C.Inputs)
    R.Inputs.push_back(readNpy((kModels / In).string()));
  R.Args.assign(R.Inputs.begin(), R.Inputs.end());
  auto Tvm = vmWith(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  R.Expected = callThrice(*Tvm, C, R.Args);
  return R;
}

/// The bitcode beside the model's library, or "".
std::string bitcodeOf(const ModelCall &C) {
  return jit::kernelBitcodeBeside((kModels / C.Library).string());
}

TEST(KernelTierTest, CompiledKernelsGiveTvmsBitsInEveryMode) {
  if (!std::filesystem::exists(kModels / "README.md"))
    GTEST_SKIP() << "no TVM models at " << kModels;
  int Ran = 0;
  for (const ModelCall &C : modelCalls()) {
    if (bitcodeOf(C).empty())
      continue;
    SCOPED_TRACE(C.Name);
    vm::OpenedProgram P = vm::openProgram((kModels / C.Library).string());
    ASSERT_FALSE(P.Libraries.empty());
    auto K = startNow(bitcodeOf(C), P.Libraries.front());
    const jit::KernelTierStatus St = K->status();
    ASSERT_EQ(St.State, jit::KernelTierState::Ready) << St.Warning;
    EXPECT_EQ(St.Kernels, P.Libraries.front()->functionNames());
    const TvmRun Run = runOnTvm(P, C);
    const std::vector<AnyView> &Args = Run.Args;
    const Any &Expected = Run.Expected;
    for (const TestMode &M : everyMode()) {
      SCOPED_TRACE(modeName(M));
      auto VM = vmWith(P.Exe, withTier(*K, P.Libraries), M);
      EXPECT_TRUE(sameBits(callThrice(*VM, C, Args), Expected));
    }
    // Every call ran the compiled kernels, none TVM's code.
    EXPECT_EQ(K->status().TvmCalls, 0u);
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no model.bc in " << kModels;
}

/// Four decode steps of the llm on TVM's paged KV cache with `Libs`
/// (the hidden state of step I is all (I + 1) / 4), their results in
/// order.
std::vector<Any>
llmDecodeSteps(std::shared_ptr<vm::Executable> Exe,
               std::vector<std::shared_ptr<KernelLibrary>> Libs,
               const TestMode &M) {
  auto VM = vmWith(std::move(Exe), std::move(Libs), M);
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
  Add(Cache, 0);
  std::vector<Any> Out;
  for (int I = 0; I < 4; ++I) {
    Tensor H = Tensor::empty({1, 1, 64}, DLDataType{kDLFloat, 32, 1});
    std::fill_n(H.data<float>(), 64, 0.25f * float(I + 1));
    Begin(Cache, Shape{0}, Shape{1});
    std::vector<AnyView> Args{H, Cache, Weights};
    Out.push_back(VM->invoke("decode", Args));
    End(Cache);
  }
  return Out;
}

TEST(KernelTierTest, TheLlmsDecodeStepsGiveTvmsBits) {
  // 43 kernels: paged attention, rotary embedding (sincosf), matmuls.
  const std::filesystem::path Bc = kModels / "llm" / "model.bc";
  if (!std::filesystem::exists(Bc))
    GTEST_SKIP() << "no " << Bc;
  vm::OpenedProgram P = vm::openProgram((kModels / "llm/model.so").string());
  auto K = startNow(Bc.string(), P.Libraries.front());
  ASSERT_EQ(K->status().State, jit::KernelTierState::Ready)
      << K->status().Warning;
  const std::vector<Any> Expected =
      llmDecodeSteps(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  for (vm::ExecMode Mode : {vm::ExecMode::Bytecode, vm::ExecMode::Compiled}) {
    SCOPED_TRACE(vm::execModeName(Mode));
    const std::vector<Any> Got =
        llmDecodeSteps(P.Exe, withTier(*K, P.Libraries), {Mode});
    ASSERT_EQ(Got.size(), Expected.size());
    for (size_t I = 0; I < Got.size(); ++I)
      EXPECT_TRUE(sameBits(Got[I], Expected[I])) << "step " << I;
  }
}

/// The largest |a - b| over the float32 tensors of two results.
double maxAbsDifference(const Any &A, const Any &B) {
  std::vector<Tensor> TA, TB;
  flatten(A, TA);
  flatten(B, TB);
  double Max = 0;
  for (size_t I = 0; I < TA.size() && I < TB.size(); ++I)
    for (int64_t J = 0; J < TA[I].numel(); ++J)
      Max = std::max(Max, double(std::abs(TA[I].data<float>()[J] -
                                          TB[I].data<float>()[J])));
  return Max;
}

TEST(KernelTierTest, FastMathIsOptInAndStaysCloseToTvm) {
  // FMA fusion and reassociation: TVM's bits no more, its values nearly.
  const std::filesystem::path Bc = kModels / "mlp" / "model.bc";
  if (!std::filesystem::exists(Bc))
    GTEST_SKIP() << "no " << Bc;
  const ModelCall &C = modelCalls().front();
  ASSERT_STREQ(C.Name, "mlp");
  vm::OpenedProgram P = vm::openProgram((kModels / C.Library).string());
  jit::KernelTierOptions O = cachedOptions();
  O.FastMath = true;
  auto K = startNow(Bc.string(), P.Libraries.front(), O);
  ASSERT_EQ(K->status().State, jit::KernelTierState::Ready)
      << K->status().Warning;
  const TvmRun Run = runOnTvm(P, C);
  const std::vector<AnyView> &Args = Run.Args;
  const Any &Expected = Run.Expected;
  auto VM = vmWith(P.Exe, withTier(*K, P.Libraries), {vm::ExecMode::Bytecode});
  const double Diff = maxAbsDifference(callThrice(*VM, C, Args), Expected);
  std::ostringstream Text;
  Text << Diff;
  RecordProperty("max_abs_difference", Text.str());
  EXPECT_LT(Diff, 1e-4);
}

TEST(KernelTierTest, TheSecondLoadComesFromTheObjectCache) {
  const std::filesystem::path Bc = kModels / "mlp" / "model.bc";
  if (!std::filesystem::exists(Bc))
    GTEST_SKIP() << "no " << Bc;
  const std::filesystem::path Cache =
      std::filesystem::temp_directory_path() /
      ("vmjit-kernel-tier-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(Cache);
  vm::OpenedProgram P = vm::openProgram((kModels / "mlp/model.so").string());
  jit::KernelTierOptions O;
  O.CacheDir = Cache.string();
  auto First = startNow(Bc.string(), P.Libraries.front(), O);
  const jit::KernelTierStatus FirstSt = First->status();
  // While it lives, a second start shares it.
  EXPECT_EQ(startNow(Bc.string(), P.Libraries.front(), O), First);
  First.reset();
  const jit::KernelTierStatus SecondSt =
      startNow(Bc.string(), P.Libraries.front(), O)->status();
  std::filesystem::remove_all(Cache);
  ASSERT_EQ(FirstSt.State, jit::KernelTierState::Ready) << FirstSt.Warning;
  ASSERT_EQ(SecondSt.State, jit::KernelTierState::Ready) << SecondSt.Warning;
  EXPECT_FALSE(FirstSt.CacheHit);
  EXPECT_TRUE(SecondSt.CacheHit);
  EXPECT_NE(SecondSt.note().find("from the object cache"), std::string::npos);
}

TEST(KernelTierTest, AnotherModelsBitcodeIsAWarningAndTvmsKernelsRun) {
  const std::filesystem::path Bc = kModels / "mlp" / "model.bc";
  if (!std::filesystem::exists(Bc) ||
      !std::filesystem::exists(kModels / "decoder" / "model.so"))
    GTEST_SKIP() << "no mlp/model.bc or decoder/model.so in " << kModels;
  vm::OpenedProgram P =
      vm::openProgram((kModels / "decoder/model.so").string());
  auto K = startNow(Bc.string(), P.Libraries.front());
  const jit::KernelTierStatus St = K->status();
  EXPECT_EQ(St.State, jit::KernelTierState::Failed);
  EXPECT_NE(St.Warning.find("does not match the kernel library"),
            std::string::npos)
      << St.Warning;
  EXPECT_NE(St.Warning.find("mlp/model.bc"), std::string::npos) << St.Warning;
  // The model runs as before, on model.so's kernels, through the tier.
  Tensor X = readNpy((kModels / "decoder/in0.npy").string());
  auto VM =
      vmWith(P.Exe, withTier(*K, P.Libraries), {vm::ExecMode::Bytecode});
  std::vector<AnyView> Args{AnyView(X)};
  Any R = VM->invoke("main", Args);
  EXPECT_TRUE(sameBits(R, Any(readNpy((kModels / "decoder/out.npy").string())))
              << "(TVM's own output; the same kernels)");
  EXPECT_GT(K->status().TvmCalls, 0u);
}

TEST(KernelTierTest, TheContextSlotsAreFilled) {
  // decoder's kernels allocate workspace through __TVMBackendAllocWorkspace.
  const std::filesystem::path Bc = kModels / "decoder" / "model.bc";
  if (!std::filesystem::exists(Bc))
    GTEST_SKIP() << "no " << Bc;
  vm::OpenedProgram P =
      vm::openProgram((kModels / "decoder/model.so").string());
  auto K = startNow(Bc.string(), P.Libraries.front());
  ASSERT_EQ(K->status().State, jit::KernelTierState::Ready)
      << K->status().Warning;
  for (const char *Slot :
       {"__TVMBackendAllocWorkspace", "__TVMBackendFreeWorkspace"}) {
    SCOPED_TRACE(Slot);
    auto *Cell = static_cast<void *const *>(K->compiledSymbol(Slot));
    ASSERT_NE(Cell, nullptr);
    EXPECT_NE(*Cell, nullptr);
    // The same host function as in the dlopen'ed model.so.
    auto *TvmCell =
        static_cast<void *const *>(P.Libraries.front()->symbol(Slot));
    ASSERT_NE(TvmCell, nullptr);
    EXPECT_EQ(*Cell, *TvmCell);
  }
}

TEST(KernelTierTest, AMissingBitcodeFileIsAJITError) {
  if (!std::filesystem::exists(kModels / "mlp" / "model.so"))
    GTEST_SKIP() << "no TVM models at " << kModels;
  vm::OpenedProgram P = vm::openProgram((kModels / "mlp/model.so").string());
  try {
    jit::KernelTier::start((kModels / "mlp" / "no-such.bc").string(),
                           P.Libraries.front());
    FAIL() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "JITError");
  }
}

TEST(KernelTierTest, TheBitcodeBesideAProgramIsFound) {
  if (!std::filesystem::exists(kModels / "mlp" / "model.bc"))
    GTEST_SKIP() << "no mlp/model.bc";
  EXPECT_EQ(jit::kernelBitcodeBeside((kModels / "mlp/model.tvmexec").string()),
            (kModels / "mlp/model.bc").string());
  EXPECT_EQ(jit::kernelBitcodeBeside((kModels / "mlp/model.so").string()),
            (kModels / "mlp/model.bc").string());
  EXPECT_EQ(jit::kernelBitcodeBeside((kModels / "mlp/in0.bc").string()), "");
}

/// Holds the compile pool's thread for kernel compiles busy until
/// released, so that a kernel compile queued meanwhile waits.
class PoolHold {
public:
  PoolHold() {
    jit::submitCompile(
        this,
        [this](const jit::CancelFlag &) {
          while (!Released.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        jit::CompileLane::Long);
  }
  ~PoolHold() { release(); }
  void release() {
    Released.store(true);
    jit::waitForCompiles(this);
  }

private:
  std::atomic<bool> Released{false};
};

/// The mlp opened, with its run on TVM's kernels; nothing without its
/// bitcode.
struct MlpRun {
  std::filesystem::path Bc;
  const ModelCall &C;
  vm::OpenedProgram P;
  TvmRun Run;
};
std::unique_ptr<MlpRun> mlpRun() {
  const std::filesystem::path Bc = kModels / "mlp" / "model.bc";
  if (!std::filesystem::exists(Bc))
    return nullptr;
  const ModelCall &C = modelCalls().front();
  vm::OpenedProgram P = vm::openProgram((kModels / C.Library).string());
  TvmRun Run = runOnTvm(P, C);
  return std::unique_ptr<MlpRun>(
      new MlpRun{Bc, C, std::move(P), std::move(Run)});
}

TEST(KernelTierTest, TvmsCodeRunsUntilTheCompiledKernelsAreSwappedIn) {
  std::unique_ptr<MlpRun> M = mlpRun();
  if (!M)
    GTEST_SKIP() << "no mlp/model.bc in " << kModels;
  const std::filesystem::path &Bc = M->Bc;
  const ModelCall &C = M->C;
  const vm::OpenedProgram &P = M->P;
  const TvmRun &Run = M->Run;
  const std::vector<AnyView> &Args = Run.Args;
  const Any &Expected = Run.Expected;

  PoolHold Hold;
  auto K = jit::KernelTier::start(Bc.string(), P.Libraries.front(),
                                  cachedOptions());
  std::vector<std::unique_ptr<vm::VirtualMachine>> VMs;
  for (const TestMode &M : everyMode()) {
    SCOPED_TRACE(modeName(M));
    VMs.push_back(vmWith(P.Exe, withTier(*K, P.Libraries), M));
    EXPECT_TRUE(sameBits(callThrice(*VMs.back(), C, Args), Expected));
  }
  jit::KernelTierStatus St = K->status();
  EXPECT_EQ(St.State, jit::KernelTierState::Compiling);
  EXPECT_NE(St.note().find("compiling"), std::string::npos) << St.note();
  const uint64_t TvmCalls = St.TvmCalls;
  EXPECT_GT(TvmCalls, 0u);

  Hold.release();
  St = K->wait();
  ASSERT_EQ(St.State, jit::KernelTierState::Ready) << St.Warning;
  // The next calls, in code compiled before the swap too, take the
  // compiled kernels.
  for (size_t I = 0; I < VMs.size(); ++I) {
    SCOPED_TRACE(modeName(everyMode()[I]));
    EXPECT_TRUE(sameBits(callThrice(*VMs[I], C, Args), Expected));
  }
  EXPECT_EQ(K->status().TvmCalls, TvmCalls);
  EXPECT_NE(K->status().note().find("calls ran TVM's code"), std::string::npos);
}

TEST(KernelTierTest, DestroyingTheTierAbandonsItsCompile) {
  std::unique_ptr<MlpRun> M = mlpRun();
  if (!M)
    GTEST_SKIP() << "no mlp/model.bc in " << kModels;
  const ModelCall &C = M->C;
  const vm::OpenedProgram &P = M->P;
  const TvmRun &Run = M->Run;

  PoolHold Hold;
  auto K = jit::KernelTier::start(M->Bc.string(), P.Libraries.front(),
                                  cachedOptions());
  ASSERT_EQ(K->status().State, jit::KernelTierState::Compiling);
  std::shared_ptr<KernelLibrary> Lib = K->library();
  K.reset(); // the queued compile is dropped, not left to run
  Hold.release();
  PoolHold().release(); // the lane runs in order: what was queued has run
  // Nothing was published. The library still serves every kernel, with
  // TVM's code.
  for (const std::string &Name : Lib->functionNames()) {
    std::optional<Function> F = Lib->find(Name);
    ASSERT_TRUE(F);
    auto *Slot = static_cast<const KernelSlotObj *>(F->get());
    EXPECT_EQ(Slot->compiled(), nullptr) << Name;
  }
  std::vector<std::shared_ptr<KernelLibrary>> Libs = {Lib};
  Libs.insert(Libs.end(), P.Libraries.begin(), P.Libraries.end());
  for (const TestMode &Mode : everyMode()) {
    SCOPED_TRACE(modeName(Mode));
    auto VM = vmWith(P.Exe, Libs, Mode);
    EXPECT_TRUE(sameBits(callThrice(*VM, C, Run.Args), Run.Expected));
  }
}

TEST(KernelTierTest, UnalignedTensorsAreCopiedInEveryMode) {
  // The compiled kernels assume 64-byte aligned data (AVX code faults on
  // an unaligned vector load); vmjit copies what is not.
  int Ran = 0;
  for (const ModelCall &C : modelCalls()) {
    if (bitcodeOf(C).empty())
      continue;
    SCOPED_TRACE(C.Name);
    vm::OpenedProgram P = vm::openProgram((kModels / C.Library).string());
    auto K = startNow(bitcodeOf(C), P.Libraries.front());
    ASSERT_EQ(K->status().State, jit::KernelTierState::Ready);
    const TvmRun Run = runOnTvm(P, C);
    const std::vector<Tensor> &Inputs = Run.Inputs;
    const Any &Expected = Run.Expected;
    std::vector<Tensor> Unaligned;
    for (const Tensor &T : Inputs) {
      Unaligned.push_back(unalignedCopy(T));
      ASSERT_NE(reinterpret_cast<uintptr_t>(Unaligned.back().data()) % 64, 0u);
    }
    std::vector<AnyView> UArgs(Unaligned.begin(), Unaligned.end());
    for (const TestMode &M : everyMode()) {
      SCOPED_TRACE(modeName(M));
      auto VM = vmWith(P.Exe, withTier(*K, P.Libraries), M);
      EXPECT_TRUE(sameBits(callThrice(*VM, C, UArgs), Expected));
    }
    // The inputs are as they were.
    for (size_t I = 0; I < Inputs.size(); ++I)
      EXPECT_EQ(std::memcmp(Inputs[I].data(), Unaligned[I].data(),
                            Inputs[I].nbytes()),
                0);
    // TVM's compiled mode copies them at its entry (its kernels are called
    // from inside its code, not through the slots).
    if (std::string_view(C.Name).find("compiled") == std::string_view::npos) {
      EXPECT_GT(K->status().AlignedCopies, 0u);
    }
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no model.bc in " << kModels;
}

} // namespace
} // namespace vmjit::jittest
