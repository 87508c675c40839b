//===- NativeStackTest.cpp - JIT code on small, foreign and fiber stacks -===//
//
// Native code recurses on the caller's stack: on a thread with a small
// stack, on a fiber whose stack is on the heap (undeclared, then declared
// with NativeStackScope), and with calls whose arguments alone take tens of
// KiB of it, every mode returns what the interpreter returns. Where native
// code may not run, the call runs on the interpreter; a function with a
// call of more than 4096 arguments never gets native code. Calls that
// re-enter the VM end in a RecursionError near the stack's end.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/tier_manager.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/native_stack.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <functional>
#include <gtest/gtest.h>
#include <pthread.h>
#include <string>
#include <ucontext.h>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

/// main(n) recurses n deep; each frame makes one call of `Width` arguments
/// (16 bytes of native stack each in JIT code). Returns n.
std::shared_ptr<Executable> recursion(int Width) {
  std::string Args = "%n";
  for (int K = 1; K < Width; ++K)
    Args += ", %n";
  return assemble(fmt::format(R"(
.func main(n)
  %c = call scalar.le(%n, 0)
  if %c else more
  ret %n
more:
  %t = call vm.builtin.make_tuple({})
  %m = call scalar.sub(%n, 1)
  %r = call main(%m)
  %s = call scalar.add(%r, 1)
  ret %s
.end
)",
                              Args),
                  "recursion.vmasm");
}

/// Calls main(Depth) three times (the JIT modes reach native code) and
/// returns the last result, or the error's text.
std::string run(ExecMode Mode, const std::shared_ptr<Executable> &Exe,
                int64_t Depth) {
  try {
    auto VM = VirtualMachine::create(Exe);
    jit::JITOptions O;
    O.Mode = Mode;
    O.Threshold = 1;
    O.Background = false;
    jit::enableJIT(*VM, O);
    Any R;
    for (int K = 0; K < 3; ++K)
      R = VM->call("main", Depth);
    return std::to_string(R.cast<int64_t>());
  } catch (const Error &E) {
    return E.format();
  }
}

/// Runs `Body` on a new thread with a stack of `Size` bytes.
void onThreadWithStack(size_t Size, const std::function<void()> &Body) {
  pthread_attr_t Attr;
  ASSERT_EQ(pthread_attr_init(&Attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&Attr, Size), 0);
  pthread_t T;
  auto Start = [](void *P) -> void * {
    (*static_cast<const std::function<void()> *>(P))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&T, &Attr, Start,
                           const_cast<std::function<void()> *>(&Body)),
            0);
  pthread_join(T, nullptr);
  pthread_attr_destroy(&Attr);
}

/// Runs `Body` on a fiber (ucontext) whose stack of `Size` bytes is on the
/// heap; with `Declare`, Body runs under a NativeStackScope naming it.
void onFiber(size_t Size, bool Declare, const std::function<void()> &Body) {
  std::vector<char> Stack(Size);
  static thread_local const std::function<void()> *Current;
  static thread_local std::vector<char> *CurrentStack;
  static thread_local bool CurrentDeclare;
  Current = &Body;
  CurrentStack = &Stack;
  CurrentDeclare = Declare;
  ucontext_t Main, Fiber;
  ASSERT_EQ(getcontext(&Fiber), 0);
  Fiber.uc_stack.ss_sp = Stack.data();
  Fiber.uc_stack.ss_size = Stack.size();
  Fiber.uc_link = &Main;
  makecontext(
      &Fiber,
      [] {
        if (CurrentDeclare) {
          NativeStackScope S(CurrentStack->data(), CurrentStack->size());
          (*Current)();
        } else {
          (*Current)();
        }
      },
      0);
  ASSERT_EQ(swapcontext(&Main, &Fiber), 0);
}

class NativeStackTest : public ::testing::TestWithParam<ExecMode> {};

TEST_P(NativeStackTest, WideFramesOnASmallThreadStack) {
  // 2000 arguments: 32 KiB of native stack per JIT frame, 300 deep on a
  // 1 MiB stack. Deep frames run on the interpreter.
  auto Exe = recursion(2000);
  std::string Got;
  onThreadWithStack(1 << 20, [&] { Got = run(GetParam(), Exe, 300); });
  EXPECT_EQ(Got, "300");
}

