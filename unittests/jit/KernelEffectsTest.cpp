//===- KernelEffectsTest.cpp - What TVM's kernels read and write ----------===//
//
// The kernel effects analysis (jit/kernel_effects.h, KernelTier::effects):
// on the models of ../shared/tvm-models (skipped where absent) the mlp's
// and the llm's kernels are proven, every kernel gets an answer, and what
// a kernel is said to leave alone stays unchanged when TVM's code runs
// it; on small hand-written modules shaped like TVM's, what is not
// understood gives the conservative answer.
//
//===----------------------------------------------------------------------===//

#include "kernel_compiler.h"
#include "TvmModelCalls.h"
#include "kernel_effects.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <random>
#include <span>
#include <thread>

namespace vmjit::jittest {
namespace {

const std::filesystem::path kModels = VMJIT_TVM_MODELS;
constexpr ArgAccess R = ArgAccess::Read, W = ArgAccess::Write,
                    RW = ArgAccess::ReadWrite;

/// The kernels of a model library, as the kernel tier takes them.
std::vector<std::string> kernelNames(KernelLibrary &Lib) {
  std::vector<std::string> Names;
  for (const std::string &Name : Lib.functionNames())
    if (std::optional<Function> F = Lib.find(Name);
        F && F->get()->isFreeEntry())
      Names.push_back(Name);
  return Names;
}

struct ModelEffects {
  std::map<std::string, KernelEffects> Effects;
  std::map<std::string, std::string> Reasons;
  std::shared_ptr<KernelLibrary> Library;
  double Ms = 0;
};

/// The effects of `Lib`'s kernels from the bitcode `Bc` beside it.
ModelEffects effectsOf(const std::filesystem::path &Lib,
                       const std::filesystem::path &Bc) {
  ModelEffects M;
  M.Library = vm::openProgram(Lib.string()).Libraries.front();
  auto Start = std::chrono::steady_clock::now();
  llvm::Expected<std::map<std::string, KernelEffects>> E =
      jit::kernelEffectsOfFile(Bc.string(), kernelNames(*M.Library),
                               &M.Reasons);
  M.Ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - Start)
             .count();
  if (!E)
    ADD_FAILURE() << llvm::toString(E.takeError());
  else
    M.Effects = std::move(*E);
  return M;
}

KernelEffects pure(std::vector<ArgAccess> Args) {
  return KernelEffects{true, std::move(Args)};
}

TEST(KernelEffectsTest, TheMlpsTransposeAndMatmulAreProven) {
  if (!std::filesystem::exists(kModels / "mlp/model.bc"))
    GTEST_SKIP() << "no mlp/model.bc in " << kModels;
  ModelEffects M =
      effectsOf(kModels / "mlp/model.so", kModels / "mlp/model.bc");
  EXPECT_EQ(M.Effects["transpose"], pure({R, W})) << M.Reasons["transpose"];
  EXPECT_EQ(M.Effects["transpose1"], pure({R, W}));
  EXPECT_EQ(M.Effects["matmul"], pure({R, R, W})) << M.Reasons["matmul"];
  EXPECT_EQ(M.Effects["add"], pure({R, R, W}));
  EXPECT_EQ(M.Effects["relu"], pure({R, W}));
}

/// A float32 tensor of `Shape` filled with random values.
Tensor randomTensor(std::span<const int64_t> Shape, std::mt19937 &Gen) {
  Tensor T = Tensor::empty(Shape, DLDataType{kDLFloat, 32, 1});
  std::uniform_real_distribution<float> D(-1, 1);
  for (size_t I = 0; I < T.nbytes() / 4; ++I)
    T.data<float>()[I] = D(Gen);
  return T;
}

TEST(KernelEffectsTest, WhatTheMlpsKernelsOnlyReadStaysUnchanged) {
  // TVM's own code run on random tensors: an argument said not to be
  // written keeps its bytes; one said to be written changes.
  if (!std::filesystem::exists(kModels / "mlp/model.bc"))
    GTEST_SKIP() << "no mlp/model.bc in " << kModels;
  ModelEffects M =
      effectsOf(kModels / "mlp/model.so", kModels / "mlp/model.bc");
  // (Vectors: an initializer_list's elements die with the full-expression.)
  const std::map<std::string, std::vector<std::vector<int64_t>>> Shapes = {
      {"transpose", {{256, 64}, {64, 256}}},
      {"matmul", {{1, 64}, {64, 256}, {1, 256}}},
      {"add", {{1, 256}, {256}, {1, 256}}},
      {"relu", {{1, 256}, {1, 256}}},
      {"matmul1", {{1, 256}, {256, 64}, {1, 64}}},
      {"add1", {{1, 64}, {64}, {1, 64}}},
      {"transpose1", {{64, 256}, {256, 64}}}};
  std::mt19937 Gen(42);
  for (const auto &[Name, ArgShapes] : Shapes) {
    SCOPED_TRACE(Name);
    const KernelEffects &E = M.Effects[Name];
    ASSERT_EQ(E.Args.size(), ArgShapes.size());
    std::vector<Tensor> Args, Before;
    for (const std::vector<int64_t> &Shape : ArgShapes) {
      Args.push_back(randomTensor(Shape, Gen));
      Before.push_back(Tensor::empty(Shape, DLDataType{kDLFloat, 32, 1}));
      std::memcpy(Before.back().data(), Args.back().data(),
                  Args.back().nbytes());
    }
    std::optional<Function> F = M.Library->find(Name);
    ASSERT_TRUE(F);
    std::vector<AnyView> Views(Args.begin(), Args.end());
    F->callPacked(Views.data(), static_cast<int32_t>(Views.size()));
    for (size_t I = 0; I < Args.size(); ++I) {
      const bool Same =
          std::memcmp(Args[I].data(), Before[I].data(), Args[I].nbytes()) == 0;
      EXPECT_EQ(Same, !writes(E.Args[I])) << "argument " << I;
    }
  }
}

/// A library whose kernels call `Lib`'s and check, call by call, that a
/// tensor argument `Effects` says is not written keeps its bytes; counts
/// the calls and the arguments changed against the claim.
struct CheckingLibrary {
  std::shared_ptr<KernelLibrary> Library;
  std::shared_ptr<int> Calls = std::make_shared<int>(0);
  std::shared_ptr<std::vector<std::string>> Broken =
      std::make_shared<std::vector<std::string>>();
};

CheckingLibrary checking(const std::shared_ptr<KernelLibrary> &Lib,
                         const std::map<std::string, KernelEffects> &Effects) {
  CheckingLibrary C;
  std::map<std::string, Function, std::less<>> Functions;
  for (const auto &[Name, E] : Effects) {
    std::optional<Function> Orig = Lib->find(Name);
    if (!Orig)
      continue;
    auto Check = [Orig = *Orig, E, Name, Calls = C.Calls,
                  Broken = C.Broken](PackedArgs Args, Any *Result) {
      std::vector<std::pair<int32_t, std::vector<char>>> Kept;
      for (int32_t I = 0; I < Args.size(); ++I) {
        std::optional<Tensor> T = Args[I].as<Tensor>();
        if (T && static_cast<size_t>(I) < E.Args.size() &&
            !writes(E.Args[I])) {
          const char *D = static_cast<const char *>(T->data());
          Kept.emplace_back(I, std::vector<char>(D, D + T->nbytes()));
        }
      }
      *Result = Orig.callPacked(Args.data(), Args.size());
      ++*Calls;
      for (const auto &[I, Bytes] : Kept)
        if (std::memcmp(Args[I].as<Tensor>()->data(), Bytes.data(),
                        Bytes.size()) != 0)
          Broken->push_back(Name + " argument " + std::to_string(I));
    };
    Functions.emplace(Name, Function::fromPacked(Name, std::move(Check)));
  }
  C.Library =
      KernelLibrary::fromFunctions("checking", std::move(Functions), {}, {});
  return C;
}

TEST(KernelEffectsTest, WhatEveryModelsKernelsAreSaidNotToWriteStaysUnchanged) {
  // Each model's call with TVM's kernels behind a check of every call.
  bool Ran = false;
  for (const TvmModelCall &Call : tvmModelCalls()) {
    const std::filesystem::path Lib = kModels / Call.Library;
    const std::string Bc = jit::kernelBitcodeBeside(Lib.string());
    if (Bc.empty() || Call.Inputs.empty())
      continue;
    SCOPED_TRACE(Call.Name);
    vm::OpenedProgram P = vm::openProgram(Lib.string());
    llvm::Expected<std::map<std::string, KernelEffects>> E =
        jit::kernelEffectsOfFile(Bc, kernelNames(*P.Libraries.front()));
    ASSERT_TRUE(static_cast<bool>(E)) << llvm::toString(E.takeError());
    CheckingLibrary C = checking(P.Libraries.front(), *E);
    vm::VMOptions Opts;
    Opts.Libraries = {C.Library};
    Opts.Libraries.insert(Opts.Libraries.end(), P.Libraries.begin(),
                          P.Libraries.end());
    auto VM = vm::VirtualMachine::create(P.Exe, std::move(Opts));
    std::vector<Tensor> Inputs;
    for (const char *In : Call.Inputs)
      Inputs.push_back(vm::readNpy((kModels / In).string()));
    std::vector<AnyView> Args(Inputs.begin(), Inputs.end());
    VM->invoke(Call.Func, Args);
    EXPECT_EQ(*C.Broken, std::vector<std::string>{});
    EXPECT_GT(*C.Calls, 0);
    Ran = true;
  }
  if (!Ran)
    GTEST_SKIP() << "no model with model.bc in " << kModels;
}

TEST(KernelEffectsTest, WhatTheLlmsKernelsAreSaidNotToWriteStaysUnchanged) {
  // Two decode steps on TVM's paged KV cache: attention, cache appends,
  // rotary embedding, matmuls, the weight transposes.
  const std::filesystem::path Dir = kModels / "llm";
  if (!std::filesystem::exists(Dir / "model.bc"))
    GTEST_SKIP() << "no " << Dir / "model.bc";
  vm::OpenedProgram P = vm::openProgram((Dir / "model.so").string());
  llvm::Expected<std::map<std::string, KernelEffects>> E =
      jit::kernelEffectsOfFile((Dir / "model.bc").string(),
                               kernelNames(*P.Libraries.front()));
  ASSERT_TRUE(static_cast<bool>(E)) << llvm::toString(E.takeError());
  CheckingLibrary C = checking(P.Libraries.front(), *E);
  vm::VMOptions Opts;
  Opts.Libraries = {C.Library, P.Libraries.front()};
  auto VM = vm::VirtualMachine::create(P.Exe, std::move(Opts));
  std::vector<Any> Params;
  for (int I = 0; I < 15; ++I)
    Params.emplace_back(
        vm::readNpy((Dir / ("param_" + std::to_string(I) + ".npy")).string()));
  Array Weights(std::move(Params));
  Any Cache = VM->call("create_tir_paged_kv_cache", Shape{1}, Shape{256},
                       Shape{64}, Shape{16});
  auto Fn = [](const char *Name) { return *Registry::global().find(Name); };
  Fn("vm.builtin.kv_state_add_sequence")(Cache, 0);
  for (int I = 0; I < 2; ++I) {
    Tensor H = Tensor::empty({1, 1, 64}, DLDataType{kDLFloat, 32, 1});
    std::fill_n(H.data<float>(), 64, 0.25f * float(I + 1));
    Fn("vm.builtin.kv_state_begin_forward")(Cache, Shape{0}, Shape{1});
    std::vector<AnyView> Args{H, Cache, Weights};
    VM->invoke("decode", Args);
    Fn("vm.builtin.kv_state_end_forward")(Cache);
  }
  EXPECT_EQ(*C.Broken, std::vector<std::string>{});
  EXPECT_GT(*C.Calls, 20);
}

/// The bitcode files of ../shared/tvm-models and their libraries.
std::vector<std::pair<std::filesystem::path, std::filesystem::path>>
everyBitcode() {
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> Out;
  std::error_code EC;
  for (const auto &Dir : std::filesystem::directory_iterator(kModels, EC))
    for (const auto &File : std::filesystem::directory_iterator(Dir, EC)) {
      std::filesystem::path Lib = File.path();
      if (Lib.extension() != ".so" ||
          jit::kernelBitcodeBeside(Lib.string()).empty())
        continue;
      Out.emplace_back(Lib, jit::kernelBitcodeBeside(Lib.string()));
    }
  std::sort(Out.begin(), Out.end());
  return Out;
}

TEST(KernelEffectsTest, EveryKernelOfEveryModelGetsAnAnswer) {
  auto Files = everyBitcode();
  if (Files.empty())
    GTEST_SKIP() << "no model.bc in " << kModels;
  for (const auto &[Lib, Bc] : Files) {
    SCOPED_TRACE(Bc.string());
    ModelEffects M = effectsOf(Lib, Bc);
    const std::vector<std::string> Names = kernelNames(*M.Library);
    EXPECT_EQ(M.Effects.size(), Names.size());
    size_t Proven = 0;
    for (const std::string &Name : Names) {
      SCOPED_TRACE(Name);
      ASSERT_EQ(M.Effects.count(Name), 1u);
      const KernelEffects &E = M.Effects[Name];
      // The conservative answer comes with a reason.
      EXPECT_EQ(E.OnlyArgumentMemory, M.Reasons.count(Name) == 0)
          << M.Reasons[Name];
      if (!E.OnlyArgumentMemory)
        continue;
      ++Proven;
      // A kernel touching only its arguments has an output: it writes one
      // of them.
      EXPECT_TRUE(std::any_of(E.Args.begin(), E.Args.end(), writes));
    }
    std::printf("[ effects  ] %s: %zu of %zu kernels proven in %.1f ms\n",
                Bc.parent_path().filename().c_str(), Proven, Names.size(),
                M.Ms);
    for (const auto &[Name, Why] : M.Reasons)
      std::printf("[ effects  ]   %s: %s\n", Name.c_str(), Why.c_str());
  }
}

TEST(KernelEffectsTest, TheLlmsWeightTransposesAreFoldable) {
  // The decode step transposes the weights each call (transpose..4): with
  // constant weights those calls run once.
  if (!std::filesystem::exists(kModels / "llm/model.bc"))
    GTEST_SKIP() << "no llm/model.bc in " << kModels;
  ModelEffects M =
      effectsOf(kModels / "llm/model.so", kModels / "llm/model.bc");
  for (const char *Name :
       {"transpose", "transpose1", "transpose2", "transpose3", "transpose4"})
    EXPECT_EQ(M.Effects[Name], pure({R, W})) << Name << ": " << M.Reasons[Name];
}

TEST(KernelEffectsTest, TheTierGivesTheEffectsWithoutWaitingForTheCompile) {
  if (!std::filesystem::exists(kModels / "mlp/model.bc"))
    GTEST_SKIP() << "no mlp/model.bc in " << kModels;
  vm::OpenedProgram P = vm::openProgram((kModels / "mlp/model.so").string());
  jit::KernelTierOptions O; // a cheap compile, running meanwhile
  O.OptLevel = 1;
  O.Polly = false;
  auto K = jit::KernelTier::start((kModels / "mlp/model.bc").string(),
                                  P.Libraries.front(), O);
  // Two threads asking at once get the one map.
  const std::map<std::string, KernelEffects> *Other = nullptr;
  std::thread T([&] { Other = &K->effects(); });
  const auto &Effects = K->effects();
  T.join();
  EXPECT_EQ(Other, &Effects);
  EXPECT_EQ(Effects.size(), kernelNames(*P.Libraries.front()).size());
  ASSERT_EQ(Effects.count("transpose"), 1u);
  EXPECT_EQ(Effects.at("transpose"), pure({R, W}));
  EXPECT_EQ(&K->effects(), &Effects) << "computed once and kept";
  EXPECT_EQ(K->wait().State, jit::KernelTierState::Ready);
}

TEST(KernelEffectsTest, AnotherModelsBitcodeHasNoEffects) {
  if (!std::filesystem::exists(kModels / "mlp/model.bc") ||
      !std::filesystem::exists(kModels / "decoder/model.so"))
    GTEST_SKIP() << "no mlp/model.bc or decoder/model.so in " << kModels;
  vm::OpenedProgram P =
      vm::openProgram((kModels / "decoder/model.so").string());
  auto K = jit::KernelTier::start((kModels / "mlp/model.bc").string(),
                                  P.Libraries.front());
  EXPECT_TRUE(K->effects().empty());
  K->wait();
}

/// A module shaped like TVM's: the entry `__tvm_ffi_k` takes two tensors
/// (DLTensor pointers in the argument array) and calls `k_compute_(in,
/// out)`, whose body is `Body` (after loading `%x` from `%in` and storing
/// it to `%out`); `Globals` are more top-level lines.
std::string tvmShaped(const std::string &Body, const std::string &Globals = "",
                      const std::string &ArgOffset = "i64 24") {
  return Globals + R"(
define i32 @__tvm_ffi_k(ptr %self, ptr %args, i32 %num, ptr %result) {
entry:
  %ok = icmp eq i32 %num, 2
  br i1 %ok, label %body, label %fail
fail:
  ret i32 -1
body:
  %p0 = getelementptr inbounds i8, ptr %args, i64 8
  %t0 = load ptr, ptr %p0
  %d0 = load ptr, ptr %t0
  %p1 = getelementptr inbounds i8, ptr %args, )" +
         ArgOffset + R"(
  %t1 = load ptr, ptr %p1
  %d1 = load ptr, ptr %t1
  call fastcc void @k_compute_(ptr %d0, ptr %d1)
  ret i32 0
}
define internal fastcc void @k_compute_(ptr noalias %in, ptr noalias %out) {
  %x = load float, ptr %in
  store float %x, ptr %out
)" + Body +
         R"(
  ret void
}
)";
}

