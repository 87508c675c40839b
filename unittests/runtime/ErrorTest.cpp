//===- ErrorTest.cpp - Errors across the safe-call boundary ---------------===//

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/function.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

using namespace vmjit;

namespace {

/// Clears this thread's raised error so that tests do not see each other's.
void clearRaised() {
  VMJITObject *Left = nullptr;
  VMJITErrorMoveFromRaised(&Left);
  VMJITObjectDecRef(Left);
}

class ErrorTest : public ::testing::Test {
protected:
  void SetUp() override { clearRaised(); }
  void TearDown() override { clearRaised(); }
};

TEST_F(ErrorTest, ThrownErrorCrossesSafeCall) {
  Function F = Function::fromPacked(
      "f", [](PackedArgs, Any *) { throw Error("ValueError", "boom"); });
  Any Result;
  EXPECT_EQ(F.get()->safeCall(nullptr, 0, &Result), -1);
  EXPECT_TRUE(Result.isNone());
  Error E = takeRaisedError();
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "boom");
  // Taking it cleared the slot.
  EXPECT_EQ(takeRaisedError().kind(), "InternalError");
}

TEST_F(ErrorTest, CallPackedRethrowsTheSameError) {
  Error Original("KeyError", "no such key");
  Function F = Function::fromPacked(
      "f", [Original](PackedArgs, Any *) { throw Original; });
  try {
    F();
    FAIL() << "no exception";
  } catch (const Error &E) {
    EXPECT_TRUE(E.same(Original));
    EXPECT_STREQ(E.what(), "no such key");
  }
}

TEST_F(ErrorTest, StdExceptionBecomesInternalError) {
  Function F = Function::fromPacked(
      "f", [](PackedArgs, Any *) { throw std::runtime_error("disk on fire"); });
  Any Result;
  ASSERT_EQ(F.get()->safeCall(nullptr, 0, &Result), -1);
  Error E = takeRaisedError();
  EXPECT_EQ(E.kind(), "InternalError");
  EXPECT_EQ(E.message(), "disk on fire");
}

TEST_F(ErrorTest, OtherExceptionsAreCaught) {
  EXPECT_EQ(safeCallGuard([] { throw 42; }), -1);
  EXPECT_EQ(takeRaisedError().kind(), "InternalError");
  EXPECT_EQ(safeCallGuard([] { throw std::bad_alloc(); }), -1);
  EXPECT_EQ(takeRaisedError().kind(), "MemoryError");
  EXPECT_EQ(safeCallGuard([] {}), 0);
}

TEST_F(ErrorTest, CApiRoundTrip) {
  VMJITErrorSetRaisedFromCStr("IndexError", "index 9 out of range");
  VMJITObject *Obj = nullptr;
  VMJITErrorMoveFromRaised(&Obj);
  ASSERT_NE(Obj, nullptr);
  EXPECT_EQ(Obj->type_index, kVMJITError);
  VMJITByteArray Kind, Message;
  ASSERT_EQ(VMJITErrorGetInfo(Obj, &Kind, &Message), 0);
  EXPECT_EQ(std::string_view(Kind.data, Kind.size), "IndexError");
  EXPECT_EQ(std::string_view(Message.data, Message.size),
            "index 9 out of range");
  // The slot is empty after the move; we own the only reference.
  VMJITObject *Again = Obj;
  VMJITErrorMoveFromRaised(&Again);
  EXPECT_EQ(Again, nullptr);
  EXPECT_EQ(Object::fromRaw(Obj)->useCount(), 1u);
  VMJITObjectDecRef(Obj);
}

TEST_F(ErrorTest, CApiSetRaisedTakesAReference) {
  Error E("ValueError", "shared");
  VMJITErrorSetRaised(E.get()->raw());
  EXPECT_EQ(E.useCount(), 2u);
  Error Taken = takeRaisedError();
  EXPECT_TRUE(Taken.same(E));
}

TEST_F(ErrorTest, GetInfoRejectsNonErrors) {
  Function F = Function::fromPacked("f", [](PackedArgs, Any *) {});
  VMJITByteArray Kind, Message;
  EXPECT_EQ(VMJITErrorGetInfo(F.get()->raw(), &Kind, &Message), -1);
  EXPECT_EQ(VMJITErrorGetInfo(nullptr, &Kind, &Message), -1);
}

