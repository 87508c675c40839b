// Tests the limits on a call and its cancellation in every tier: the step
// budget (bytecode function entries + backward jumps, counted identically
// by the interpreter and JIT code), the deadline, interrupt() from another
// thread, the recursion limit; and that after any error, in any tier, the
// VM holds no stray references and the next call works.
#include "CallErrors.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/signal_check.h"
#include "vmjit/vm/virtual_machine.h"

#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using vmjit::jittest::errorOf;
using vmjit::jittest::kindOf;

namespace {

const char *kProgram = R"(
.const $three = tensor float32 [3] [1, 2, 3]
.func loop(n)
  %i = call vm.builtin.copy(0)
  %s = call vm.builtin.copy(0)
head:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %s = call scalar.add(%s, %i)
  %i = call scalar.add(%i, 1)
  goto head
done:
  ret %s
.end
.func countdown(n)
top:
  %n = call scalar.sub(%n, 1)
  %c = call scalar.le(%n, 0)
  if %c else top
  ret %n
.end
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
; calls_loop(n): loop's code copied into its direct entry (tier 2), which
; takes its steps there.
.func calls_loop(n)
  %r = call loop(%n)
  %s = call scalar.add(%r, 1)
  ret %s
.end
.func forever(x)
top:
  %x = call scalar.add(%x, 1)
  goto top
.end
.func bump(x)
  %y = call scalar.add(%x, 1)
  ret %y
.end
.func calls_forever(x)
top:
  %x = call bump(%x)
  goto top
.end
.func down(n)
  %c = call scalar.le(%n, 0)
  if %c else more
  ret %n
more:
  %m = call scalar.sub(%n, 1)
  %r = call down(%m)
  ret %r
.end
.func deep(n)
  %m = call scalar.add(%n, 1)
  %r = call deep(%m)
  ret %r
.end
.func hold(t, x)
  %u = call vm.builtin.make_tuple(%t, %t, %x)
  %v = call vm.builtin.copy(%u)
  %y = call scalar.div(10, %x)
  %e = call vm.builtin.tuple_getitem(%v, %x)
  ret %e
.end
.func hold_loop(t, n)
  %u = call vm.builtin.make_tuple(%t, %t)
top:
  %n = call scalar.sub(%n, 1)
  %w = call vm.builtin.make_tuple(%u, %t)
  goto top
.end
.func kernel_error(t, x)
  %u = call vm.builtin.make_tuple(%t, %x)
  %s = call tensor.add(%t, $three)
  ret %s
.end
.func badif(t, x)
  %u = call vm.builtin.make_tuple(%t)
  if %t else out
out:
  ret %x
.end
)";

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe =
      assemble(kProgram, "limits.vmasm");
  return Exe;
}

/// Tiered mode uses threshold 1 with synchronous compiles, so that the
/// first call starts in the interpreter and moves to native code (by
/// on-stack replacement in loops) deterministically.
std::unique_ptr<VirtualMachine> makeVMWith(ExecMode Mode, VMOptions VO) {
  auto VM = VirtualMachine::create(program(), std::move(VO));
  JITOptions O;
  O.Mode = Mode;
  O.Threshold = 1;
  O.Background = false;
  enableJIT(*VM, O);
  return VM;
}

std::unique_ptr<VirtualMachine> makeVM(ExecMode Mode, CallLimits L = {}) {
  VMOptions VO;
  VO.Limits = L;
  return makeVMWith(Mode, std::move(VO));
}

class LimitsTest : public ::testing::TestWithParam<ExecMode> {};

} // namespace

TEST_P(LimitsTest, UnlimitedByDefault) {
  auto VM = makeVM(GetParam());
  EXPECT_EQ(VM->call("loop", 100000).cast<int64_t>(), int64_t(4999950000));
  EXPECT_EQ(VM->stepsTaken(), 100001u);
}

TEST_P(LimitsTest, StepsAreEntriesPlusBackwardJumps) {
  auto VM = makeVM(GetParam());
  EXPECT_EQ(VM->call("loop", 100).cast<int64_t>(), 4950);
  EXPECT_EQ(VM->stepsTaken(), 101u); // one entry, 100 gotos
  EXPECT_EQ(VM->call("countdown", 10).cast<int64_t>(), 0);
  EXPECT_EQ(VM->stepsTaken(), 10u); // one entry, 9 backward ifs
  EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
  EXPECT_EQ(VM->stepsTaken(), 177u); // fib(10) enters fib 177 times
}

