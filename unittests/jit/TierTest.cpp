// Tests the JIT tier through VMs: compiled and tiered modes agree with the
// interpreter (results and errors), tier-up swaps pool entries, on-stack
// replacement moves a running loop into native code, concurrent callers
// during swaps, the object cache, and the fallback when a compile fails.
#include "CallErrors.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <thread>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using vmjit::jittest::errorOf;
using ::testing::ElementsAre;

namespace {

const char *kProgram = R"(
.const $half = float 0.5
.const $twohalf = float 2.5
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
.func sum(n)
  %i = call vm.builtin.copy(0)
  %s = call vm.builtin.copy(0)
loop:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %s = call scalar.add(%s, %i)
  %i = call scalar.add(%i, 1)
  goto loop
done:
  ret %s
.end
.func inner(x)
  %y = call scalar.div(10, %x)
  ret %y
.end
.func outer(x)
  %a = call scalar.add(%x, 1)
  %r = call inner(%a)
  ret %r
.end
.func tuple(x)
  %t = call vm.builtin.make_tuple(%x, $twohalf, 7)
  %e = call vm.builtin.tuple_getitem(%t, 1)
  %f = call vm.builtin.tuple_getitem(%t, 3)
  ret %f
.end
.func badif(x)
  %f = call scalar.add(%x, $half)
  if %f else out
out:
  ret %f
.end
)";

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe = assemble(kProgram, "tier.vmasm");
  return Exe;
}

std::unique_ptr<VirtualMachine> makeVM(ExecMode Mode, int64_t Threshold = 1,
                                       bool Background = false) {
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = Mode;
  O.Threshold = Threshold;
  O.Background = Background;
  enableJIT(*VM, O);
  return VM;
}

} // namespace

TEST(TierTest, ModesAgreeOnResults) {
  for (ExecMode M : {ExecMode::Bytecode, ExecMode::Compiled, ExecMode::Tiered}) {
    auto VM = makeVM(M);
    for (int I = 0; I < 3; ++I) { // tiered: the first call interprets
      EXPECT_EQ(VM->call("fib", 15).cast<int64_t>(), 610);
      EXPECT_EQ(VM->call("sum", 1000).cast<int64_t>(), 499500);
    }
  }
}

TEST(TierTest, CompiledModeRunsEverythingNatively) {
  auto VM = makeVM(ExecMode::Compiled);
  for (const char *F : {"fib", "sum", "inner", "outer", "tuple", "badif"})
    EXPECT_TRUE(VM->isNative(VM->functionIndex(F))) << F;
  TierManager *TM = tierManagerOf(*VM);
  ASSERT_NE(TM, nullptr);
  EXPECT_TRUE(TM->stats(VM->functionIndex("fib")).Compiled);
}

TEST(TierTest, ErrorsFromNativeFramesMatchTheInterpreter) {
  auto Interp = makeVM(ExecMode::Bytecode);
  auto Native = makeVM(ExecMode::Compiled);
  for (auto [F, X] : {std::pair{"outer", -1}, {"tuple", 1}, {"badif", 1}}) {
    std::string Expected = errorOf(*Interp, F, X);
    EXPECT_NE(Expected, "no error");
    EXPECT_EQ(errorOf(*Native, F, X), Expected) << F;
  }
  EXPECT_EQ(errorOf(*Native, "outer", -1),
            "ValueError: scalar.div: integer division by zero\n"
            "  in function 'inner', instruction 0 (call 'scalar.div')\n"
            "  in function 'outer', instruction 1 (call 'inner')");
  // And the VM keeps working.
  EXPECT_EQ(Native->call("outer", 4).cast<int64_t>(), 2);
}

TEST(TierTest, RecursionLimitInNativeCode) {
  auto Prog = assemble(R"(
.func down(n)
  %m = call scalar.add(%n, 1)
  %r = call down(%m)
  ret %r
.end
)",
                       "down.vmasm");
  auto VM = VirtualMachine::create(Prog);
  JITOptions O;
  O.Mode = ExecMode::Compiled;
  enableJIT(*VM, O);
  VM->setMaxCallDepth(50);
  try {
    VM->call("down", 0);
    FAIL() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "RecursionError");
    EXPECT_EQ(E.message(), "maximum call depth of 50 exceeded");
    EXPECT_EQ(E.frames().size(), 50u);
  }
}

TEST(TierTest, TieredSwapsAfterTheThreshold) {
  auto VM = makeVM(ExecMode::Tiered, /*Threshold=*/3);
  int64_t Fib = VM->functionIndex("fib");
  EXPECT_EQ(VM->call("fib", 1).cast<int64_t>(), 1);
  EXPECT_FALSE(VM->isNative(Fib));
  // The 3rd call requests the compile (synchronous here); the next call
  // adopts the code.
  VM->call("fib", 1);
  VM->call("fib", 1);
  EXPECT_TRUE(tierManagerOf(*VM)->stats(Fib).Compiled);
  EXPECT_EQ(VM->call("fib", 20).cast<int64_t>(), 6765);
  EXPECT_TRUE(VM->isNative(Fib));
}

