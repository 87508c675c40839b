// Tests vm::bindParams on small programs with C++ kernels and hand-made
// effects, on the interpreter: what is folded, what is not (an unbound
// input, a reused output, missing or weaker effects), the errors, and that
// the bound function gives the unbound one's results. Every mode:
// unittests/jit/BindParamsModesTest.cpp.
#include "BindTestKernels.h"

#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/bind_params.h"
#include "vmjit/vm/virtual_machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::bindtest;
using ::testing::HasSubstr;

namespace {

VMOptions options() {
  VMOptions O;
  O.Libraries = {testKernels()};
  return O;
}

std::unique_ptr<VirtualMachine> makeVM(std::string_view Text) {
  return VirtualMachine::create(assemble(Text, "bind.vmasm"), options());
}

/// Binds and returns the result; `Effects` defaults to the kernels'.
BindResult bind(VirtualMachine &VM, std::vector<ParamBinding> P,
                const KernelEffectsLookup &Effects = lookupOf(kernelEffects()),
                std::string_view Func = "main") {
  return bindParams(VM, Func, P, Effects);
}

std::vector<int64_t> foldedInstrs(const BindResult &B) {
  std::vector<int64_t> Out;
  for (const FoldedCall &F : B.Folded)
    Out.push_back(F.Instr);
  return Out;
}

std::string bindErrorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "BindError");
    return E.message();
  }
  return "no error";
}

/// Calls of `Callee` left in function `Func` of `Exe`.
int callsOf(const Executable &Exe, std::string_view Callee,
            std::string_view Func = "main") {
  const FunctionInfo &F = Exe.function(*Exe.findFunction(Func));
  int N = 0;
  for (int64_t I = F.StartInstr; I < F.EndInstr; ++I) {
    InstrView V = Exe.instr(I);
    N +=
        V.opcode() == Opcode::Call && Exe.function(V.callFunc()).Name == Callee;
  }
  return N;
}

} // namespace

TEST(BindParamsTest, FoldsTheTransposeOfABoundWeight) {
  auto VM = makeVM(kTransposeAdd);
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W).cast<Tensor>());
  BindResult B = bind(*VM, {{"w", W}});
  ASSERT_EQ(B.Folded.size(), 1u);
  EXPECT_EQ(B.Folded[0].Function, "main");
  EXPECT_EQ(B.Folded[0].Callee, "k.transpose");
  EXPECT_EQ(B.Folded[0].Instr, 2);
  const FunctionInfo &Main = B.Exe->function(*B.Exe->findFunction("main"));
  EXPECT_EQ(Main.NumParams, 1);
  EXPECT_EQ(Main.ParamNames, std::vector<std::string>{"x"});
  // The call and its allocations are gone.
  EXPECT_EQ(callsOf(*B.Exe, "k.transpose"), 0);
  EXPECT_EQ(callsOf(*B.Exe, "vm.builtin.alloc_tensor"), 1);
  EXPECT_EQ(callsOf(*B.Exe, "vm.builtin.alloc_storage"), 1);
  auto Bound = VirtualMachine::create(B.Exe, options());
  const int Before = transposes();
  for (int I = 0; I < 3; ++I)
    EXPECT_EQ(values(Bound->call("main", X).cast<Tensor>()), Expected);
  EXPECT_EQ(transposes(), Before);
}