/// The effects of kernel `k` of the module `IR`.
KernelEffects effectsOfIR(const std::string &IR, std::string *Why = nullptr) {
  llvm::LLVMContext Ctx;
  llvm::SMDiagnostic Diag;
  std::unique_ptr<llvm::Module> M = llvm::parseAssemblyString(IR, Diag, Ctx);
  if (!M) {
    ADD_FAILURE() << Diag.getMessage().str() << " at line " << Diag.getLineNo();
    return {};
  }
  std::map<std::string, std::string> Reasons;
  KernelEffects E = jit::analyzeKernelEffects(*M, {"k"}, &Reasons)["k"];
  if (Why)
    *Why = Reasons["k"];
  return E;
}

TEST(KernelEffectsTest, ACopyReadsItsInputAndWritesItsOutput) {
  EXPECT_EQ(effectsOfIR(tvmShaped("")), pure({R, W}));
}

TEST(KernelEffectsTest, WorkspacesAndErrorsAreAllowed) {
  const std::string Globals = R"(
@__TVMBackendAllocWorkspace = linkonce global ptr null
@__TVMBackendFreeWorkspace = linkonce global ptr null
@.msg = private constant [4 x i8] c"bad\00"
declare void @TVMFFIErrorSetRaisedFromCStr(ptr, ptr)
)";
  const std::string Body = R"(
  %alloc = load ptr, ptr @__TVMBackendAllocWorkspace
  %ws = call ptr %alloc(i32 1, i32 0, i64 64, i32 2, i32 32)
  store float %x, ptr %ws
  %free = load ptr, ptr @__TVMBackendFreeWorkspace
  %rc = call i32 %free(i32 1, i32 0, ptr %ws)
  call void @TVMFFIErrorSetRaisedFromCStr(ptr @.msg, ptr @.msg)
)";
  EXPECT_EQ(effectsOfIR(tvmShaped(Body, Globals)), pure({R, W}));
}