TEST_P(LimitsTest, StepBudgetIsExactInEveryTier) {
  auto VM = makeVM(GetParam(), {.MaxSteps = 101});
  EXPECT_EQ(VM->call("loop", 100).cast<int64_t>(), 4950);
  EXPECT_EQ(kindOf(*VM, "loop", 101), "StepLimitError");
  EXPECT_EQ(VM->stepsTaken(), 101u);
  VM->setCallLimits({.MaxSteps = 177});
  EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
  VM->setCallLimits({.MaxSteps = 176});
  EXPECT_EQ(kindOf(*VM, "fib", 10), "StepLimitError");
  // The budget is per outermost call: the next one starts afresh.
  EXPECT_EQ(VM->call("fib", 9).cast<int64_t>(), 34);
  // Steps taken in a callee's code copied into its direct entry.
  VM->setCallLimits({.MaxSteps = 102});
  EXPECT_EQ(VM->call("calls_loop", 100).cast<int64_t>(), 4951);
  VM->setCallLimits({.MaxSteps = 101});
  EXPECT_EQ(kindOf(*VM, "calls_loop", 100), "StepLimitError");
  EXPECT_EQ(VM->stepsTaken(), 101u);
}

TEST_P(LimitsTest, StepLimitErrorsMatchTheInterpreter) {
  auto Interp = makeVM(ExecMode::Bytecode, {.MaxSteps = 50});
  auto VM = makeVM(GetParam(), {.MaxSteps = 50});
  for (const char *F :
       {"loop", "fib", "forever", "calls_forever", "calls_loop"}) {
    std::string Want = errorOf(*Interp, F, 60);
    EXPECT_NE(Want.find("StepLimitError"), std::string::npos) << Want;
    EXPECT_NE(Want.find("budget of 50 steps"), std::string::npos) << Want;
    EXPECT_EQ(errorOf(*VM, F, 60), Want) << F;
    EXPECT_EQ(VM->stepsTaken(), 50u) << F;
  }
  EXPECT_EQ(errorOf(*VM, "loop", 100), errorOf(*Interp, "loop", 100));
  EXPECT_EQ(VM->call("loop", 10).cast<int64_t>(), 45);
}

TEST_P(LimitsTest, DeadlineStopsAnEndlessLoop) {
  auto VM = makeVM(GetParam(), {.Timeout = std::chrono::milliseconds(30)});
  for (const char *F : {"forever", "calls_forever"}) {
    auto Start = std::chrono::steady_clock::now();
    std::string E = errorOf(*VM, F, 0);
    auto Took = std::chrono::steady_clock::now() - Start;
    EXPECT_NE(E.find("TimeoutError: the call exceeded its time limit of 30 ms"),
              std::string::npos)
        << E;
    EXPECT_NE(E.find(std::string("in function '") + F + "'"),
              std::string::npos)
        << E;
    // A hang guard, not a timing test: the limit is 30 ms.
    EXPECT_LT(Took, std::chrono::seconds(20)) << F;
  }
  EXPECT_EQ(VM->call("loop", 1000).cast<int64_t>(), 499500);
}

TEST_P(LimitsTest, InterruptFromAnotherThread) {
  auto VM = makeVM(GetParam());
  for (const char *F : {"forever", "calls_forever", "hold_loop"}) {
    Tensor T = Tensor::empty({4}, DLDataType{kDLFloat, 32, 1});
    std::atomic<bool> Done{false};
    std::thread Interrupter([&] {
      while (!Done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        VM->interrupt();
      }
    });
    std::string E = std::string(F) == "hold_loop" ? errorOf(*VM, F, T, 0)
                                                  : errorOf(*VM, F, 0);
    Done = true;
    Interrupter.join();
    VM->clearInterrupt();
    EXPECT_NE(E.find("InterruptedError: the call was interrupted"),
              std::string::npos)
        << E;
    // Nothing of the interrupted call is left holding the tensor.
    EXPECT_EQ(T.useCount(), 1u) << F;
    // The VM stays usable.
    EXPECT_EQ(VM->call("loop", 100).cast<int64_t>(), 4950) << F;
  }
}