TEST(BindParamsTest, BindsByIndex) {
  auto VM = makeVM(kTransposeAdd);
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W).cast<Tensor>());
  BindResult B = bind(*VM, {{1, W}});
  EXPECT_EQ(foldedInstrs(B), std::vector<int64_t>{2});
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", X).cast<Tensor>()), Expected);
  // Binding x instead: the remaining parameter is w.
  BindResult BX = bind(*VM, {{0, X}});
  auto BoundX = VirtualMachine::create(BX.Exe, options());
  EXPECT_EQ(values(BoundX->call("main", W).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, NothingFoldedWhenAnInputIsUnbound) {
  auto VM = makeVM(kTransposeAdd);
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W).cast<Tensor>());
  BindResult B = bind(*VM, {{"x", X}});
  EXPECT_TRUE(B.Folded.empty());
  EXPECT_EQ(callsOf(*B.Exe, "k.transpose"), 1);
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", W).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, NothingFoldedWithoutProvenEffects) {
  auto VM = makeVM(kTransposeAdd);
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W).cast<Tensor>());
  auto Weaker = kernelEffects();
  Weaker["k.transpose"].OnlyArgumentMemory = false;
  auto NoAdd = kernelEffects();
  NoAdd.erase("k.add"); // the transpose's reader is not proven
  auto WrongCount = kernelEffects();
  WrongCount["k.transpose"].Args.push_back(ArgAccess::Read);
  for (const KernelEffectsLookup &L :
       {KernelEffectsLookup(), lookupOf({}), lookupOf(Weaker), lookupOf(NoAdd),
        lookupOf(WrongCount)}) {
    BindResult B = bind(*VM, {{"w", W}}, L);
    EXPECT_TRUE(B.Folded.empty());
    EXPECT_EQ(callsOf(*B.Exe, "k.transpose"), 1);
    auto Bound = VirtualMachine::create(B.Exe, options());
    EXPECT_EQ(values(Bound->call("main", X).cast<Tensor>()), Expected);
  }
}

