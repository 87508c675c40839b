// Tests the JIT tier through VMs: compiled and tiered modes agree with the
// interpreter (results and errors), tier-up swaps pool entries, on-stack
// replacement moves a running loop into native code, concurrent callers
// during swaps, the object cache, and the fallback when a compile fails.
#include "CallErrors.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/host_info.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/library.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <pthread.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <thread>
#include <unistd.h>

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
  for (ExecMode M : kAllExecModes) {
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

TEST(TierTest, CompiledModeKeepsLargeFunctionsAtTierOne) {
  // 300 instructions: past the size where tier 2's code measured slower
  // than tier 1's (docs/jit.md), so compiled mode gives it tier-1 code.
  std::string Text = ".func big(x)\n";
  for (int I = 0; I < 300; ++I)
    Text += "  %x = call scalar.add(%x, 1)\n";
  Text += "  ret %x\n.end\n.func small(x)\n  %y = call big(%x)\n"
          "  ret %y\n.end\n";
  auto Exe = assemble(Text, "big.vmasm");
  for (bool UseBaseline : {true, false}) {
    auto VM = VirtualMachine::create(Exe);
    JITOptions O;
    O.Mode = ExecMode::Compiled;
    O.Background = false;
    O.UseBaseline = UseBaseline;
    enableJIT(*VM, O);
    TierManager *TM = tierManagerOf(*VM);
    ASSERT_NE(TM, nullptr);
    int64_t Big = VM->functionIndex("big"), Small = VM->functionIndex("small");
    EXPECT_TRUE(VM->isNative(Big));
    EXPECT_TRUE(VM->isNative(Small));
    EXPECT_EQ(TM->stats(Small).tier(), 2);
    bool AtTierOne = UseBaseline && baselineAvailable();
    EXPECT_EQ(TM->stats(Big).tier(), AtTierOne ? 1 : 2) << UseBaseline;
    EXPECT_EQ(TM->stats(Big).StaysAtBaseline, AtTierOne) << UseBaseline;
    EXPECT_EQ(VM->call("small", 5).cast<int64_t>(), 305);
  }
}

TEST(TierTest, ErrorsFromNativeFramesMatchTheInterpreter) {
  auto Interp = makeVM(ExecMode::Bytecode);
  for (ExecMode M : {ExecMode::Baseline, ExecMode::Compiled}) {
    auto Native = makeVM(M);
    for (auto [F, X] : {std::pair{"outer", -1}, {"tuple", 1}, {"badif", 1}}) {
      std::string Expected = errorOf(*Interp, F, X);
      EXPECT_NE(Expected, "no error");
      EXPECT_EQ(errorOf(*Native, F, X), Expected) << F;
    }
    EXPECT_EQ(errorOf(*Native, "outer", -1),
              "ValueError: scalar.div: integer division by zero\n"
              "  in function 'inner', instruction 0 (call 'scalar.div') at "
              "tier.vmasm:29:3\n"
              "  in function 'outer', instruction 1 (call 'inner') at "
              "tier.vmasm:34:3");
    // And the VM keeps working.
    EXPECT_EQ(Native->call("outer", 4).cast<int64_t>(), 2);
  }
}

TEST(TierTest, BaselineModeRunsEverythingAtTierOne) {
  if (!baselineAvailable())
    GTEST_SKIP() << "no baseline tier on this target";
  auto VM = makeVM(ExecMode::Baseline);
  TierManager *TM = tierManagerOf(*VM);
  ASSERT_NE(TM, nullptr);
  for (const char *F : {"fib", "sum", "inner", "outer", "tuple", "badif"}) {
    const int64_t K = VM->functionIndex(F);
    EXPECT_TRUE(VM->isNative(K)) << F;
    EXPECT_TRUE(TM->stats(K).Baseline) << F;
  }
  EXPECT_EQ(VM->call("fib", 20).cast<int64_t>(), 6765);
  EXPECT_EQ(VM->call("sum", 100000).cast<int64_t>(), 4999950000);
  // Baseline mode never moves on to tier 2, however hot.
  for (const char *F : {"fib", "sum"})
    EXPECT_FALSE(TM->stats(VM->functionIndex(F)).Requested) << F;
}

TEST(TierTest, OsrIntoBaselineThenIntoTierTwo) {
  if (!baselineAvailable())
    GTEST_SKIP() << "no baseline tier on this target";
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = ExecMode::Tiered;
  O.BaselineThreshold = 5;
  O.Threshold = 1000;
  O.Background = false;
  enableJIT(*VM, O);
  const int64_t Sum = VM->functionIndex("sum");
  // One call: after 5 backward jumps on the interpreter the frame moves
  // into baseline code, which counts 995 more and, with tier 2 compiled
  // (synchronously here), moves the frame on into tier 2.
  EXPECT_EQ(VM->call("sum", 100000).cast<int64_t>(), 4999950000);
  FunctionJITStats S = tierManagerOf(*VM)->stats(Sum);
  EXPECT_EQ(VM->callCount(Sum), 1u);
  EXPECT_EQ(VM->backEdgeCount(Sum), 5u);
  EXPECT_EQ(VM->osrCount(Sum), 1u);
  EXPECT_TRUE(S.Baseline);
  EXPECT_TRUE(S.Compiled);
  EXPECT_EQ(S.Tier2OsrEntries, 1u);
  // Later calls enter tier 2 directly.
  EXPECT_EQ(VM->call("sum", 10).cast<int64_t>(), 45);
  EXPECT_EQ(tierManagerOf(*VM)->stats(Sum).Tier2OsrEntries, 1u);
}

TEST(TierTest, TieredCallsClimbTheTiers) {
  if (!baselineAvailable())
    GTEST_SKIP() << "no baseline tier on this target";
  auto VM = VirtualMachine::create(program());
  JITOptions O;
  O.Mode = ExecMode::Tiered;
  O.BaselineThreshold = 2;
  O.Threshold = 10;
  O.Background = false;
  enableJIT(*VM, O);
  TierManager *TM = tierManagerOf(*VM);
  const int64_t Outer = VM->functionIndex("outer");
  auto Tier = [&] { return VM->isNative(Outer) ? TM->stats(Outer).tier() : 0; };
  std::vector<int> Seen;
  for (int I = 0; I < 12; ++I) {
    EXPECT_EQ(VM->call("outer", 4).cast<int64_t>(), 2);
    Seen.push_back(Tier());
  }
  // Interpreter for the first call; baseline from the second (the
  // threshold's call itself runs there); tier 2 once 10 calls were
  // counted, 2 by the interpreter and 8 by baseline code.
  EXPECT_THAT(Seen, ElementsAre(0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2));
}

TEST(TierTest, EnableJITAgainAndBackToBytecode) {
  // Each switch sends pool entries back to the interpreter before the old
  // code can go away (ASan catches a call into freed code).
  auto VM = VirtualMachine::create(program());
  std::optional<Function> Closure;
  for (ExecMode M : {ExecMode::Compiled, ExecMode::Baseline, ExecMode::Tiered,
                     ExecMode::Compiled, ExecMode::Bytecode}) {
    JITOptions O;
    O.Mode = M;
    O.Threshold = 1;
    O.Background = false;
    if (M != ExecMode::Baseline || baselineAvailable())
      enableJIT(*VM, O);
    for (int I = 0; I < 3; ++I)
      EXPECT_EQ(VM->call("fib", 15).cast<int64_t>(), 610);
    EXPECT_EQ(VM->call("outer", 4).cast<int64_t>(), 2);
    // A function value taken now may outlive this mode's code.
    if (!Closure)
      Closure = VM->getFunction("fib");
  }
  const int64_t Fib = VM->functionIndex("fib");
  EXPECT_FALSE(VM->isNative(Fib));
  EXPECT_EQ(tierManagerOf(*VM), nullptr);
  EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
  EXPECT_EQ((*Closure)(12).cast<int64_t>(), 144);
}

TEST(TierTest, DeepNativeRecursionOnASmallStack) {
  // MaxCallDepth far above what a 256 KiB stack holds in native frames:
  // where the stack runs low the calls go on in the interpreter, so every
  // tier stops where the interpreter does, never in an overflow.
  auto Prog = assemble(R"(
.func down(n)
  %m = call scalar.add(%n, 1)
  %r = call down(%m)
  ret %r
.end
)",
                       "down.vmasm");
  for (ExecMode M : kAllExecModes) {
    if (M == ExecMode::Baseline && !baselineAvailable())
      continue;
    std::string Kind, Message;
    auto Body = [&] {
      auto VM = VirtualMachine::create(Prog);
      JITOptions O;
      O.Mode = M;
      O.Threshold = 1;
      O.Background = false;
      enableJIT(*VM, O);
      VM->setMaxCallDepth(50000);
      try {
        VM->call("down", 0);
      } catch (const Error &E) {
        Kind = E.kind();
        Message = E.message();
      }
    };
    pthread_attr_t Attr;
    pthread_attr_init(&Attr);
    pthread_attr_setstacksize(&Attr, 256 * 1024);
    pthread_t T;
    ASSERT_EQ(pthread_create(
                  &T, &Attr,
                  [](void *P) -> void * {
                    (*static_cast<decltype(Body) *>(P))();
                    return nullptr;
                  },
                  &Body),
              0);
    pthread_join(T, nullptr);
    pthread_attr_destroy(&Attr);
    EXPECT_EQ(Kind, "RecursionError") << execModeName(M);
    EXPECT_EQ(Message, "maximum call depth of 50000 exceeded")
        << execModeName(M);
  }
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
    EXPECT_EQ(E.frameCount(), 50u);
    EXPECT_EQ(E.frames().size(), 4u); // three and "[repeated 47 more times]"
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

TEST(TierTest, TierOneRunsWhileTierTwoCompiles) {
  if (!baselineAvailable())
    GTEST_SKIP() << "no baseline tier on this target";
  // Threshold 1: the interpreter requests tier 2 at the first call. The
  // function gets tier-1 code at that request, so it does not stay on the
  // interpreter while the background compile runs.
  auto VM = makeVM(ExecMode::Tiered, /*Threshold=*/1, /*Background=*/true);
  const int64_t Fib = VM->functionIndex("fib");
  EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
  TierManager *TM = tierManagerOf(*VM);
  EXPECT_TRUE(TM->stats(Fib).Baseline);
  EXPECT_TRUE(VM->isNative(Fib));
  TM->drain();
  EXPECT_TRUE(TM->stats(Fib).Compiled);
  EXPECT_EQ(VM->call("fib", 12).cast<int64_t>(), 144);
}

namespace {
/// k.inc: its argument plus one (what the slot's fallback and the entry
/// it publishes both compute).
int kernelInc(void *, const VMJITAny *A, int32_t N, VMJITAny *R) noexcept {
  if (N != 1 || A[0].type_index != kVMJITInt) {
    VMJITErrorSetRaisedFromCStr("TypeError", "k.inc takes one int");
    return -1;
  }
  R->type_index = kVMJITInt;
  R->v_int64 = A[0].v_int64 + 1;
  return 0;
}
} // namespace

TEST(TierTest, KernelsPublishedWhileThreadsCallAreTakenUp) {
  // A kernel slot published, and the managers told, while VMs on four
  // threads run tiered code that calls it, tier-2 compiles in the
  // background: every result right and the function compiled in the end,
  // whichever way the rebinding met the compiles (ThreadSanitizer runs
  // this; StackTensorsTest checks what the rebinding compiles, in every
  // mode).
  registerVMBuiltins();
  auto Exe = assemble(".func main(x)\n"
                      "  %y = call k.inc(%x)\n"
                      "  %z = call k.inc(%y)\n"
                      "  ret %z\n"
                      ".end\n",
                      "late.vmasm");
  auto Slot = makeObject<KernelSlotObj>(
      "k.inc", Function::fromSafeCall(&kernelInc, "k.inc"),
      KernelSlotObj::Entry::AlignmentChecking);
  KernelSlotObj *Raw = Slot.get();
  std::map<std::string, Function, std::less<>> Fns;
  Fns.emplace("k.inc", Function(ObjectPtr<Object>(std::move(Slot))));
  auto Lib = KernelLibrary::fromFunctions("late", std::move(Fns), {}, nullptr);
  std::atomic<int> Wrong{0}, Started{0};
  std::vector<std::unique_ptr<VirtualMachine>> VMs(4);
  std::vector<std::thread> Threads;
  for (int T = 0; T < 4; ++T)
    Threads.emplace_back([&, T] {
      VMOptions VO;
      VO.Libraries = {Lib};
      auto VM = VirtualMachine::create(Exe, VO);
      JITOptions O;
      O.Mode = ExecMode::Tiered;
      O.Threshold = 5;
      enableJIT(*VM, O);
      for (int64_t I = 0; I < 3000; ++I) {
        if (I == 100)
          ++Started;
        if (VM->call("main", I).cast<int64_t>() != I + 2)
          ++Wrong;
      }
      VMs[static_cast<size_t>(T)] = std::move(VM);
    });
  while (Started.load() < 2)
    std::this_thread::yield();
  Raw->publish(&kernelInc, nullptr);
  rebindPublishedKernels();
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Wrong.load(), 0);
  EXPECT_NE(Raw->compiled(), nullptr);
  // Every request made (the calls made them), the compiles they queued
  // are waited for (a drain on one thread cannot wait for a request
  // another thread is still making).
  for (const std::unique_ptr<VirtualMachine> &VM : VMs) {
    tierManagerOf(*VM)->drain();
    EXPECT_EQ(VM->call("main", 40).cast<int64_t>(), 42);
    EXPECT_TRUE(tierManagerOf(*VM)->stats(0).Compiled);
  }
}

