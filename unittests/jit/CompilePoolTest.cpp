// Tests the process's compile pool (jit/compile_pool.cpp) and what it gives
// the tier manager: a bounded number of compile threads however many
// executables are hot, and a running tier-2 compile that is abandoned,
// not waited for, when its VM goes away or the process exits; and a
// registry of shared managers that forgets the expired ones.
#include "../ProcessThreads.h"
#include "compile_pool.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <thread>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::jit;
using Clock = std::chrono::steady_clock;

namespace {

/// A VM alive when its process exits, reachable from here so that
/// LeakSanitizer does not call it a leak (volatile: the store must stay,
/// though nothing reads it).
VirtualMachine *volatile KeptAtExit = nullptr;

double secondsSince(Clock::time_point Start) {
  return std::chrono::duration<double>(Clock::now() - Start).count();
}

const char *kSmall = R"(
.func twice(x)
  %y = call scalar.add(%x, %x)
  ret %y
.end
)";

/// One straight-line function of `N` dependent additions: its tier-2
/// compile takes seconds here (lowering, the IR passes and code generation
/// each a third).
std::string bigProgram(int N) {
  std::string S = ".func big(a)\n  %s0 = call scalar.add(%a, 0)\n";
  for (int K = 1; K < N; ++K)
    S += fmt::format("  %s{} = call scalar.add(%s{}, 1)\n", K, K - 1);
  return S + fmt::format("  ret %s{}\n.end\n", N - 1);
}

/// Tiered, tier 2 on the first call, without the baseline tier (which would
/// take a function this large instead), compiles in the background.
std::unique_ptr<VirtualMachine> bigVM() {
  auto VM = VirtualMachine::create(assemble(bigProgram(3000), "big.vmasm"));
  JITOptions O;
  O.Mode = ExecMode::Tiered;
  O.Threshold = 1;
  O.BaselineThreshold = 1;
  O.UseBaseline = false;
  O.NoCache = true;
  enableJIT(*VM, O);
  return VM;
}

} // namespace

TEST(CompilePoolTest, ThreadsAreBoundedAcrossExecutables) {
  // Counted from the first tiered VM on: it starts the pool's first thread
  // (and a sanitizer's runtime may start one of its own with it).
  int Before = -1;
  std::vector<std::unique_ptr<VirtualMachine>> VMs;
  // 16 executables: 16 managers (before the pool: 16 compile threads).
  for (int K = 0; K < 16; ++K) {
    auto VM = VirtualMachine::create(assemble(kSmall, "small.vmasm"));
    JITOptions O;
    O.Mode = ExecMode::Tiered;
    O.Threshold = 1;
    O.BaselineThreshold = 1;
    O.NoCache = true;
    enableJIT(*VM, O);
    if (K == 0)
      Before = test::processThreadCount();
    EXPECT_EQ(VM->call("twice", K).cast<int64_t>(), 2 * K);
    VMs.push_back(std::move(VM));
  }
  for (auto &VM : VMs) {
    tierManagerOf(*VM)->drain();
    EXPECT_EQ(VM->call("twice", 4).cast<int64_t>(), 8);
    EXPECT_TRUE(VM->isNative(VM->functionIndex("twice")));
  }
  EXPECT_LE(test::processThreadCount(), Before + compileThreads() - 1);
}

TEST(CompilePoolTest, CancelStopsTheOwnersRunningJobAndDropsItsQueue) {
  int Owner = 0, Other = 0;
  // As many jobs as the pool may have threads, each running until it is
  // cancelled: every thread is taken, so the jobs queued after them stay
  // queued until the cancel drops them.
  const int Threads = compileThreads();
  std::atomic<int> Started{0}, SawCancel{0}, Ran{0};
  for (int K = 0; K < Threads; ++K)
    ASSERT_TRUE(submitCompile(&Owner, [&](const CancelFlag &Cancel) {
      ++Started;
      while (!Cancel.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++SawCancel;
    }));
  for (int K = 0; K < 3; ++K)
    submitCompile(&Owner, [&](const CancelFlag &) { ++Ran; });
  while (Started.load() < Threads)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cancelCompiles(&Owner);
  EXPECT_EQ(SawCancel.load(), Threads);
  EXPECT_EQ(Ran.load(), 0);
  // Later jobs of the owner, and other owners' jobs, run normally.
  std::atomic<int> Later{0};
  submitCompile(&Owner, [&](const CancelFlag &C) { Later += !C.load(); });
  submitCompile(&Other, [&](const CancelFlag &C) { Later += !C.load(); });
  waitForCompiles(&Owner);
  waitForCompiles(&Other);
  EXPECT_EQ(Later.load(), 2);
}

TEST(CompilePoolTest, DestroyingTheVMAbandonsItsCompile) {
  auto VM = bigVM();
  EXPECT_EQ(VM->call("big", 1).cast<int64_t>(), 3000); // queues tier 2
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto Start = Clock::now();
  VM.reset(); // the manager goes with its only VM
  EXPECT_LT(secondsSince(Start), 1.0);
}

TEST(CompilePoolTest, ExitAbandonsARunningCompile) {
  // In a child process (the end of a process is what is tested). Before the
  // pool, exit waited for the whole compile (2 s and more here).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto Start = Clock::now();
  EXPECT_EXIT(
      {
        auto VM = bigVM();
        const bool Right = VM->call("big", 1).cast<int64_t>() == 3000;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        KeptAtExit = VM.release(); // alive at exit, as in a Python program
        std::exit(Right ? 7 : 3);
      },
      ::testing::ExitedWithCode(7), "");
  EXPECT_LT(secondsSince(Start), 1.5);
}

TEST(CompilePoolTest, TheManagerRegistryForgetsExpiredManagers) {
  // 50 executables come and go: the registry keeps no key of theirs.
  for (int K = 0; K < 50; ++K) {
    auto VM = VirtualMachine::create(assemble(kSmall, "small.vmasm"));
    enableJIT(*VM, JITOptions{});
  }
  auto VM = VirtualMachine::create(assemble(kSmall, "small.vmasm"));
  enableJIT(*VM, JITOptions{});
  EXPECT_LE(tierManagerRegistrySize(), 2u);
}
