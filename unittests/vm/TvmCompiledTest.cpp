// Tests TVM's compiled mode in the VM (lib/vm/tvm_compiled.cpp): the
// functions of a model library built as exec_mode="compiled" writes one
// (unittests/tools/tvm-library/Inputs/compiled.vmasm and
// compiled_kernels.c, built into compiled.so) run their library's
// __vmtir__NAME code with TVM's four handles; their pool entries outlive
// the VM safely; without the library they are missing, as before.
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/function_stats.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

namespace {

const OpenedProgram &library() {
  static OpenedProgram P = openProgram(VMJIT_TVM_COMPILED_LIBRARY);
  return P;
}

std::unique_ptr<VirtualMachine> compiledVM() {
  VMOptions Opts;
  Opts.Libraries = library().Libraries;
  return VirtualMachine::create(library().Exe, std::move(Opts));
}

std::string errorText(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E.format();
  }
  return "no error";
}

} // namespace

TEST(TvmCompiledTest, RunsTheLibrarysCode) {
  auto VM = compiledVM();
  const int64_t Main = VM->functionIndex("main");
  EXPECT_TRUE(VM->isTvmCompiled(Main));
  AnyView Args[] = {AnyView(int64_t(6)), AnyView(int64_t(7))};
  Array R = VM->invoke(Main, Args).cast<Array>();
  ASSERT_EQ(R.size(), 2u);
  EXPECT_EQ(R[0].cast<int64_t>(), 52); // 6 * 7 + the constant 10
  EXPECT_EQ(R[1].cast<int64_t>(), 6);
  // Calls between compiled functions through the function pool.
  AnyView N[] = {AnyView(int64_t(20))};
  EXPECT_EQ(VM->invoke(VM->functionIndex("recurse"), N).cast<int64_t>(), 0);
  EXPECT_EQ(VM->callCount(VM->functionIndex("recurse")), 21u);
  bool Found = false;
  for (const FunctionStats &S : collectFunctionStats(*VM))
    if (S.Name == "main") {
      Found = true;
      EXPECT_EQ(S.Tier, "tvm-compiled");
      EXPECT_EQ(S.Calls, 1u);
    }
  EXPECT_TRUE(Found);
}

TEST(TvmCompiledTest, ErrorsKeepTheirMessageAndAddTheFrame) {
  auto VM = compiledVM();
  AnyView X[] = {AnyView(int64_t(3))};
  EXPECT_EQ(errorText([&] { VM->invoke(VM->functionIndex("fails"), X); }),
            "ValueError: scalar.div: integer division by zero\n"
            "  in function 'fails' (TVM-compiled code)");
  // The VM is usable after the error: nothing was left on its stacks.
  AnyView Args[] = {AnyView(int64_t(1)), AnyView(int64_t(2))};
  EXPECT_EQ(VM->invoke(VM->functionIndex("main"), Args)
                .cast<Array>()[0]
                .cast<int64_t>(),
            12);
}

TEST(TvmCompiledTest, AnEntryOutlivingItsVMRaises) {
  Function Main;
  {
    auto VM = compiledVM();
    Main = Function(ObjectPtr<Object>::share(
        VM->poolEntry(VM->functionIndex("main"))));
  }
  EXPECT_THAT(errorText([&] { Main(int64_t(1), int64_t(2)); }),
              HasSubstr("function 'main' belongs to a VM that was destroyed"));
}

TEST(TvmCompiledTest, WithoutItsLibraryTheCodeIsMissing) {
  EXPECT_THAT(errorText([] { VirtualMachine::create(library().Exe, {}); }),
              HasSubstr("LinkError"));
}

// TVM-compiled code that looks up vm.builtin.check_tensor_info gets TVM's
// ABI: a function returning nothing (TVM's code drops the result without
// releasing it; vmjit's own check_tensor_info returns its argument).
TEST(TvmCompiledTest, LookupsGetTvmsCheckTensorInfo) {
  registerVMBuiltins();
  Function Std = *Registry::global().find("vm.builtin.check_tensor_info");
  std::optional<Function> Tvm = tvmAbiVariant(Std);
  ASSERT_TRUE(Tvm.has_value());
  Tensor X = Tensor::empty(std::vector<int64_t>{2}, DLDataType{kDLFloat, 32, 1},
                           cpuDevice());
  EXPECT_TRUE((*Tvm)(X, int64_t(1), "").isNone());
  EXPECT_EQ(Std(X, int64_t(1), "").cast<Tensor>().get(), X.get());
  EXPECT_THAT(errorText([&] { (*Tvm)(X, int64_t(2), "ctx"); }),
              HasSubstr("ctx: expected a tensor of rank 2 but got rank 1"));
  // Any other function has no variant.
  EXPECT_FALSE(
      tvmAbiVariant(*Registry::global().find("vm.builtin.copy")).has_value());
}