TEST(TierTest, DrainReturnsAfterTheWorkersAreStopped) {
  // What Python's exit hook does (stopBackgroundCompiles) leaves functions
  // queued: a later drain() returns instead of waiting for them. In a child
  // process (stopping is for the whole process), killed by an alarm if it
  // hangs.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(20);
        auto VM = makeVM(ExecMode::Tiered, /*Threshold=*/1,
                         /*Background=*/true);
        TierManager *TM = tierManagerOf(*VM);
        for (const char *F : {"inner", "outer", "sum"})
          for (int I = 0; I < 3; ++I)
            VM->call(F, 2);
        stopBackgroundCompiles();
        TM->drain();
        // Calls still run, at whatever tier each function reached.
        std::_Exit(VM->call("fib", 10).cast<int64_t>() == 55 ? 7 : 3);
      },
      ::testing::ExitedWithCode(7), "");
}

TEST(TierTest, CompiledModeCompilesWhatATieredVMRunsAtTierOne) {
  if (!baselineAvailable())
    GTEST_SKIP() << "no baseline tier on this target";
  // Same options but the mode: the two VMs share a manager.
  auto Tiered = makeVM(ExecMode::Tiered, /*Threshold=*/1000);
  for (int I = 0; I < 3; ++I)
    EXPECT_EQ(Tiered->call("fib", 5).cast<int64_t>(), 5);
  TierManager *TM = tierManagerOf(*Tiered);
  const int64_t Fib = Tiered->functionIndex("fib");
  ASSERT_TRUE(TM->stats(Fib).Baseline);
  ASSERT_FALSE(TM->stats(Fib).Compiled);
  auto Compiled = makeVM(ExecMode::Compiled, /*Threshold=*/1000);
  EXPECT_EQ(tierManagerOf(*Compiled), TM);
  // Compiled mode means tier 2 where tier 2 wins: fib is compiled now.
  EXPECT_TRUE(TM->stats(Fib).Compiled);
  EXPECT_EQ(Compiled->call("fib", 20).cast<int64_t>(), 6765);
}

