// Tests the interpreter: calls, frames, errors with their frames, the
// recursion limit, the stateful API, save_function, instrument, profiler,
// link errors, and that the VM works again after any error.
#include "vmjit/builtins/builtins.h"
#include "vmjit/bytecode/builder.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/string.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

std::unique_ptr<VirtualMachine> makeVM(std::string_view Text,
                                       VMOptions Opts = {}) {
  return VirtualMachine::create(assemble(Text, "test.vmasm"), std::move(Opts));
}

const char *kFib = R"(
.func fib(n)
  %c = call scalar.lt(%n, 2)
  if %c else recurse
  ret %n
recurse:
  %a = call scalar.sub(%n, 1)
  %fa = call fib(%a)
  %b = call scalar.sub(%n, 2)
  %fb = call fib(%b)
  %s = call scalar.add(%fa, %fb)
  ret %s
.end
.func main(n)
  %r = call fib(%n)
  ret %r
.end
)";

Error errorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E;
  }
  return Error("NoError", "no error was raised");
}

} // namespace

TEST(VirtualMachineTest, RecursiveFib) {
  auto VM = makeVM(kFib);
  EXPECT_EQ(VM->call("main", 10).cast<int64_t>(), 55);
  EXPECT_EQ(VM->call("fib", 20).cast<int64_t>(), 6765);
  // fib(10) enters fib 177 times; fib(20) 21891 times.
  EXPECT_EQ(VM->callCount(VM->functionIndex("fib")), 177u + 21891u);
}

TEST(VirtualMachineTest, LoopsAndConstants) {
  auto VM = makeVM(R"(
.const $one = int 1
.func main(n)
  %i = call scalar.add(0, 0)
  %s = call scalar.add(0, 0)
loop:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %s = call scalar.add(%s, %i)
  %i = call scalar.add(%i, $one)
  goto loop
done:
  ret %s
.end
)");
  EXPECT_EQ(VM->call("main", 1000).cast<int64_t>(), 499500);
  EXPECT_EQ(VM->call("main", 0).cast<int64_t>(), 0);
}

