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

#include "TvmModelCalls.h"
#include "EveryMode.h"

#include "vmjit/files/npy.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/runtime/array.h"
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

using ModelCall = jittest::TvmModelCall;

const std::vector<ModelCall> &modelCalls() { return jittest::tvmModelCalls(); }

/// The tensors of a result (a tensor or a tuple of them, nested), in order.
void flatten(const Any &V, std::vector<Tensor> &Out) {
  if (auto T = V.as<Tensor>()) {
    Out.push_back(*T);
    return;
  }
  if (auto A = V.as<Array>())
    for (size_t I = 0; I < A->size(); ++I)
      flatten((*A)[I], Out);
}

/// Whether `A` and `B` hold the same tensors, bit for bit.
::testing::AssertionResult sameBits(const Any &A, const Any &B) {
  std::vector<Tensor> TA, TB;
  flatten(A, TA);
  flatten(B, TB);
  if (TA.empty() || TA.size() != TB.size())
    return ::testing::AssertionFailure()
           << TA.size() << " against " << TB.size() << " tensors";
  for (size_t I = 0; I < TA.size(); ++I) {
    const Tensor &X = TA[I], &Y = TB[I];
    if (!std::equal(X.shape().begin(), X.shape().end(), Y.shape().begin(),
                    Y.shape().end()) ||
        X.nbytes() != Y.nbytes())
      return ::testing::AssertionFailure() << "tensor " << I << ": shapes";
    if (std::memcmp(X.data(), Y.data(), X.nbytes()) != 0)
      return ::testing::AssertionFailure()
             << "tensor " << I << ": the bits differ";
  }
  return ::testing::AssertionSuccess();
}