TEST(TierTest, AttachingTheJITAgainAndAgainKeepsMemoryBounded) {
  // Each enableJIT swaps in new native-code entries; those of the old
  // controller go once nothing refers to them (between calls).
  auto VM = makeVM(ExecMode::Compiled);
  EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
  const size_t Kept = VM->keptPoolEntries();
  for (int I = 0; I < 200; ++I) {
    JITOptions O;
    O.Mode = ExecMode::Compiled;
    O.Threshold = 1; // makeVM's: the same manager, its code reused
    enableJIT(*VM, O);
    EXPECT_EQ(VM->call("fib", 10).cast<int64_t>(), 55);
  }
  EXPECT_LE(VM->keptPoolEntries(), 2 * Kept);
  // An entry a value still holds is kept alive, and still calls.
  Function Held = VM->getFunction("fib");
  enableJIT(*VM, JITOptions{});
  EXPECT_EQ(Held(12).cast<int64_t>(), 144);
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
  // Every key names this build of the JIT: another build's code is never
  // loaded (its files have other keys).
  const std::string &Build = jitBuildIdentity();
  EXPECT_FALSE(Build.empty());
  int Files = 0;
  for (const auto &F : std::filesystem::directory_iterator(Dir)) {
    std::ifstream In(F.path(), std::ios::binary);
    std::string Bytes((std::istreambuf_iterator<char>(In)),
                      std::istreambuf_iterator<char>());
    // (CodeKey's encoding of record("vmjit tier 2", Build).)
    EXPECT_NE(
        Bytes.find(",s" + std::to_string(Build.size()) + ":" + Build + ";"),
        std::string::npos)
        << F.path();
    ++Files;
  }
  EXPECT_GT(Files, 0);
  std::filesystem::remove_all(Dir);
}