TEST_F(ErrorTest, RaisedErrorIsThreadLocal) {
  VMJITErrorSetRaisedFromCStr("ValueError", "main thread");
  VMJITObject *SeenByOther = reinterpret_cast<VMJITObject *>(1);
  std::thread([&] { VMJITErrorMoveFromRaised(&SeenByOther); }).join();
  EXPECT_EQ(SeenByOther, nullptr);
  Error Mine = takeRaisedError();
  EXPECT_EQ(Mine.message(), "main thread");
}

TEST_F(ErrorTest, FormatWithFrames) {
  Error E("ValueError", "boom");
  EXPECT_EQ(E.format(), "ValueError: boom");
  E.addFrame("in function f, instruction 3");
  E.addFrame("in function main, instruction 0");
  EXPECT_EQ(E.format(), "ValueError: boom\n"
                        "  in function f, instruction 3\n"
                        "  in function main, instruction 0");
  EXPECT_EQ(E.message(), "boom");
}

TEST_F(ErrorTest, RepeatedFramesCollapseAsInPython) {
  Error E("RecursionError", "deep");
  E.addFrame("in f");
  for (int I = 0; I < 4; ++I)
    E.addFrame("in g");
  E.addFrame("in f");
  E.addFrame("in f");
  E.addFrame("in main");
  EXPECT_EQ(E.frameCount(), 8u);
  EXPECT_EQ(E.frames(), (std::vector<std::string>{
                            "in f", "in g", "in g", "in g",
                            "[previous frame repeated 1 more time]", "in f",
                            "in f", "in main"}));
}

TEST_F(ErrorTest, LongTracesKeepTheInnermostAndOutermostFrames) {
  // Mutual recursion never repeats a line: the trace is cut in the middle.
  Error E("RecursionError", "deep");
  const uint64_t N = 1000000;
  for (uint64_t I = 0; I < N; ++I)
    E.addFrame(I % 2 ? "in odd" : "in even");
  E.addFrame("in main");
  std::vector<std::string> L = E.frames();
  ASSERT_EQ(L.size(), FrameTrace::kHeadLines + 1 + FrameTrace::kTailLines);
  EXPECT_EQ(E.frameCount(), N + 1);
  EXPECT_EQ(L.front(), "in even");
  EXPECT_EQ(L[FrameTrace::kHeadLines],
            "[" + std::to_string(N + 1 - FrameTrace::kHeadLines -
                                 FrameTrace::kTailLines) +
                " frames omitted]");
  EXPECT_EQ(L.back(), "in main");
  EXPECT_EQ(L[L.size() - 2], "in odd");
  // A run of repeats that reaches the cut still counts every frame.
  Error R("RecursionError", "deep");
  for (size_t I = 0; I < FrameTrace::kHeadLines + 5; ++I)
    R.addFrame("in f" + std::to_string(I));
  for (int I = 0; I < 50; ++I)
    R.addFrame("in g");
  L = R.frames();
  EXPECT_EQ(L.back(), "[previous frame repeated 47 more times]");
  EXPECT_EQ(L[L.size() - 2], "in g");
  EXPECT_EQ(R.frameCount(), FrameTrace::kHeadLines + 55);
}

TEST_F(ErrorTest, TakeWithNothingRaisedIsInternalError) {
  Error E = takeRaisedError();
  EXPECT_EQ(E.kind(), "InternalError");
  EXPECT_FALSE(E.message().empty());
}

TEST_F(ErrorTest, ThrowErrorAndThrowRaised) {
  try {
    throwError("TypeError", "wrong");
    FAIL() << "no exception";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "TypeError");
    EXPECT_EQ(E.message(), "wrong");
  }
  VMJITErrorSetRaisedFromCStr("LookupError", "gone");
  EXPECT_THROW(
      {
        try {
          throwRaisedError();
        } catch (const Error &E) {
          EXPECT_EQ(E.kind(), "LookupError");
          throw;
        }
      },
      Error);
}

} // namespace