TEST(BindParamsTest, NothingFoldedWhenTheOutputIsWrittenAgain) {
  // The transpose's output is doubled in place before the add reads it.
  auto VM = makeVM(withConstants(R"(
.func main(x, w)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.transpose(%w, %t)
  call k.scale2(%t)
  %o = call vm.builtin.alloc_tensor(%st, 32, $s32, $f32)
  call k.add(%x, %t, %o)
  ret %o
.end
)"));
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W).cast<Tensor>());
  BindResult B = bind(*VM, {{"w", W}});
  EXPECT_TRUE(B.Folded.empty());
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", X).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, NothingFoldedWhenTheStorageIsWrittenThroughAnother) {
  // %u is a view of the same bytes as %t: the neg overwrites the
  // transpose before the add reads it (x + -x).
  auto VM = makeVM(withConstants(R"(
.func main(x, w)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  %u = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.transpose(%w, %t)
  call k.neg(%x, %u)
  %st2 = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %o = call vm.builtin.alloc_tensor(%st2, 0, $s32, $f32)
  call k.add(%x, %t, %o)
  ret %o
.end
)"));
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W).cast<Tensor>());
  EXPECT_EQ(Expected, std::vector<float>(6, 0.0f));
  BindResult B = bind(*VM, {{"w", W}});
  EXPECT_TRUE(B.Folded.empty());
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", X).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, NothingFoldedWhenTheOutputRegisterIsRedefined) {
  // %t is x by the time the transpose writes it (into the caller's x).
  auto VM = makeVM(withConstants(R"(
.func main(x, w)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  %t = call vm.builtin.copy(%x)
  call k.transpose(%w, %t)
  ret %x
.end
)"));
  Tensor W = iota({2, 3}, 10);
  Tensor X1 = iota({3, 2}, 1), X2 = iota({3, 2}, 1);
  const auto Expected = values(VM->call("main", X1, W).cast<Tensor>());
  BindResult B = bind(*VM, {{"w", W}});
  EXPECT_TRUE(B.Folded.empty());
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", X2).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, NothingFoldedInsideALoopThatReadsTheOutputFirst) {
  // The add at the loop's head reads the previous iteration's %t.
  auto VM = makeVM(withConstants(R"(
.func main(x, w, n)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.neg(%x, %t)
  %i = call vm.builtin.copy(0)
  %st2 = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %o = call vm.builtin.alloc_tensor(%st2, 0, $s32, $f32)
loop:
  call k.add(%x, %t, %o)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.transpose(%w, %t)
  %i = call scalar.add(%i, 1)
  %c = call scalar.lt(%i, %n)
  if %c else done
  goto loop
done:
  ret %o
.end
)"));
  Tensor X = iota({3, 2}, 1), W = iota({2, 3}, 10);
  const auto Expected = values(VM->call("main", X, W, 2).cast<Tensor>());
  BindResult B = bind(*VM, {{"w", W}});
  EXPECT_TRUE(B.Folded.empty());
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", X, 2).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, FoldsChainsAndBoundTupleElements) {
  // w comes out of a bound tuple; neg reads the folded transpose.
  auto VM = makeVM(withConstants(R"(
.const $err = str "params"
.func main(x, params)
  call vm.builtin.check_tuple_info(%params, 2, $err)
  %w = call vm.builtin.tuple_getitem(%params, 1)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.transpose(%w, %t)
  %w = call vm.builtin.null_value()
  %st2 = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %n = call vm.builtin.alloc_tensor(%st2, 0, $s32, $f32)
  call k.neg(%t, %n)
  %t = call vm.builtin.null_value()
  %st3 = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %o = call vm.builtin.alloc_tensor(%st3, 0, $s32, $f32)
  call k.add(%x, %n, %o)
  ret %o
.end
)"));
  Tensor X = iota({3, 2}, 1);
  Array Params(std::vector<Any>{Any(iota({1}, 0)), Any(iota({2, 3}, 10))});
  const auto Expected = values(VM->call("main", X, Params).cast<Tensor>());
  BindResult B = bind(*VM, {{"params", Params}});
  EXPECT_EQ(foldedInstrs(B), (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ(B.Folded[0].Callee, "vm.builtin.tuple_getitem");
  EXPECT_EQ(callsOf(*B.Exe, "vm.builtin.check_tuple_info"), 0);
  EXPECT_EQ(callsOf(*B.Exe, "vm.builtin.alloc_storage"), 1);
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(values(Bound->call("main", X).cast<Tensor>()), Expected);
}

TEST(BindParamsTest, AKernelFailingAtBindTimeStays) {
  auto VM = makeVM(withConstants(R"(
.func main(x, w)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.fail(%w, %t)
  ret %t
.end
)"));
  BindResult B = bind(*VM, {{"w", iota({2, 3}, 10)}});
  EXPECT_TRUE(B.Folded.empty());
  auto Bound = VirtualMachine::create(B.Exe, options());
  try {
    Bound->call("main", iota({3, 2}, 1));
    ADD_FAILURE() << "no error";
  } catch (const Error &E) {
    EXPECT_THAT(E.message(), HasSubstr("k.fail always fails"));
  }
}

TEST(BindParamsTest, ABoundParameterReturnedOrTestedKeepsARegister) {
  auto VM = makeVM(R"(
.func main(a, b)
  %c = call scalar.lt(%a, %b)
  if %c else other
  ret %b
other:
  ret %a
.end
)");
  BindResult B = bind(*VM, {{"b", Any(int64_t(5))}});
  auto Bound = VirtualMachine::create(B.Exe, options());
  EXPECT_EQ(Bound->call("main", 3).cast<int64_t>(), 5);
  EXPECT_EQ(Bound->call("main", 7).cast<int64_t>(), 7);
  BindResult BA = bind(*VM, {{"a", Any(int64_t(6))}});
  auto BoundA = VirtualMachine::create(BA.Exe, options());
  EXPECT_EQ(BoundA->call("main", 9).cast<int64_t>(), 9);
  EXPECT_EQ(BoundA->call("main", 2).cast<int64_t>(), 6);
}

TEST(BindParamsTest, AKernelWritingABoundValueOrAConstantIsAnError) {
  auto VM = makeVM(R"(
.const $k = tensor float32 [2] [1, 2]
.func main(x, w)
  call k.scale2(%w)
  ret %x
.end
.func other(x)
  call k.scale2($k)
  ret %x
.end
)");
  EXPECT_EQ(bindErrorOf([&] {
              bind(*VM, {{"w", iota({2}, 0)}});
            }),
            "bind_params: function 'main', instruction 0 (call 'k.scale2'): "
            "kernel 'k.scale2' writes its argument 0, the bound parameter "
            "'w', which is immutable");
  EXPECT_THAT(
      bindErrorOf([&] {
        bind(*VM, {{"x", Any(int64_t(1))}}, lookupOf(kernelEffects()), "other");
      }),
      HasSubstr("kernel 'k.scale2' writes its argument 0, constant "
                "$0, which is immutable"));
  // Without effects nothing is known to write it.
  EXPECT_EQ(bind(*VM, {{"w", iota({2}, 0)}}, lookupOf({})).Folded.size(), 0u);
}

TEST(BindParamsTest, BadBindingsAreOneClearError) {
  auto VM = makeVM(kTransposeAdd);
  Tensor W = iota({2, 3}, 10);
  EXPECT_EQ(bindErrorOf([&] {
              bind(*VM, {{"v", W}});
            }),
            "bind_params: function 'main' has no parameter 'v' (its "
            "parameters: x, w)");
  EXPECT_EQ(bindErrorOf([&] {
              bind(*VM, {{2, W}});
            }),
            "bind_params: function 'main' has no parameter 2 (it has 2)");
  EXPECT_EQ(bindErrorOf([&] {
              bind(*VM, {{"w", W}, {1, W}});
            }),
            "bind_params: function 'main': parameter 'w' is bound twice");
  EXPECT_EQ(bindErrorOf([&] {
              bind(*VM, {{"w", W}}, lookupOf(kernelEffects()), "nope");
            }),
            "bind_params: no function 'nope'");
  EXPECT_EQ(bindErrorOf([&] {
              bind(*VM, {{"w", W}}, lookupOf(kernelEffects()), "k.add");
            }),
            "bind_params: function 'k.add' is a packed function, not a "
            "bytecode function");
  auto Called = makeVM(std::string(kTransposeAdd) + R"(
.func caller(x, w)
  %r = call main(%x, %w)
  ret %r
.end
)");
  EXPECT_THAT(bindErrorOf([&] {
                bind(*Called, {{"w", W}});
              }),
              HasSubstr("function 'main' is used by function 'caller', "
                        "instruction 0"));
}

TEST(BindParamsTest, TheFunctionsChecksOfABoundValueRunAtBindTime) {
  auto VM = makeVM(R"(
.const $f32 = dtype float32
.const $err = str "w"
.func main(x, w)
  call vm.builtin.check_tensor_info(%w, 2, $f32, $err)
  call vm.builtin.match_shape(%w, %void, 2, 0, 2, 0, 3, $err)
  ret %w
.end
)");
  BindResult B = bind(*VM, {{"w", iota({2, 3}, 0)}});
  EXPECT_EQ(callsOf(*B.Exe, "vm.builtin.check_tensor_info"), 0);
  EXPECT_EQ(callsOf(*B.Exe, "vm.builtin.match_shape"), 0);
  EXPECT_THAT(bindErrorOf([&] {
                bind(*VM, {{"w", iota({3}, 0)}});
              }),
              HasSubstr("bind_params: function 'main', instruction 0 (call "
                        "'vm.builtin.check_tensor_info'): the bound parameter "
                        "'w' fails the function's check: "));
  EXPECT_THAT(bindErrorOf([&] {
                bind(*VM, {{"w", iota({3, 2}, 0)}});
              }),
              HasSubstr("instruction 1 (call 'vm.builtin.match_shape')"));
}

TEST(BindParamsTest, EffectsInLooksUpAMapByName) {
  std::map<std::string, KernelEffects> Map;
  for (const auto &[Name, E] : kernelEffects())
    Map.emplace(Name, E);
  const KernelEffectsLookup L = effectsIn(Map);
  EXPECT_EQ(L("k.add"), Map["k.add"]);
  EXPECT_EQ(L("k.nope"), std::nullopt);
  auto VM = makeVM(kTransposeAdd);
  EXPECT_EQ(foldedInstrs(bind(*VM, {{"w", iota({2, 3}, 10)}}, L)),
            std::vector<int64_t>{2});
}