TEST(KernelEffectsTest, AKernelStoringIntoItsInputWritesIt) {
  EXPECT_EQ(effectsOfIR(tvmShaped("  store float 0.0, ptr %in")),
            pure({RW, W}));
  EXPECT_EQ(effectsOfIR(tvmShaped(R"(
  %q = getelementptr inbounds float, ptr %in, i64 7
  call void @llvm.memset.p0.i64(ptr %q, i8 0, i64 4, i1 false))",
                                  "declare void @llvm.memset.p0.i64(ptr "
                                  "nocapture writeonly, i8, i64, i1)")),
            pure({RW, W}));
}

TEST(KernelEffectsTest, AKernelWritingAGlobalIsNotOnlyArgumentMemory) {
  std::string Why;
  KernelEffects E = effectsOfIR(
      tvmShaped("  store i32 1, ptr @counter", "@counter = global i32 0"),
      &Why);
  EXPECT_FALSE(E.OnlyArgumentMemory);
  EXPECT_EQ(E.Args, (std::vector<ArgAccess>{R, W}));
  EXPECT_NE(Why.find("global"), std::string::npos) << Why;
}

TEST(KernelEffectsTest, AKernelCallingAnUnknownFunctionIsConservative) {
  std::string Why;
  KernelEffects E = effectsOfIR(
      tvmShaped("  call void @mystery()", "declare void @mystery()"), &Why);
  EXPECT_EQ(E, (KernelEffects{false, {RW, RW}}));
  EXPECT_NE(Why.find("mystery"), std::string::npos) << Why;
  // A parallel launch of code that is not a function of the module
  // likewise.
  E = effectsOfIR(tvmShaped(R"(
  %launch = load ptr, ptr @__TVMBackendParallelLaunch
  %rc = call i32 %launch(ptr null, ptr null, i32 0))",
                            "@__TVMBackendParallelLaunch = linkonce global "
                            "ptr null"));
  EXPECT_EQ(E, (KernelEffects{false, {RW, RW}}));
}

