//===- ObjectTest.cpp - Reference counting, lifetimes and type indices ----===//

#include "vmjit/runtime/object.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace vmjit;

namespace {

/// What happened to the counted objects of one test.
struct Events {
  std::atomic<int> Destroyed{0};
  std::atomic<int> Freed{0};
  std::vector<int> Flags;
};

/// An object that records its destruction and the flags its deleter gets.
class CountedObj : public Object {
public:
  explicit CountedObj(Events *E)
      : Object(kVMJITObject, &CountedObj::deleter), E(E) {}
  ~CountedObj() { ++E->Destroyed; }
  int Payload = 42;

private:
  static void deleter(void *Self, int Flags) noexcept {
    Events *E = static_cast<CountedObj *>(Self)->E;
    E->Flags.push_back(Flags);
    if (Flags & kVMJITObjectDeleterFlagWeak)
      ++E->Freed;
    objectDeleter<CountedObj>(Self, Flags);
  }
  Events *E;
};

TEST(ObjectTest, MakeObjectStartsWithOneReference) {
  Events E;
  ObjectPtr<CountedObj> P = makeObject<CountedObj>(&E);
  EXPECT_EQ(P->useCount(), 1u);
  EXPECT_EQ(P->typeIndex(), kVMJITObject);
  EXPECT_EQ(P->Payload, 42);
  EXPECT_EQ(E.Destroyed, 0);
}

TEST(ObjectTest, CopyAndMove) {
  Events E;
  {
    ObjectPtr<CountedObj> P = makeObject<CountedObj>(&E);
    ObjectPtr<CountedObj> Copy = P;
    EXPECT_EQ(P->useCount(), 2u);
    EXPECT_TRUE(Copy == P);
    ObjectPtr<CountedObj> Moved = std::move(Copy);
    EXPECT_FALSE(Copy);
    EXPECT_EQ(P->useCount(), 2u);
    Moved = nullptr;
    EXPECT_EQ(P->useCount(), 1u);
    ObjectPtr<Object> Base = P; // upcast copy takes a reference
    EXPECT_EQ(P->useCount(), 2u);
    EXPECT_EQ(E.Destroyed, 0);
  }
  EXPECT_EQ(E.Destroyed, 1);
}

TEST(ObjectTest, AdoptShareRelease) {
  Events E;
  CountedObj *Raw = makeObject<CountedObj>(&E).release();
  EXPECT_EQ(Raw->useCount(), 1u);
  {
    auto Shared = ObjectPtr<CountedObj>::share(Raw);
    EXPECT_EQ(Raw->useCount(), 2u);
  }
  EXPECT_EQ(Raw->useCount(), 1u);
  EXPECT_EQ(E.Destroyed, 0);
  { auto Adopted = ObjectPtr<CountedObj>::adopt(Raw); }
  EXPECT_EQ(E.Destroyed, 1);
}

TEST(ObjectTest, DeleterRunsOnceWithBothFlags) {
  Events E;
  ObjectPtr<CountedObj> P = makeObject<CountedObj>(&E);
  ObjectPtr<CountedObj> Q = P;
  P = nullptr;
  EXPECT_EQ(E.Destroyed, 0);
  Q = nullptr;
  EXPECT_EQ(E.Destroyed, 1);
  EXPECT_EQ(E.Freed, 1);
  EXPECT_EQ(E.Flags, std::vector<int>{kVMJITObjectDeleterFlagBoth});
}

TEST(ObjectTest, CApiIncDecRef) {
  Events E;
  CountedObj *Raw = makeObject<CountedObj>(&E).release();
  VMJITObjectIncRef(Raw->raw());
  EXPECT_EQ(Raw->useCount(), 2u);
  VMJITObjectDecRef(Raw->raw());
  EXPECT_EQ(E.Destroyed, 0);
  VMJITObjectDecRef(Raw->raw());
  EXPECT_EQ(E.Destroyed, 1);
}

TEST(ObjectTest, WeakRefKeepsMemoryNotPayload) {
  Events E;
  CountedObj *Raw = makeObject<CountedObj>(&E).release();
  Raw->incWeakRef();
  Raw->decRef();
  // The payload is gone but the header memory is still ours.
  EXPECT_EQ(E.Destroyed, 1);
  EXPECT_EQ(E.Freed, 0);
  EXPECT_EQ(Raw->useCount(), 0u);
  Raw->decWeakRef();
  EXPECT_EQ(E.Freed, 1);
  EXPECT_EQ(E.Flags, (std::vector<int>{kVMJITObjectDeleterFlagStrong,
                                       kVMJITObjectDeleterFlagWeak}));
}

TEST(ObjectTest, ConcurrentRefCountingDeletesOnce) {
  Events E;
  ObjectPtr<CountedObj> P = makeObject<CountedObj>(&E);
  constexpr int Threads = 4, Rounds = 20000;
  std::vector<std::thread> Workers;
  for (int T = 0; T < Threads; ++T)
    Workers.emplace_back([Copy = P] {
      for (int I = 0; I < Rounds; ++I) {
        Copy->incRef();
        ObjectPtr<CountedObj> Tmp = Copy;
        Copy->decRef();
      }
    });
  // The main thread's reference goes while the workers still run.
  P = nullptr;
  for (std::thread &W : Workers)
    W.join();
  EXPECT_EQ(E.Destroyed, 1);
  EXPECT_EQ(E.Freed, 1);
}

TEST(ObjectTest, DynamicTypes) {
  int32_t A = registerDynamicType("test.ObjectTest.A");
  int32_t B = registerDynamicType("test.ObjectTest.B");
  EXPECT_GE(A, kVMJITDynObjectBegin);
  EXPECT_GE(B, kVMJITDynObjectBegin);
  EXPECT_NE(A, B);
  EXPECT_EQ(registerDynamicType("test.ObjectTest.A"), A);
  EXPECT_EQ(typeIndexName(A), "test.ObjectTest.A");
  EXPECT_EQ(typeIndexName(B), "test.ObjectTest.B");
}

TEST(ObjectTest, DynamicTypesFromThreads) {
  std::vector<int32_t> Got(4);
  std::vector<std::thread> Workers;
  for (int T = 0; T < 4; ++T)
    Workers.emplace_back(
        [&Got, T] { Got[T] = registerDynamicType("test.ObjectTest.Shared"); });
  for (std::thread &W : Workers)
    W.join();
  for (int32_t I : Got)
    EXPECT_EQ(I, Got[0]);
  EXPECT_EQ(typeIndexName(Got[0]), "test.ObjectTest.Shared");
}

TEST(ObjectTest, StaticTypeNames) {
  EXPECT_EQ(typeIndexName(kVMJITInt), "int");
  EXPECT_EQ(typeIndexName(kVMJITTensor), "Tensor");
  EXPECT_EQ(typeIndexName(kVMJITSmallStr), "str");
  EXPECT_EQ(typeIndexName(kVMJITFunction), "Function");
}

} // namespace