TEST(TierTest, InstrumentSeesEveryCallInEveryMode) {
  for (ExecMode M : kAllExecModes) {
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

// A function registered in place of a standard one (here scalar.add,
// which both JIT tiers inline) is called by every tier: the JIT inlines
// only the standard function itself.
TEST(TierTest, ReplacedStandardFunctionIsCalledInEveryMode) {
  registerVMBuiltins();
  std::atomic<int> Calls{0};
  Registry::global().addTyped(
      "scalar.add",
      [&](int64_t A, int64_t B) {
        ++Calls;
        return A + B;
      },
      /*AllowOverride=*/true);
  struct Restore {
    ~Restore() {
      Registry::global().add("scalar.add", *standardFunction("scalar.add"),
                             /*AllowOverride=*/true);
    }
  } RestoreStandard;
  for (ExecMode M : kAllExecModes) {
    auto VM = makeVM(M);
    for (int I = 0; I < 3; ++I) { // tiered: the first call interprets
      Calls = 0;
      EXPECT_EQ(VM->call("sum", 10).cast<int64_t>(), 45);
      EXPECT_EQ(Calls.load(), 20) << execModeName(M) << " call " << I;
    }
  }
}

namespace {

// vm.builtin.null_value after the last use of a value, as TVM's compiler
// emits it: each iteration takes a reference to `Held` (tiertest.hold),
// reads its use count, clears the register, reads the count again.
const char *kNullValueProgram = R"(
.func clear(n)
  %i = call vm.builtin.copy(0)
  %h = call vm.builtin.copy(0)
  %before = call vm.builtin.copy(0)
  %after = call vm.builtin.copy(0)
loop:
  %c = call scalar.lt(%i, %n)
  if %c else done
  %h = call tiertest.hold()
  %before = call tiertest.uses()
  %h = call vm.builtin.null_value()
  call vm.builtin.null_value()
  %after = call tiertest.uses()
  %i = call scalar.add(%i, 1)
  goto loop
done:
  %r = call vm.builtin.make_tuple(%h, %before, %after)
  ret %r
.end
)";

Tensor &heldTensor() {
  static Tensor T = Tensor::empty({2}, dtype::Float32);
  return T;
}

std::unique_ptr<VirtualMachine> makeNullValueVM(ExecMode Mode) {
  registerVMBuiltins();
  Registry::global().addTyped("tiertest.hold", [] { return heldTensor(); },
                              /*AllowOverride=*/true);
  Registry::global().addTyped(
      "tiertest.uses",
      [] { return static_cast<int64_t>(heldTensor().useCount()); },
      /*AllowOverride=*/true);
  static std::shared_ptr<Executable> Exe =
      assemble(kNullValueProgram, "null_value.vmasm");
  auto VM = VirtualMachine::create(Exe);
  JITOptions O;
  O.Mode = Mode;
  O.Threshold = 1;
  enableJIT(*VM, O);
  return VM;
}

/// The result of clear(n) as text.
std::string clearResult(VirtualMachine &VM, int64_t N) {
  Array R = VM.call("clear", N).cast<Array>();
  std::string S;
  for (size_t I = 0; I < R.size(); ++I)
    S += (I ? "," : "") + (R[I].isNone() ? std::string("None")
                                         : std::to_string(R[I].cast<int64_t>()));
  return S;
}

} // namespace

// The standard null_value releases the register's value (no call in any
// tier); the interpreter still counts the calls it stands for.
TEST(TierTest, NullValueReleasesTheRegisterInEveryMode) {
  for (ExecMode M : kAllExecModes) {
    auto VM = makeNullValueVM(M);
    const int64_t Null = *VM->executable().findFunction("vm.builtin.null_value");
    for (int I = 0; I < 3; ++I) { // tiered: the first call interprets
      EXPECT_EQ(clearResult(*VM, 4), "None,2,1")
          << execModeName(M) << " call " << I;
      EXPECT_EQ(heldTensor().useCount(), 1u);
    }
    if (M == ExecMode::Bytecode) {
      EXPECT_EQ(VM->callCount(Null), 3u * 2 * 4);
    }
  }
}

// A null_value registered in place of the standard one is called by every
// tier, and its result stored: only the standard function is a register
// clear.
TEST(TierTest, ReplacedNullValueIsCalledInEveryMode) {
  registerVMBuiltins();
  std::atomic<int> Calls{0};
  Registry::global().addTyped(
      "vm.builtin.null_value",
      [&] {
        ++Calls;
        return int64_t(7);
      },
      /*AllowOverride=*/true);
  struct Restore {
    ~Restore() {
      Registry::global().add("vm.builtin.null_value",
                             *standardFunction("vm.builtin.null_value"),
                             /*AllowOverride=*/true);
    }
  } RestoreStandard;
  for (ExecMode M : kAllExecModes) {
    auto VM = makeNullValueVM(M);
    for (int I = 0; I < 3; ++I) { // tiered: the first call interprets
      Calls = 0;
      EXPECT_EQ(clearResult(*VM, 4), "7,2,1")
          << execModeName(M) << " call " << I;
      EXPECT_EQ(Calls.load(), 8) << execModeName(M) << " call " << I;
    }
  }
}