/// A kernel whose compute body launches `@k_lambda` in parallel, the data
/// pointers in its closure data, TVM's way; the lambda copies a float from
/// the input to the output, then runs `LambdaBody`. `Closure` are more
/// lines after the closure data `%c` is filled.
std::string parallelKernel(const std::string &LambdaBody,
                           const std::string &Closure = "") {
  const std::string Globals = R"(
@__TVMBackendParallelLaunch = linkonce global ptr null
@__TVMBackendParallelBarrier = linkonce global ptr null
define internal i32 @k_lambda(i32 %task, ptr %env, ptr %cdata) {
  %np = getelementptr inbounds i8, ptr %env, i64 8
  %num = load i32, ptr %np
  %in = load ptr, ptr %cdata
  %op = getelementptr inbounds { ptr, ptr }, ptr %cdata, i32 0, i32 1
  %out = load ptr, ptr %op
  %v = load float, ptr %in
  store float %v, ptr %out
  %barrier = load ptr, ptr @__TVMBackendParallelBarrier
  %b = call i32 %barrier(i32 %task, ptr %env)
)" + LambdaBody + R"(
  ret i32 0
}
)";
  const std::string Body = R"(
  %c = alloca { ptr, ptr }
  store ptr %in, ptr %c
  %c1 = getelementptr inbounds { ptr, ptr }, ptr %c, i32 0, i32 1
  store ptr %out, ptr %c1
)" + Closure + R"(
  %launch = load ptr, ptr @__TVMBackendParallelLaunch
  %rc = call i32 %launch(ptr @k_lambda, ptr %c, i32 0)
)";
  return tvmShaped(Body, Globals);
}

