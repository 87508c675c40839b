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
