//===- KernelAotTest.cpp - vmjit compile --kernels ------------------------===//
//
// TVM's kernels compiled ahead of time into a `vmjit compile` library
// (jit/aot.h, AotOptions::KernelBitcode): for every model of
// ../shared/tvm-models with a model.bc, the library's kernels go ahead of
// model.so and give TVM's bits; another model's bitcode is a warning and a
// library without kernels. The CPU check without LLVM (vm/cpu_features.h):
// every feature LLVM finds on this host is found by it too, and a library
// whose manifest records a feature this CPU lacks is refused. The model
// tests skip without ../shared/tvm-models or a model.bc.
//
//===----------------------------------------------------------------------===//

#include "SameBits.h"
#include "TvmModelCalls.h"

#include "vmjit/files/npy.h"
#include "vmjit/jit/aot.h"
#include "vmjit/jit/host_info.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/aot_library.h"
#include "vmjit/vm/cpu_features.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace vmjit::jittest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::filesystem::path kModels = VMJIT_TVM_MODELS;

/// This process's output directory, removed when the tests end.
const std::filesystem::path &outDir() {
  static const std::filesystem::path Dir = [] {
    auto D = std::filesystem::temp_directory_path() /
             ("vmjit-kernel-aot-" + std::to_string(::getpid()));
    std::filesystem::create_directories(D);
    return D;
  }();
  return Dir;
}

class RemoveOutDir : public ::testing::Environment {
public:
  void TearDown() override { std::filesystem::remove_all(outDir()); }
};
[[maybe_unused]] ::testing::Environment *const RemoveOutDirEnv =
    ::testing::AddGlobalTestEnvironment(new RemoveOutDir);

/// The library `vmjit compile --kernels BITCODE` writes of model library
/// `Library`, named `Name`.so in outDir().
jit::AotResult compileWithKernels(const std::string &Library,
                                  const std::string &Bitcode,
                                  const std::string &Name) {
  vm::OpenedProgram P = vm::openProgram(Library);
  jit::AotOptions AO;
  AO.KernelLibraries = {Library};
  AO.KernelBitcode = Bitcode;
  AO.KernelFunctions = P.Libraries.front()->functionNames();
  return jit::compileAheadOfTime(*P.Exe, (outDir() / (Name + ".so")).string(),
                                 AO);
}