TEST(KernelEffectsTest, AParallelLaunchIsFollowedIntoItsLambda) {
  std::string Why;
  EXPECT_EQ(effectsOfIR(parallelKernel(""), &Why), pure({R, W})) << Why;
  // What the lambda does counts.
  EXPECT_EQ(effectsOfIR(parallelKernel("  store float 0.0, ptr %in")),
            pure({RW, W}));
  // Closure data whose own address is stored in it, whose pointer is
  // overwritten by an integer, or that the lambda writes: not followed.
  EXPECT_EQ(effectsOfIR(parallelKernel("", "  store ptr %c, ptr %c1")),
            (KernelEffects{false, {RW, RW}}));
  EXPECT_EQ(effectsOfIR(parallelKernel("", "  store i64 64, ptr %c1")),
            (KernelEffects{false, {RW, RW}}));
  EXPECT_EQ(effectsOfIR(parallelKernel("  store ptr null, ptr %cdata")),
            (KernelEffects{false, {RW, RW}}));
}

TEST(KernelEffectsTest, MathFunctionsAreAllowedButNotHiddenState) {
  EXPECT_EQ(effectsOfIR(tvmShaped(R"(
  %e = call float @expf(float %x)
  store float %e, ptr %out)",
                                  "declare float @expf(float)")),
            pure({R, W}));
  // drand48 reads and writes the C library's hidden seed.
  EXPECT_EQ(effectsOfIR(tvmShaped(R"(
  %r = call double @drand48()
  %f = fptrunc double %r to float
  store float %f, ptr %out)",
                                  "declare double @drand48()")),
            (KernelEffects{false, {RW, RW}}));
}

