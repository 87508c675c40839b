// Tests vm.builtin.make_closure, invoke_closure and call_tir_dyn: captured
// values follow the call's own arguments; invoke_closure takes %vm first
// and accepts a closure, a VM function or a packed function (TVM's probes
// invoke_packed_directly and invoke_vmfunc_ref); call_tir_dyn unpacks its
// last argument, a shape, into int arguments.
#include "BuiltinTestUtil.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;

namespace {

const char *kProgram = R"(
.func sub3(a, b, c)
  %d = call scalar.sub(%a, %b)
  %e = call scalar.mul(%d, 100)
  %r = call scalar.add(%e, %c)
  ret %r
.end
.func sub2(x, y)
  %r = call scalar.sub(%x, %y)
  ret %r
.end
)";

} // namespace

TEST(BuiltinClosureTest, CapturedValuesFollowTheCallsArguments) {
  auto VM = makeVM(kProgram);
  Function Make = builtin("vm.builtin.make_closure");
  Function Invoke = builtin("vm.builtin.invoke_closure");
  // (10 - 1) * 100 + 7: 10 is the call's argument, 1 and 7 are captured.
  Any Clo = Make(VM->getFunction("sub3"), 1, 7);
  EXPECT_EQ(Clo.cast<Function>().name(), "sub3");
  EXPECT_EQ(Invoke(vmArg(*VM), Clo, 10).cast<int64_t>(), 907);
  // A closure is a function: it can be called directly too.
  EXPECT_EQ(Clo.cast<Function>()(10).cast<int64_t>(), 907);
  // A closure of a closure appends its own captures first.
  Any Outer = Make(Make(VM->getFunction("sub3"), 7), 1);
  EXPECT_EQ(Invoke(vmArg(*VM), Outer, 10).cast<int64_t>(), 907);
}

TEST(BuiltinClosureTest, MakeClosureOfAPackedFunction) {
  // TVM refuses (it wants a VM function); vmjit accepts any function.
  auto VM = makeVM();
  Any Clo = builtin("vm.builtin.make_closure")(builtin("scalar.sub"), 3);
  EXPECT_EQ(builtin("vm.builtin.invoke_closure")(vmArg(*VM), Clo, 10)
                .cast<int64_t>(),
            7);
}

TEST(BuiltinClosureTest, MakeClosureErrors) {
  Function Make = builtin("vm.builtin.make_closure");
  EXPECT_EQ(errorText([&] { Make(); }),
            "TypeError: vm.builtin.make_closure: expected at least 1 "
            "argument but got 0");
  EXPECT_EQ(errorText([&] { Make(5, 1); }),
            "TypeError: vm.builtin.make_closure: argument 1 expected "
            "Function but got int");
}

TEST(BuiltinClosureTest, InvokeClosureTakesFunctionsDirectly) {
  auto VM = makeVM(kProgram);
  Function Invoke = builtin("vm.builtin.invoke_closure");
  // TVM's probes: invoke_closure(%vm, @scalar.sub, 10, 3) and
  // invoke_closure(%vm, @sub2, 10, 3) both give 7.
  EXPECT_EQ(Invoke(vmArg(*VM), builtin("scalar.sub"), 10, 3).cast<int64_t>(),
            7);
  EXPECT_EQ(Invoke(vmArg(*VM), VM->getFunction("sub2"), 10, 3).cast<int64_t>(),
            7);
}

TEST(BuiltinClosureTest, InvokeClosureErrors) {
  auto VM = makeVM(kProgram);
  Function Invoke = builtin("vm.builtin.invoke_closure");
  EXPECT_EQ(errorText([&] { Invoke(vmArg(*VM)); }),
            "TypeError: vm.builtin.invoke_closure: expected at least 2 "
            "arguments but got 1");
  // %vm comes first.
  EXPECT_EQ(errorText([&] { Invoke(builtin("scalar.sub"), 10, 3); }),
            "TypeError: vm.builtin.invoke_closure: argument 1 expected the VM "
            "(%vm) but got Function");
  EXPECT_EQ(errorText([&] { Invoke(nullptr, builtin("scalar.sub"), 10, 3); }),
            "TypeError: vm.builtin.invoke_closure: argument 1 expected the VM "
            "(%vm) but got None");
  EXPECT_EQ(errorText([&] { Invoke(vmArg(*VM), "f", 1); }),
            "TypeError: vm.builtin.invoke_closure: argument 2 expected a "
            "closure or function but got str");
  // The callee's own error passes through unchanged.
  EXPECT_EQ(errorText([&] { Invoke(vmArg(*VM), VM->getFunction("sub2"), 1); }),
            "TypeError: sub2: expected 2 arguments but got 1");
}

TEST(BuiltinClosureTest, CallTirDynUnpacksTheShape) {
  Function Call = builtin("vm.builtin.call_tir_dyn");
  Function Tuple = builtin("vm.builtin.make_tuple");
  Tensor X = Tensor::empty({2}, dtype::Float32);
  // f(x, "s", 4, 5): the arguments between f and the shape, then the dims.
  Array R = Call(Tuple, X, "s", Shape{4, 5}).cast<Array>();
  ASSERT_EQ(R.size(), 4u);
  EXPECT_EQ(R[0].cast<Tensor>().get(), X.get());
  EXPECT_EQ(R[1].cast<std::string>(), "s");
  EXPECT_EQ(R[2].cast<int64_t>(), 4);
  EXPECT_EQ(R[3].cast<int64_t>(), 5);
  // Only the shape: f(4); an empty shape adds nothing.
  EXPECT_EQ(Call(Tuple, Shape{4}).cast<Array>().size(), 1u);
  EXPECT_EQ(Call(Tuple, X, Shape(std::vector<int64_t>())).cast<Array>().size(),
            1u);
  // A VM function too: sub2(10, 3).
  auto VM = makeVM(kProgram);
  EXPECT_EQ(Call(VM->getFunction("sub2"), 10, Shape{3}).cast<int64_t>(), 7);
}

TEST(BuiltinClosureTest, CallTirDynErrors) {
  Function Call = builtin("vm.builtin.call_tir_dyn");
  EXPECT_EQ(errorText([&] { Call(builtin("vm.builtin.make_tuple")); }),
            "TypeError: vm.builtin.call_tir_dyn: expected at least 2 "
            "arguments but got 1");
  EXPECT_EQ(errorText([&] { Call(1, Shape{1}); }),
            "TypeError: vm.builtin.call_tir_dyn: argument 1 expected "
            "Function but got int");
  EXPECT_EQ(errorText([&] { Call(builtin("vm.builtin.make_tuple"), 1, 2); }),
            "TypeError: vm.builtin.call_tir_dyn: argument 3 expected Shape "
            "but got int");
  // The callee's error passes through.
  EXPECT_EQ(errorText([&] { Call(builtin("scalar.sub"), 1, Shape{2, 3}); }),
            "TypeError: scalar.sub: expected 2 arguments but got 3");
}
