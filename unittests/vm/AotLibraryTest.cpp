// Tests loading and running a library `vmjit compile` wrote (Inputs/
// aot.vmasm, compiled at build time) in this binary, which has no LLVM:
// every bytecode function runs native code from the first call with the
// interpreter's results and errors; a VM whose inlined builtin resolves to
// another function is refused and stays on the interpreter; the manifest
// is checked.
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/aot_library.h"
#include "vmjit/vm/function_stats.h"
#include "vmjit/vm/program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

#ifdef VMJIT_AOT_TEST_LIBRARY

namespace {

const OpenedProgram &library() {
  static OpenedProgram P = openProgram(VMJIT_AOT_TEST_LIBRARY);
  return P;
}

std::shared_ptr<Executable> source() {
  static auto Exe = loadProgram(VMJIT_VM_TEST_INPUTS "/aot.vmasm");
  return Exe;
}

std::unique_ptr<VirtualMachine> nativeVM(VMOptions Opts = {}) {
  auto VM = VirtualMachine::create(library().Exe, std::move(Opts));
  EXPECT_EQ(library().Aot->attach(*VM), "");
  return VM;
}

std::string errorText(VirtualMachine &VM, std::string_view F,
                      std::vector<Any> Args) {
  try {
    std::vector<AnyView> Views(Args.begin(), Args.end());
    VM.invoke(F, Views);
  } catch (const Error &E) {
    return E.format();
  }
  return "no error";
}

} // namespace

TEST(AotLibraryTest, HoldsTheProgramAndItsCode) {
  const OpenedProgram &P = library();
  ASSERT_NE(P.Aot, nullptr);
  EXPECT_TRUE(P.Exe->equals(*source())) << "the embedded executable";
  EXPECT_THAT(P.Aot->producer(), HasSubstr("vmjit "));
  for (size_t K = 0; K < P.Exe->functions().size(); ++K)
    EXPECT_EQ(P.Aot->code(K) != nullptr,
              P.Exe->function(K).Kind == FunctionKind::Bytecode)
        << P.Exe->function(K).Name;
}

TEST(AotLibraryTest, RunsNativeFromTheFirstCall) {
  auto VM = nativeVM();
  for (const char *F : {"fib", "sum", "weighted", "closure", "div"})
    EXPECT_TRUE(VM->isNative(VM->functionIndex(F))) << F;
  EXPECT_EQ(VM->call("fib", 20).cast<int64_t>(), 6765);
  EXPECT_EQ(VM->call("sum", 100000).cast<int64_t>(), 4999950000);
  EXPECT_EQ(VM->call("closure", 4).cast<int64_t>(), 13);
  Tensor X = Tensor::empty({3}, DLDataType{kDLFloat, 32, 1});
  for (int I = 0; I < 3; ++I)
    X.data<float>()[I] = 1.0f;
  EXPECT_DOUBLE_EQ(VM->call("weighted", X).cast<double>(), 6.5);
  for (const FunctionStats &S : collectFunctionStats(*VM)) {
    if (S.Kind != FunctionKind::Bytecode || S.Calls == 0)
      continue;
    EXPECT_EQ(S.Tier, "optimized") << S.Name;
    EXPECT_EQ(S.InterpretedCalls, 0u) << S.Name;
    ASSERT_TRUE(S.JIT.has_value());
    EXPECT_TRUE(S.JIT->AheadOfTime) << S.Name;
  }
}

TEST(AotLibraryTest, ErrorsAndStepsAsTheInterpreter) {
  auto Native = nativeVM();
  auto Interp = VirtualMachine::create(source());
  EXPECT_EQ(errorText(*Native, "call_div", {Any(1), Any(0)}),
            errorText(*Interp, "call_div", {Any(1), Any(0)}));
  EXPECT_THAT(errorText(*Native, "call_div", {Any(1), Any(0)}),
              HasSubstr("in function 'call_div', instruction 0"));
  Native->call("sum", 1000);
  Interp->call("sum", 1000);
  EXPECT_EQ(Native->stepsTaken(), Interp->stepsTaken());
  EXPECT_EQ(Native->call("call_div", 7, 2).cast<int64_t>(), 3); // usable
}

TEST(AotLibraryTest, ReplacedInlinedBuiltinKeepsTheInterpreter) {
  // scalar.add is inlined in the library's code: a VM that resolves it to
  // another function must not run that code.
  registerVMBuiltins();
  Registry R;
  R.addDefaults(Registry::global());
  R.addTyped("scalar.add", [](int64_t A, int64_t B) { return A + B + 1000; },
             /*AllowOverride=*/true);
  VMOptions Opts;
  Opts.FunctionRegistry = &R;
  auto VM = VirtualMachine::create(library().Exe, std::move(Opts));
  EXPECT_THAT(library().Aot->attach(*VM),
              HasSubstr("inlines the standard 'scalar.add'"));
  EXPECT_FALSE(VM->isNative(VM->functionIndex("fib")));
  EXPECT_EQ(VM->call("affine", 2, 3, 4).cast<int64_t>(), 1010);
}

TEST(AotLibraryTest, OtherModesIgnoreTheCode) {
  EXPECT_TRUE(modeRunsAotCode(ExecMode::Compiled));
  EXPECT_TRUE(modeRunsAotCode(ExecMode::Tiered));
  EXPECT_FALSE(modeRunsAotCode(ExecMode::Bytecode));
  EXPECT_FALSE(modeRunsAotCode(ExecMode::Baseline));
  // Without attach, the VM interprets the same executable.
  auto VM = VirtualMachine::create(library().Exe);
  EXPECT_EQ(VM->call("fib", 15).cast<int64_t>(), 610);
  EXPECT_FALSE(VM->isNative(VM->functionIndex("fib")));
}

#endif // VMJIT_AOT_TEST_LIBRARY

TEST(AotLibraryTest, ProgramsWithoutAManifestHaveNoCode) {
  EXPECT_EQ(openProgram(VMJIT_VM_TEST_INPUTS "/fib.vmasm").Aot, nullptr);
}