TEST(KernelEffectsTest, APointerOfUnknownOriginIsConservative) {
  // The output's data pointer read through a pointer loaded from the
  // input's data: anything may be written.
  EXPECT_EQ(effectsOfIR(tvmShaped(R"(
  %p = load ptr, ptr %in
  store float 0.0, ptr %p)")),
            (KernelEffects{false, {RW, RW}}));
}

TEST(KernelEffectsTest, ANonConstantArgumentIndexIsConservative) {
  // The second tensor at 8 + 16 * (num - 1): which one is not known.
  const std::string IR = tvmShaped("", "", "i64 %off\n");
  std::string Shaped = IR;
  const std::string Gep = "  %p1 = getelementptr";
  Shaped.insert(Shaped.find(Gep), "  %n = sext i32 %num to i64\n"
                                  "  %m = shl i64 %n, 4\n"
                                  "  %off = add i64 %m, -8\n");
  std::string Why;
  KernelEffects E = effectsOfIR(Shaped, &Why);
  EXPECT_FALSE(E.OnlyArgumentMemory);
  EXPECT_TRUE(E.Args.empty());
  EXPECT_NE(Why.find("non-constant"), std::string::npos) << Why;
}

TEST(KernelEffectsTest, AMissingEntryIsConservative) {
  std::string Why;
  llvm::LLVMContext Ctx;
  llvm::SMDiagnostic Diag;
  auto M = llvm::parseAssemblyString(tvmShaped(""), Diag, Ctx);
  ASSERT_TRUE(M);
  std::map<std::string, std::string> Reasons;
  auto E = jit::analyzeKernelEffects(*M, {"k", "absent"}, &Reasons);
  EXPECT_EQ(E["absent"], KernelEffects{});
  EXPECT_NE(Reasons["absent"].find("__tvm_ffi_absent"), std::string::npos);
}

} // namespace
} // namespace vmjit::jittest