TEST(TierTest, OnStackReplacementOfALongLoop) {
  auto VM = makeVM(ExecMode::Tiered, /*Threshold=*/50);
  int64_t Sum = VM->functionIndex("sum");
  // Called once: the loop's backward jumps make it hot, the frame moves
  // into native code mid-loop.
  EXPECT_EQ(VM->call("sum", 100000).cast<int64_t>(), 4999950000);
  EXPECT_EQ(VM->callCount(Sum), 1u);
  EXPECT_EQ(VM->osrCount(Sum), 1u);
  EXPECT_LT(VM->backEdgeCount(Sum), 100u);
}

TEST(TierTest, OsrWithABackgroundCompile) {
  auto VM = makeVM(ExecMode::Tiered, /*Threshold=*/10, /*Background=*/true);
  int64_t Sum = VM->functionIndex("sum");
  // The interpreter does not wait: the result is right whether or not the
  // compile finishes while the loop runs (on a loaded machine it may not),
  // and a frame enters native code at most once.
  EXPECT_EQ(VM->call("sum", 3000000).cast<int64_t>(), 4499998500000);
  EXPECT_LE(VM->osrCount(Sum), 1u);
  tierManagerOf(*VM)->drain();
  EXPECT_EQ(VM->call("sum", 10).cast<int64_t>(), 45);
  EXPECT_TRUE(VM->isNative(Sum));
}

TEST(TierTest, SwapWhileSeveralThreadsCall) {
  // One executable, one VM per thread, one shared tier manager; the swap
  // happens while the threads run.
  std::vector<std::thread> Threads;
  std::atomic<int> Wrong{0};
  for (int T = 0; T < 4; ++T)
    Threads.emplace_back([&] {
      auto VM = makeVM(ExecMode::Tiered, /*Threshold=*/20, /*Background=*/true);
      for (int I = 0; I < 400; ++I)
        if (VM->call("fib", 12).cast<int64_t>() != 144)
          ++Wrong;
      if (TierManager *TM = tierManagerOf(*VM))
        TM->drain();
      if (VM->call("fib", 12).cast<int64_t>() != 144)
        ++Wrong;
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Wrong.load(), 0);
}

TEST(TierTest, VMsShareOneManager) {
  auto A = makeVM(ExecMode::Compiled);
  auto B = makeVM(ExecMode::Compiled);
  EXPECT_EQ(tierManagerOf(*A), tierManagerOf(*B));
}

TEST(TierTest, CompileFailureFallsBackToTheInterpreter) {
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = ExecMode::Compiled;
  O.FailCompilesForTesting = true;
  enableJIT(*VM, O);
  int64_t Fib = VM->functionIndex("fib");
  EXPECT_FALSE(VM->isNative(Fib));
  EXPECT_TRUE(tierManagerOf(*VM)->stats(Fib).Failed);
  EXPECT_EQ(VM->call("fib", 15).cast<int64_t>(), 610);
}

TEST(TierTest, ObjectCacheSecondRunCompilesNothing) {
  std::string Dir = (std::filesystem::temp_directory_path() /
                     ("vmjit-tier-cache-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(Dir);
  auto Run = [&](int OptLevel) {
    // A fresh executable each time: nothing shared in memory.
    auto Exe = assemble(kProgram, "tier.vmasm");
    auto VM = VirtualMachine::create(Exe);
    JITOptions O;
    O.Mode = ExecMode::Compiled;
    O.CacheDir = Dir;
    O.OptLevel = OptLevel;
    enableJIT(*VM, O);
    EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
    return tierManagerOf(*VM)->stats(VM->functionIndex("fib")).CacheHit;
  };
  EXPECT_FALSE(Run(2));
  EXPECT_TRUE(Run(2));
  EXPECT_FALSE(Run(3)); // other options: another key
  std::filesystem::remove_all(Dir);
}

TEST(TierTest, InstrumentSeesEveryCallInEveryMode) {
  for (ExecMode M : {ExecMode::Bytecode, ExecMode::Compiled}) {
    auto VM = makeVM(M);
    std::vector<std::string> Log;
    VM->setInstrument([&](const CallEvent &E) {
      if (E.Before)
        Log.push_back(std::string(E.CalleeName));
      return InstrumentAction::Continue;
    });
    EXPECT_EQ(VM->call("outer", 4).cast<int64_t>(), 2);
    EXPECT_THAT(Log, ElementsAre("scalar.add", "inner", "scalar.div"));
  }
}