TEST_P(LimitsTest, PendingInterruptStopsTheNextCall) {
  auto VM = makeVM(GetParam());
  VM->interrupt();
  EXPECT_EQ(kindOf(*VM, "loop", 10), "InterruptedError");
  EXPECT_EQ(VM->call("loop", 10).cast<int64_t>(), 45);
  VM->interrupt();
  VM->clearInterrupt();
  EXPECT_EQ(VM->call("loop", 10).cast<int64_t>(), 45);
}

TEST_P(LimitsTest, SignalCheckEndsALongCall) {
  // Python's Ctrl-C: the check runs every kDeadlineCheckSteps steps, in
  // every tier, and the error it raises ends the call.
  static std::atomic<int> Checks;
  Checks = 0;
  setSignalCheck([]() noexcept {
    if (++Checks < 5)
      return 0;
    VMJITErrorSetRaisedFromCStr("KeyboardInterrupt", "stop");
    return -1;
  });
  auto VM = makeVM(GetParam());
  std::string E = errorOf(*VM, "forever", 0);
  setSignalCheck(nullptr);
  EXPECT_NE(E.find("KeyboardInterrupt: stop"), std::string::npos) << E;
  EXPECT_EQ(Checks.load(), 5);
  EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55); // no check now
}

TEST_P(LimitsTest, RecursionLimit) {
  auto VM = makeVM(GetParam());
  VM->setMaxCallDepth(100);
  std::string E = errorOf(*VM, "deep", 0);
  EXPECT_NE(E.find("RecursionError: maximum call depth of 100 exceeded"),
            std::string::npos)
      << E.substr(0, 200);
  EXPECT_EQ(VM->call("fib", 12).cast<int64_t>(), 144);
}

TEST_P(LimitsTest, RegisterStackLimit) {
  // Each frame of `down` has 4 registers: 10 frames fit in 40, in every
  // tier (native frames take their registers from the same stack).
  VMOptions VO;
  VO.MaxStackRegisters = 40;
  auto Interp = makeVMWith(ExecMode::Bytecode, VO);
  auto VM = makeVMWith(GetParam(), VO);
  EXPECT_EQ(VM->call("down", 9).cast<int64_t>(), 0);
  std::string E = errorOf(*VM, "down", 10);
  EXPECT_NE(E.find("RecursionError: the register stack is full: a frame of 4 "
                   "registers on top of 40 is over the limit of 40"),
            std::string::npos)
      << E;
  EXPECT_EQ(E, errorOf(*Interp, "down", 10));
  EXPECT_EQ(VM->call("down", 9).cast<int64_t>(), 0);
}

TEST_P(LimitsTest, NoReferencesSurviveAnErrorInAnyTier) {
  auto Interp = makeVM(ExecMode::Bytecode);
  auto VM = makeVM(GetParam());
  Tensor T = Tensor::empty({8}, DLDataType{kDLFloat, 32, 1});
  // Division by zero, an index out of range, a bad `if` condition, a
  // kernel's shape error, an arity error: each with the tensor held in
  // registers and tuples.
  struct Case {
    const char *F;
    int64_t X;
  } Cases[] = {{"hold", 0}, {"hold", 5}, {"badif", 1}, {"kernel_error", 1}};
  for (int Round = 0; Round < 3; ++Round) { // tiered: interpreter, then native
    for (const Case &C : Cases) {
      std::string Want = errorOf(*Interp, C.F, T, C.X);
      EXPECT_NE(Want, "no error");
      EXPECT_EQ(errorOf(*VM, C.F, T, C.X), Want) << C.F << " " << C.X;
      EXPECT_EQ(T.useCount(), 1u) << C.F << " " << C.X;
    }
    EXPECT_EQ(kindOf(*VM, "hold", T), "TypeError"); // arity
    EXPECT_EQ(T.useCount(), 1u);
    EXPECT_TRUE(VM->call("hold", T, 1).as<Tensor>().has_value());
    EXPECT_EQ(T.useCount(), 1u);
    EXPECT_EQ(VM->call("fib", 15).cast<int64_t>(), 610);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, LimitsTest,
                         ::testing::ValuesIn(kAllExecModes),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param));
                         });