/// A VM of `Exe` with `Libs` in mode `M` (as vmInMode).
std::unique_ptr<vm::VirtualMachine>
vmWith(std::shared_ptr<vm::Executable> Exe,
       std::vector<std::shared_ptr<KernelLibrary>> Libs, const TestMode &M) {
  vm::VMOptions Opts;
  Opts.Libraries = std::move(Libs);
  auto VM = vm::VirtualMachine::create(std::move(Exe), std::move(Opts));
  if (M.Mode != vm::ExecMode::Bytecode) {
    jit::JITOptions O;
    O.Mode = M.Mode;
    O.Threshold = 1;
    O.Background = false;
    O.DeoptStress = M.DeoptStress;
    jit::enableJIT(*VM, O);
  }
  return VM;
}

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
    jit::KernelTierResult K = jit::loadKernelTier(
        bitcodeOf(C), *P.Libraries.front(), cachedOptions());
    ASSERT_TRUE(K.Library) << K.Warning;
    EXPECT_EQ(K.Kernels, P.Libraries.front()->functionNames());
    std::vector<Tensor> Inputs;
    for (const char *In : C.Inputs)
      Inputs.push_back(readNpy((kModels / In).string()));
    std::vector<AnyView> Args(Inputs.begin(), Inputs.end());
    auto Tvm = vmWith(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
    const Any Expected = callThrice(*Tvm, C, Args);
    for (const TestMode &M : everyMode()) {
      SCOPED_TRACE(modeName(M));
      std::vector<std::shared_ptr<KernelLibrary>> Libs = {K.Library};
      Libs.insert(Libs.end(), P.Libraries.begin(), P.Libraries.end());
      auto VM = vmWith(P.Exe, std::move(Libs), M);
      EXPECT_TRUE(sameBits(callThrice(*VM, C, Args), Expected));
    }
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
  jit::KernelTierResult K =
      jit::loadKernelTier(Bc.string(), *P.Libraries.front(), cachedOptions());
  ASSERT_TRUE(K.Library) << K.Warning;
  const std::vector<Any> Expected =
      llmDecodeSteps(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  for (vm::ExecMode Mode : {vm::ExecMode::Bytecode, vm::ExecMode::Compiled}) {
    SCOPED_TRACE(vm::execModeName(Mode));
    std::vector<std::shared_ptr<KernelLibrary>> Libs = {K.Library};
    Libs.insert(Libs.end(), P.Libraries.begin(), P.Libraries.end());
    const std::vector<Any> Got = llmDecodeSteps(P.Exe, Libs, {Mode});
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
  jit::KernelTierResult K =
      jit::loadKernelTier(Bc.string(), *P.Libraries.front(), O);
  ASSERT_TRUE(K.Library) << K.Warning;
  std::vector<Tensor> Inputs;
  for (const char *In : C.Inputs)
    Inputs.push_back(readNpy((kModels / In).string()));
  std::vector<AnyView> Args(Inputs.begin(), Inputs.end());
  auto Tvm = vmWith(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  const Any Expected = callThrice(*Tvm, C, Args);
  std::vector<std::shared_ptr<KernelLibrary>> Libs = {K.Library};
  Libs.insert(Libs.end(), P.Libraries.begin(), P.Libraries.end());
  auto VM = vmWith(P.Exe, std::move(Libs), {vm::ExecMode::Bytecode});
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
  jit::KernelTierResult First =
      jit::loadKernelTier(Bc.string(), *P.Libraries.front(), O);
  jit::KernelTierResult Second =
      jit::loadKernelTier(Bc.string(), *P.Libraries.front(), O);
  std::filesystem::remove_all(Cache);
  ASSERT_TRUE(First.Library) << First.Warning;
  ASSERT_TRUE(Second.Library) << Second.Warning;
  EXPECT_FALSE(First.CacheHit);
  EXPECT_TRUE(Second.CacheHit);
  EXPECT_NE(Second.note().find("from the object cache"), std::string::npos);
}

TEST(KernelTierTest, AnotherModelsBitcodeIsAWarningAndTvmsKernelsRun) {
  const std::filesystem::path Bc = kModels / "mlp" / "model.bc";
  if (!std::filesystem::exists(Bc) ||
      !std::filesystem::exists(kModels / "decoder" / "model.so"))
    GTEST_SKIP() << "no mlp/model.bc or decoder/model.so in " << kModels;
  vm::OpenedProgram P =
      vm::openProgram((kModels / "decoder/model.so").string());
  jit::KernelTierResult K =
      jit::loadKernelTier(Bc.string(), *P.Libraries.front());
  EXPECT_FALSE(K.Library);
  EXPECT_NE(K.Warning.find("does not match the kernel library"),
            std::string::npos)
      << K.Warning;
  EXPECT_NE(K.Warning.find("mlp/model.bc"), std::string::npos) << K.Warning;
  // The model runs as before, on model.so's kernels.
  Tensor X = readNpy((kModels / "decoder/in0.npy").string());
  auto VM = vmWith(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  std::vector<AnyView> Args{AnyView(X)};
  Any R = VM->invoke("main", Args);
  EXPECT_TRUE(sameBits(R, Any(readNpy((kModels / "decoder/out.npy").string())))
              << "(TVM's own output; the same kernels)");
}

TEST(KernelTierTest, TheContextSlotsAreFilled) {
  // decoder's kernels allocate workspace through __TVMBackendAllocWorkspace.
  const std::filesystem::path Bc = kModels / "decoder" / "model.bc";
  if (!std::filesystem::exists(Bc))
    GTEST_SKIP() << "no " << Bc;
  vm::OpenedProgram P =
      vm::openProgram((kModels / "decoder/model.so").string());
  jit::KernelTierResult K =
      jit::loadKernelTier(Bc.string(), *P.Libraries.front(), cachedOptions());
  ASSERT_TRUE(K.Library) << K.Warning;
  for (const char *Slot :
       {"__TVMBackendAllocWorkspace", "__TVMBackendFreeWorkspace"}) {
    SCOPED_TRACE(Slot);
    auto *Cell = static_cast<void *const *>(K.Library->symbol(Slot));
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
    jit::loadKernelTier((kModels / "mlp" / "no-such.bc").string(),
                        *P.Libraries.front());
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

} // namespace
} // namespace vmjit::jittest