TEST(KernelAotTest, KernelsInTheLibraryGiveTvmsBits) {
  if (!std::filesystem::exists(kModels / "README.md"))
    GTEST_SKIP() << "no TVM models at " << kModels;
  int Ran = 0;
  for (const TvmModelCall &C : tvmModelCalls()) {
    const std::string Library = (kModels / C.Library).string();
    const std::string Bitcode = jit::kernelBitcodeBeside(Library);
    if (Bitcode.empty())
      continue;
    SCOPED_TRACE(C.Name);
    vm::OpenedProgram Tvm = vm::openProgram(Library);
    jit::AotResult R = compileWithKernels(Library, Bitcode, C.Name);
    ASSERT_EQ(R.KernelWarning, "");
    EXPECT_EQ(R.Kernels, Tvm.Libraries.front()->functionNames());
    EXPECT_EQ(R.KernelCPU, jit::hostInfo().CPU);

    const std::string Out = (outDir() / (std::string(C.Name) + ".so")).string();
    vm::OpenedProgram P = vm::openProgram(Out);
    ASSERT_TRUE(P.Aot && P.Aot->hasKernels());
    // It records what the kernel tier proves of its kernels, for binding.
    EXPECT_EQ(P.Aot->kernelEffects(),
              jit::kernelEffects(Bitcode, *Tvm.Libraries.front()));
    EXPECT_FALSE(P.Aot->kernelEffects().empty());
    ASSERT_GE(P.Libraries.size(), 3u);
    // Its kernels first, each through a kernel slot holding its entry.
    EXPECT_EQ(P.Libraries[1], P.Aot->library());
    const std::string First = R.Kernels.front();
    std::optional<Function> Slot = P.Libraries.front()->find(First);
    ASSERT_TRUE(Slot);
    auto *S = static_cast<KernelSlotObj *>(Slot->get());
    EXPECT_EQ(S->compiled(), P.Aot->library()->findEntry(First));
    EXPECT_NE(S->compiled(), Tvm.Libraries.front()->findEntry(First));
    // Without them (--no-kernels, kernels=False), the recorded model
    // library's machine code serves the kernels.
    vm::OpenedProgram NoKernels = P;
    vm::dropCompiledKernels(NoKernels);
    ASSERT_FALSE(NoKernels.Libraries.empty());
    EXPECT_EQ(NoKernels.Libraries.front()->findEntry(First),
              Tvm.Libraries.front()->findEntry(First));
    EXPECT_EQ(NoKernels.KernelNotes.size() + 1, P.KernelNotes.size());

    std::vector<Tensor> Inputs;
    for (const char *In : C.Inputs)
      Inputs.push_back(vm::readNpy((kModels / In).string()));
    std::vector<AnyView> Args(Inputs.begin(), Inputs.end());
    vm::VMOptions TvmOpts;
    TvmOpts.Libraries = Tvm.Libraries;
    auto TvmVM = vm::VirtualMachine::create(Tvm.Exe, std::move(TvmOpts));
    const Any Expected = TvmVM->invoke(C.Func, Args);
    // Inputs at odd addresses are copied for the kernels, which assume
    // 64-byte alignment.
    std::vector<Tensor> Unaligned;
    for (const Tensor &T : Inputs)
      Unaligned.push_back(unalignedCopy(T));
    std::vector<AnyView> UArgs(Unaligned.begin(), Unaligned.end());
    // The interpreter, and the library's own code (what compiled and
    // tiered mode run; a library has no baseline code).
    for (bool AotCode : {false, true}) {
      SCOPED_TRACE(AotCode ? "the library's code" : "interpreter");
      vm::VMOptions Opts;
      Opts.Libraries = P.Libraries;
      auto VM = vm::VirtualMachine::create(P.Exe, std::move(Opts));
      if (AotCode) {
        ASSERT_EQ(P.Aot->attach(*VM), "");
      }
      EXPECT_TRUE(sameBits(VM->invoke(C.Func, Args), Expected));
      EXPECT_TRUE(sameBits(VM->invoke(C.Func, UArgs), Expected));
    }
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no model.bc in " << kModels;
}

TEST(KernelAotTest, AnotherModelsBitcodeIsAWarningAndNoKernels) {
  const std::filesystem::path Decoder = kModels / "decoder" / "model.so";
  const std::filesystem::path MlpBc = kModels / "mlp" / "model.bc";
  if (!std::filesystem::exists(Decoder) || !std::filesystem::exists(MlpBc))
    GTEST_SKIP() << "no decoder or mlp bitcode at " << kModels;
  jit::AotResult R =
      compileWithKernels(Decoder.string(), MlpBc.string(), "mismatch");
  EXPECT_THAT(R.KernelWarning,
              HasSubstr("does not match the kernel library (7 entries "
                        "against 12)"));
  EXPECT_TRUE(R.Kernels.empty());
  vm::OpenedProgram P = vm::openProgram((outDir() / "mismatch.so").string());
  ASSERT_TRUE(P.Aot);
  EXPECT_FALSE(P.Aot->hasKernels());
  EXPECT_TRUE(P.Aot->kernelEffects().empty());
  ASSERT_EQ(P.Libraries.size(), 1u);
  EXPECT_TRUE(std::filesystem::equivalent(P.Libraries.front()->path(), Decoder))
      << P.Libraries.front()->path();
}

TEST(KernelAotTest, EveryFeatureLlvmFindsHereIsFound) {
  EXPECT_THAT(vm::missingCpuFeatures(jit::hostInfo().Features), ElementsAre());
#if defined(__x86_64__)
  const std::vector<std::string> Checked = vm::checkedCpuFeatures();
  for (const char *F : {"sse2", "avx", "avx2", "fma", "avx512f", "avx512bw"})
    EXPECT_NE(std::find(Checked.begin(), Checked.end(), F), Checked.end()) << F;
#endif
}

#if defined(__x86_64__)
TEST(KernelAotTest, MissingFeaturesAreNamed) {
  // TBM: only AMD's Bulldozer family had it. Disabled (-) and unknown
  // features are not asked for.
  EXPECT_THAT(vm::missingCpuFeatures("+sse2,+tbm,-avx2,+no-such-feature"),
              ElementsAre("tbm"));
}

TEST(KernelAotTest, ALibraryForAnotherCpuIsRefused) {
  // A manifest whose kernels need TBM, served as the library's symbol:
  // refused before anything else of it is read.
  static const char Program[1] = {};
  static const vm::NativeFn Functions[1] = {};
  vm::AotManifest M{};
  M.Magic = vm::kAotMagic;
  M.Version = vm::kAotVersion;
  M.Program = Program;
  M.Functions = Functions;
  M.KernelBitcode = "model.bc";
  M.KernelCPU = "bdver4";
  M.KernelFeatures = "+sse2,+avx,+tbm";
  auto Lib = KernelLibrary::fromFunctions(
      "foreign.so", {}, {{vm::kAotManifestSymbol, &M}}, nullptr);
  try {
    vm::AotCode::open(Lib, "foreign.so");
    ADD_FAILURE() << "not refused";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "LibraryError");
    EXPECT_THAT(E.message(),
                HasSubstr("foreign.so: its kernels were compiled by vmjit "
                          "compile --kernels for a CPU (bdver4) with tbm, "
                          "which this CPU lacks"));
  }
}
#endif

} // namespace
} // namespace vmjit::jittest
