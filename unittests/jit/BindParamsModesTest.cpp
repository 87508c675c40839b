//===- BindParamsModesTest.cpp - Bound functions in every mode --*- C++ -*-===//
//
// vm::bindParams's rewritten functions in every mode (the interpreter, tier
// 1, tier 2, tiered at threshold 1, deopt stress) give the unbound
// function's results and errors: small programs with C++ kernels and
// hand-made effects (unittests/vm/BindTestKernels.h), TVM's mlp with its
// weights bound, and the llm's generate loop with its weights bound
// (examples/generate/llm_generate.h; skipped without ../shared/tvm-models).
//
//===----------------------------------------------------------------------===//

#include "../vm/BindTestKernels.h"
#include "EveryMode.h"
#include "SameBits.h"
#include "llm_generate.h"

#include "vmjit/files/npy.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/bind_params.h"
#include "vmjit/vm/program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

using namespace vmjit;
using namespace vmjit::bindtest;
using jittest::TestMode;
using jittest::vmWith;

namespace {

const std::filesystem::path kModels = VMJIT_TVM_MODELS;


/// Three calls, so that tiered mode reaches tier 2: the last result, or
/// the error's message.
std::string callThrice(vm::VirtualMachine &VM, std::vector<AnyView> Args,
                       Any &Result) {
  try {
    for (int I = 0; I < 3; ++I) {
      Result.reset();
      Result = VM.invoke("main", Args);
    }
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "";
}

/// main(x, w) of `Text` bound at w gives in every mode what the unbound
/// main gives on the interpreter; `Folds` calls are folded.
void agreesInEveryMode(std::string_view Text, size_t Folds) {
  auto Exe = vm::assemble(Text, "bind.vmasm");
  auto Unbound = vmWith(Exe, {testKernels()}, {vm::ExecMode::Bytecode});
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  Any Expected;
  const std::string ExpectedError = callThrice(*Unbound, {X, W}, Expected);
  std::vector<vm::ParamBinding> P = {{"w", W}};
  vm::BindResult B =
      vm::bindParams(*Unbound, "main", P, lookupOf(kernelEffects()));
  EXPECT_EQ(B.Folded.size(), Folds);
  for (const TestMode &M : jittest::everyMode()) {
    auto VM = vmWith(B.Exe, {testKernels()}, M);
    Any Got;
    EXPECT_EQ(callThrice(*VM, {X}, Got), ExpectedError) << jittest::modeName(M);
    if (ExpectedError.empty()) {
      EXPECT_TRUE(jittest::sameBits(Got, Expected)) << jittest::modeName(M);
    }
  }
}

} // namespace

TEST(BindParamsModesTest, AFoldedTransposeAgreesInEveryMode) {
  agreesInEveryMode(kTransposeAdd, 1);
}

TEST(BindParamsModesTest, AKernelLeftForRunTimeFailsAlikeInEveryMode) {
  agreesInEveryMode(withConstants(R"(
.func main(x, w)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.fail(%w, %t)
  ret %t
.end
)"),
                    0);
}

TEST(BindParamsModesTest, MlpWithBoundWeightsGivesTheUnboundBits) {
  if (!std::filesystem::exists(kModels / "mlp/model.so") ||
      !std::filesystem::exists(kModels / "mlp/model.bc"))
    GTEST_SKIP() << "no TVM models (with model.bc) at " << kModels;
  vm::OpenedProgram P = vm::openProgram((kModels / "mlp/model.so").string());
  // The kernels' effects, from model.bc (its compile is not waited for:
  // the VMs run model.so's kernels).
  std::shared_ptr<jit::KernelTier> Tier = jit::KernelTier::start(
      (kModels / "mlp/model.bc").string(), P.Libraries.front(), {});
  std::vector<Tensor> In;
  for (int I = 0; I < 5; ++I)
    In.push_back(vm::readNpy(
        (kModels / ("mlp/in" + std::to_string(I) + ".npy")).string()));
  auto Unbound = vmWith(P.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  Any Expected;
  ASSERT_EQ(callThrice(*Unbound, {In[0], In[1], In[2], In[3], In[4]}, Expected),
            "");
  std::vector<vm::ParamBinding> Weights = {{"fc1.weight", In[1]},
                                           {"fc1.bias", In[2]},
                                           {"fc2.weight", In[3]},
                                           {"fc2.bias", In[4]}};
  // Without effects nothing is folded; with them, the two transposes of
  // the weights (instructions 4 and 19 of `vmjit dis`).
  EXPECT_TRUE(vm::bindParams(*Unbound, "main", Weights).Folded.empty());
  vm::BindResult B =
      vm::bindParams(*Unbound, "main", Weights, vm::effectsIn(Tier->effects()));
  std::vector<std::pair<std::string, int64_t>> Folded;
  for (const vm::FoldedCall &F : B.Folded)
    Folded.emplace_back(F.Callee, F.Instr);
  EXPECT_EQ(Folded, (std::vector<std::pair<std::string, int64_t>>{
                        {"transpose", 4}, {"transpose1", 19}}));
  // fc2.weight unbound: its transpose stays.
  std::vector<vm::ParamBinding> One = {{"fc1.weight", In[1]}};
  vm::BindResult B1 =
      vm::bindParams(*Unbound, "main", One, vm::effectsIn(Tier->effects()));
  ASSERT_EQ(B1.Folded.size(), 1u);
  EXPECT_EQ(B1.Folded[0].Callee, "transpose");
  auto VM1 = vmWith(B1.Exe, P.Libraries, {vm::ExecMode::Bytecode});
  Any Got1;
  EXPECT_EQ(callThrice(*VM1, {In[0], In[2], In[3], In[4]}, Got1), "");
  EXPECT_TRUE(jittest::sameBits(Got1, Expected));
  for (const TestMode &M : jittest::everyMode()) {
    auto VM = vmWith(B.Exe, P.Libraries, M);
    Any Got;
    EXPECT_EQ(callThrice(*VM, {In[0]}, Got), "") << jittest::modeName(M);
    EXPECT_TRUE(jittest::sameBits(Got, Expected)) << jittest::modeName(M);
  }
}

TEST(BindParamsModesTest, TheLlmWithBoundWeightsGeneratesTheUnboundBits) {
  // The weights (packed_params, a tuple) bound as MLC-LLM's engine loads
  // them once: the transposes of every weight run when binding, with
  // TVM's machine code (the effects from model.bc, nothing compiled).
  const std::filesystem::path Llm = kModels / "llm";
  if (!std::filesystem::exists(Llm / "model.so") ||
      !std::filesystem::exists(Llm / "model.bc"))
    GTEST_SKIP() << "no llm (with model.bc) at " << kModels;
  vm::OpenedProgram P = vm::openProgram((Llm / "model.so").string());
  const std::map<std::string, KernelEffects> Effects =
      jit::kernelEffects((Llm / "model.bc").string(), *P.Libraries.front());
  const vm::KernelEffectsLookup Lookup = vm::effectsIn(Effects);
  auto InMode = [](const TestMode &M) {
    return [M](vm::VirtualMachine &VM) {
      if (M.Mode == vm::ExecMode::Bytecode)
        return;
      jit::JITOptions O;
      O.Mode = M.Mode;
      O.Threshold = 1;
      O.Background = false;
      O.DeoptStress = M.DeoptStress;
      jit::enableJIT(VM, O);
    };
  };
  llm::Generator Unbound(Llm, InMode({vm::ExecMode::Bytecode}));
  const std::vector<int32_t> Prompt = Unbound.ints("prompt.npy");
  std::vector<std::vector<float>> Want;
  const std::vector<int32_t> Tokens =
      Unbound.generate(Unbound.newCache(), 0, Prompt, 8, &Want);
  for (const TestMode &M : jittest::everyMode()) {
    SCOPED_TRACE(jittest::modeName(M));
    llm::Generator Bound(Llm, InMode(M), {}, &Lookup);
    std::set<std::string> Folded;
    for (const vm::FoldedCall &F : Bound.Folded)
      Folded.insert(F.Callee);
    for (const char *T :
         {"transpose", "transpose1", "transpose2", "transpose3", "transpose4"})
      EXPECT_TRUE(Folded.count(T)) << T << " was not folded";
    std::vector<std::vector<float>> Got;
    EXPECT_EQ(Bound.generate(Bound.newCache(), 0, Prompt, 8, &Got), Tokens);
    EXPECT_TRUE(Got == Want) << "the logits differ";
  }
}