TEST_P(NativeStackTest, CallsOverTheArgumentLimitStayOnTheInterpreter) {
  // 5000 arguments (80 KiB): no tier compiles main; tier 2 once reserved
  // the whole area on the stack and overflowed it.
  auto Exe = recursion(5000);
  std::string Got;
  onThreadWithStack(1 << 20, [&] { Got = run(GetParam(), Exe, 100); });
  EXPECT_EQ(Got, "100");
}

TEST_P(NativeStackTest, CallsThatReenterTheVMStopBeforeTheStackEnds) {
  // Each invoke_closure of a bytecode function nests a dispatch loop on
  // the C stack, interpreted or not: on a 512 KiB stack, 4000 of them
  // overflowed it (SIGSEGV) before reaching the depth limit. Now a nested
  // run is refused near the stack's end with a RecursionError.
  auto Exe = assemble(R"(
.func main(n)
  %c = call scalar.lt(%n, 1)
  if %c else more
  ret %n
more:
  %m = call scalar.sub(%n, 1)
  %r = call vm.builtin.invoke_closure(%vm, @main, %m)
  %s = call scalar.add(%r, 1)
  ret %s
.end
)",
                      "reenter.vmasm");
  std::string Deep, Shallow;
  onThreadWithStack(512 << 10, [&] {
    Deep = run(GetParam(), Exe, 4000);
    Shallow = run(GetParam(), Exe, 50);
  });
  EXPECT_NE(Deep.find("RecursionError: maximum call depth exceeded: the "
                      "native stack is exhausted at depth"),
            std::string::npos)
      << Deep;
  EXPECT_EQ(Shallow, "50");
}

TEST_P(NativeStackTest, AFiberOnTheHeapNeedsNoDeclaration) {
  // Off the thread's own stack and undeclared: the JIT modes failed at
  // once ("exhausted at depth 0"), or overflowed a fiber stack mapped
  // above the thread's. Now their calls run on the interpreter.
  auto Exe = recursion(4);
  std::string Got;
  onFiber(512 << 10, /*Declare=*/false,
          [&] { Got = run(GetParam(), Exe, 3000); });
  EXPECT_EQ(Got, "3000");
}

TEST_P(NativeStackTest, ADeclaredFiberStackRunsNativeCodeToItsEnd) {
  auto Exe = recursion(200);
  std::string Got;
  onFiber(512 << 10, /*Declare=*/true,
          [&] { Got = run(GetParam(), Exe, 2000); });
  EXPECT_EQ(Got, "2000");
}

INSTANTIATE_TEST_SUITE_P(Modes, NativeStackTest,
                         ::testing::ValuesIn(kAllExecModes),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param));
                         });

TEST(NativeStackTest, WhereNativeCodeMayRun) {
  EXPECT_TRUE(nativeStackAvailable()); // the test's own thread
  bool Undeclared = true, Declared = false, Reserve = true;
  onFiber(512 << 10, false, [&] { Undeclared = nativeStackAvailable(); });
  onFiber(512 << 10, true, [&] { Declared = nativeStackAvailable(); });
  // A declaration that does not hold the frame is not used.
  std::vector<char> Elsewhere(1 << 20);
  {
    NativeStackScope S(Elsewhere.data(), Elsewhere.size());
    EXPECT_TRUE(nativeStackAvailable());
  }
  onFiber(128 << 10, true, [&] { Reserve = nativeStackAvailable(); });
  EXPECT_FALSE(Undeclared);
  EXPECT_TRUE(Declared);
  EXPECT_FALSE(Reserve) << "a 128 KiB stack is all reserve";
  EXPECT_EQ(nativeStackReserve(64 << 10), size_t(128) << 10);
  EXPECT_EQ(nativeStackReserve(8 << 20), size_t(256) << 10);
  EXPECT_EQ(nativeStackReserve(768 << 10), size_t(192) << 10);
}

} // namespace