TEST(VirtualMachineTest, ErrorsCarryEveryFrame) {
  auto VM = makeVM(R"(
.func inner(x)
  %y = call scalar.div(10, %x)
  ret %y
.end
.func main(x)
  %a = call scalar.add(%x, 1)
  %r = call inner(%a)
  ret %r
.end
.func ok(x)
  %r = call main(%x)
  ret %x
.end
)");
  Error E = errorOf([&] { VM->call("main", -1); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_THAT(E.message(), HasSubstr("division by zero"));
  // Each frame names where its instruction's text begins.
  EXPECT_THAT(E.frames(),
              ElementsAre("in function 'inner', instruction 0 (call "
                          "'scalar.div') at test.vmasm:3:3",
                          "in function 'main', instruction 1 (call 'inner') "
                          "at test.vmasm:8:3"));
  // One more frame when called from another function; then the VM is
  // still usable.
  E = errorOf([&] { VM->call("ok", -1); });
  EXPECT_EQ(E.frames().size(), 3u);
  EXPECT_EQ(E.frames()[2],
            "in function 'ok', instruction 0 (call 'main') at test.vmasm:12:3");
  EXPECT_EQ(VM->call("main", 4).cast<int64_t>(), 2);
  EXPECT_EQ(VM->call("ok", 4).cast<int64_t>(), 4);
}

TEST(VirtualMachineTest, FramesWithoutSourcePositionsNameTheInstruction) {
  // A program from the builder has no source positions.
  ExecutableBuilder B;
  int64_t Div = B.declarePacked("scalar.div");
  FunctionBuilder &F = B.beginFunction("main", {"x"});
  F.emitCall(1, Div, {Arg::imm(1), Arg::reg(0)});
  F.emitRet(1);
  B.endFunction();
  auto Built = VirtualMachine::create(B.finish());
  EXPECT_THAT(errorOf([&] { Built->call("main", 0); }).frames(),
              ElementsAre("in function 'main', instruction 0 (call "
                          "'scalar.div')"));
  // Text whose positions were dropped, and one that knows a line only.
  const char *Text = ".func main(x)\n  %r = call scalar.div(1, %x)\n"
                     "  ret %r\n.end\n";
  auto Stripped = assemble(Text, "t.vmasm");
  Stripped->setSourceMap({});
  EXPECT_THAT(errorOf([&] {
                VirtualMachine::create(Stripped)->call("main", 0);
              }).frames(),
              ElementsAre("in function 'main', instruction 0 (call "
                          "'scalar.div')"));
  auto LineOnly = assemble(Text, "t.vmasm");
  LineOnly->setSourceMap({"t.vmasm", {{2, 0}, {3, 0}}});
  EXPECT_THAT(errorOf([&] {
                VirtualMachine::create(LineOnly)->call("main", 0);
              }).frames(),
              ElementsAre("in function 'main', instruction 0 (call "
                          "'scalar.div') at t.vmasm:2"));
}

TEST(VirtualMachineTest, IfOnANonIntIsAnError) {
  auto VM = makeVM(R"(
.const $f = float 1.5
.func main()
  %c = call vm.builtin.copy($f)
  if %c else out
out:
  ret %c
.end
)");
  Error E = errorOf([&] { VM->call("main"); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "if: the condition must be an int or a bool, not "
                         "float");
  EXPECT_THAT(E.frames(), ElementsAre("in function 'main', instruction 1 (if) "
                                      "at test.vmasm:5:3"));
}

TEST(VirtualMachineTest, RecursionLimit) {
  auto VM = makeVM(R"(
.func down(n)
  %m = call scalar.add(%n, 1)
  %r = call down(%m)
  ret %r
.end
)");
  VM->setMaxCallDepth(100);
  Error E = errorOf([&] { VM->call("down", 0); });
  EXPECT_EQ(E.kind(), "RecursionError");
  EXPECT_EQ(E.message(), "maximum call depth of 100 exceeded");
  // 100 frames, printed as Python prints a recursion: three, then a count.
  EXPECT_EQ(E.frameCount(), 100u);
  const std::string Down =
      "in function 'down', instruction 1 (call 'down') at test.vmasm:4:3";
  EXPECT_THAT(E.frames(),
              ElementsAre(Down, Down, Down,
                          "[previous frame repeated 97 more times]"));
  // Nothing leaked into the next call.
  auto Ok = makeVM(kFib);
  EXPECT_EQ(Ok->call("main", 5).cast<int64_t>(), 5);
}

TEST(VirtualMachineTest, WrongArgumentCount) {
  auto VM = makeVM(kFib);
  Error E = errorOf([&] { VM->call("main", 1, 2); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "main: expected 1 argument but got 2");
  E = errorOf([&] { VM->call("nope"); });
  EXPECT_EQ(E.kind(), "LookupError");
}

TEST(VirtualMachineTest, MissingPackedFunctionsAreAllNamed) {
  Error E = errorOf([&] {
    makeVM(R"(
.func main(x)
  %a = call no.such.one(%x)
  %b = call scalar.add(%a, 1)
  %c = call no.such.two(%b)
  ret %c
.end
)");
  });
  EXPECT_EQ(E.kind(), "LinkError");
  EXPECT_EQ(E.message(), "2 packed functions are not found in any loaded "
                         "library or the registry: 'no.such.one' (called in "
                         "function 'main', instruction 0), 'no.such.two' "
                         "(called in function 'main', instruction 2). A "
                         "model's kernels come from its kernel library: "
                         "`vmjit run PROG --lib model.so`, "
                         "`vmjit.VirtualMachine(exe, libs=[\"model.so\"])` "
                         "in Python, VMOptions::Libraries in C++ (a model.so "
                         "that TVM's export_library wrote beside a .tvmexec "
                         "of the same name is found by itself)");
}

TEST(VirtualMachineTest, MissingPackedFunctionsGetTheClosestName) {
  Error E = errorOf([&] {
    makeVM(".func main(x)\n  %a = call scalar.mull(%x, 2)\n  ret %a\n"
           ".end\n");
  });
  EXPECT_EQ(E.message(), "1 packed function is not found in any loaded "
                         "library or the registry: 'scalar.mull' (called in "
                         "function 'main', instruction 0; did you mean "
                         "'scalar.mul'?)");
}

TEST(VirtualMachineTest, ClosuresAndFunctionValues) {
  auto VM = makeVM(R"(
.func add3(a, b, c)
  %t = call scalar.add(%a, %b)
  %s = call scalar.add(%t, %c)
  ret %s
.end
.func main(x)
  %k = call vm.builtin.make_closure(@add3, 10, 100)
  %r = call vm.builtin.invoke_closure(%vm, %k, %x)
  ret %r
.end
.func get()
  %k = call vm.builtin.make_closure(@add3, 1, 2)
  ret %k
.end
)");
  EXPECT_EQ(VM->call("main", 1).cast<int64_t>(), 111);
  // A closure returned to C++ is callable, until the VM is gone.
  Function K = VM->call("get").cast<Function>();
  EXPECT_EQ(K.name(), "add3");
  EXPECT_EQ(K(3).cast<int64_t>(), 6);
  VM.reset();
  Error E = errorOf([&] { K(3); });
  EXPECT_EQ(E.message(), "function 'add3' belongs to a VM that was destroyed");
}

TEST(VirtualMachineTest, VoidDestinationAndVMArgument) {
  Registry R;
  void *Seen = nullptr;
  R.add("test.see_vm", Function::fromTyped("test.see_vm", [&](void *P) {
          Seen = P;
          return int64_t(7);
        }));
  registerVMBuiltins(); // the standard library, into the global registry
  ASSERT_TRUE(Registry::global().find("scalar.add"));
  R.add("scalar.add", *Registry::global().find("scalar.add"));
  VMOptions O;
  O.FunctionRegistry = &R;
  auto VM = makeVM(R"(
.func main()
  call test.see_vm(%vm)
  %r = call scalar.add(1, 2)
  ret %r
.end
)",
                   O);
  EXPECT_EQ(VM->call("main").cast<int64_t>(), 3);
  EXPECT_EQ(Seen, VM.get());
}

TEST(VirtualMachineTest, StatefulAPI) {
  auto VM = makeVM(R"(
.func pair(a, b)
  %t = call vm.builtin.make_tuple(%a, %b)
  ret %t
.end
)");
  VM->setInput("pair", {Any(int64_t(1)), Any(std::string("two"))});
  Any Out = VM->invokeStateful("pair");
  EXPECT_EQ(VM->getOutputArity("pair"), 2);
  Array T = VM->getOutput("pair").cast<Array>();
  EXPECT_EQ(T[1].cast<std::string>(), "two");
  EXPECT_EQ(errorOf([&] { VM->getOutput("nope"); }).kind(), "LookupError");
  EXPECT_EQ(errorOf([&] { VM->invokeStateful("nope"); }).kind(),
            "LookupError");
}

TEST(VirtualMachineTest, SaveFunction) {
  auto VM = makeVM(kFib);
  VM->saveFunction("fib", "fib12", {Any(int64_t(12))});
  EXPECT_EQ(VM->getFunction("fib12")().cast<int64_t>(), 144);
  EXPECT_EQ(VM->call("fib12").cast<int64_t>(), 144);
  EXPECT_EQ(VM->getFunction("fib")(7).cast<int64_t>(), 13);
}

TEST(VirtualMachineTest, InstrumentSeesEveryCallAndCanSkip) {
  auto VM = makeVM(R"(
.func main(x)
  %a = call scalar.add(%x, 1)
  %b = call scalar.mul(%a, 10)
  ret %b
.end
)");
  std::vector<std::string> Log;
  VM->setInstrument([&](const CallEvent &E) {
    Log.push_back(fmt::format("{} {} {}", E.Before ? "before" : "after",
                              E.CalleeName, E.Instr));
    if (E.Before && E.CalleeName == "scalar.mul")
      return InstrumentAction::SkipCall;
    if (!E.Before) {
      EXPECT_EQ(E.Result->cast<int64_t>(), 3);
    }
    return InstrumentAction::Continue;
  });
  EXPECT_TRUE(VM->call("main", 2).isNone()); // the skipped call left None
  EXPECT_THAT(Log, ElementsAre("before scalar.add 0", "after scalar.add 0",
                               "before scalar.mul 1"));
  VM->setInstrument({});
  EXPECT_EQ(VM->call("main", 2).cast<int64_t>(), 30);
}

TEST(VirtualMachineTest, Profiler) {
  auto VM = makeVM(kFib);
  VM->setProfiling(true);
  EXPECT_EQ(VM->call("main", 10).cast<int64_t>(), 55);
  std::vector<ProfileEntry> P = VM->profile();
  auto Find = [&](const std::string &N) -> ProfileEntry {
    for (const ProfileEntry &E : P)
      if (E.Name == N)
        return E;
    return {};
  };
  EXPECT_EQ(Find("scalar.lt").Calls, 177u);
  EXPECT_EQ(Find("fib").Calls, 177u); // one from main, 176 recursive
  EXPECT_GT(Find("fib").TotalNs, 0);
  EXPECT_THAT(VM->profileTable(), HasSubstr("scalar.add"));
  VM->resetProfile();
  EXPECT_TRUE(VM->profile().empty());
}

TEST(VirtualMachineTest, ManyArgumentsAndTuples) {
  auto VM = makeVM(R"(
.func main()
  %t = call vm.builtin.make_tuple(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
  %x = call vm.builtin.tuple_getitem(%t, 19)
  ret %x
.end
)");
  EXPECT_EQ(VM->call("main").cast<int64_t>(), 19);
}

TEST(VirtualMachineTest, RegisterStackLimit) {
  // Each frame of `down` has 4 registers: 10 frames fit in 40.
  VMOptions Opts;
  Opts.MaxStackRegisters = 40;
  auto VM = makeVM(R"(
.func down(n)
  %c = call scalar.le(%n, 0)
  if %c else more
  ret %n
more:
  %m = call scalar.sub(%n, 1)
  %r = call down(%m)
  ret %r
.end
)",
                   Opts);
  EXPECT_EQ(VM->call("down", 9).cast<int64_t>(), 0);
  Error E = errorOf([&] { VM->call("down", 10); });
  EXPECT_EQ(E.kind(), "RecursionError");
  EXPECT_EQ(E.message(), "the register stack is full: a frame of 4 registers "
                         "on top of 40 is over the limit of 40");
  EXPECT_EQ(E.frameCount(), 10u);
  EXPECT_EQ(VM->call("down", 9).cast<int64_t>(), 0);
}

TEST(VirtualMachineTest, StepBudgetAndInterruptOnTheInterpreter) {
  // The JIT tests cover every tier; this one also runs without the JIT.
  auto VM = makeVM(R"(
.func spin(n)
top:
  %n = call scalar.add(%n, 1)
  goto top
.end
)");
  VM->setCallLimits({.MaxSteps = 1000});
  Error E = errorOf([&] { VM->call("spin", 0); });
  EXPECT_EQ(E.kind(), "StepLimitError");
  EXPECT_EQ(VM->stepsTaken(), 1000u);
  EXPECT_EQ(E.frames(),
            std::vector<std::string>{
                "in function 'spin', instruction 1 at test.vmasm:5:3"});
  VM->setCallLimits({});
  VM->interrupt();
  E = errorOf([&] { VM->call("spin", 0); });
  EXPECT_EQ(E.kind(), "InterruptedError");
  VM->setCallLimits({.Timeout = std::chrono::milliseconds(5)});
  E = errorOf([&] { VM->call("spin", 0); });
  EXPECT_EQ(E.kind(), "TimeoutError");
}
