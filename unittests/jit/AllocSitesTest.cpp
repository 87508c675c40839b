//===- AllocSitesTest.cpp - Caches of allocation call sites, every mode ---===//
//
// vm/alloc_sites.h: a call site of alloc_storage or alloc_tensor hands its
// last object out again only when no one else holds it. The program is the
// lit test's (unittests/tools/builtins/alloc_sites.vmasm); here the
// identity of the objects is checked, which the command cannot see.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <gtest/gtest.h>
#include <thread>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

/// views(s) makes two views of storage s at two sites whose other
/// arguments are constants (the JIT tiers check the second site inline):
/// a view is handed out again only once dropped, and only for the storage
/// it lives in.
void expectViewsHandedOutOnlyWhenDropped(VirtualMachine &VM) {
  Any S = VM.call("storage");
  auto Views = [&](const Any &Storage) {
    Array R = VM.call("views", Storage).cast<Array>();
    return std::pair(R[0].cast<Tensor>(), R[1].cast<Tensor>());
  };
  auto [A1, B1] = Views(S);
  const TensorObj *A1Obj = A1.get();
  A1 = Tensor(); // dropped; B1 kept
  auto [A2, B2] = Views(S);
  EXPECT_EQ(A2.get(), A1Obj);
  EXPECT_NE(B2.get(), B1.get());
  const TensorObj *B2Obj = B2.get();
  B2 = Tensor();
  auto [A3, B3] = Views(S);
  EXPECT_NE(A3.get(), A2.get()); // A2 is still held
  EXPECT_EQ(B3.get(), B2Obj);
  // Another storage: neither site's view lives in it.
  Any S2 = VM.call("storage");
  A3 = Tensor();
  B3 = Tensor();
  auto [A4, B4] = Views(S2);
  EXPECT_EQ(A4.data(), B4.data());
  EXPECT_NE(B4.data(), B1.data());
  EXPECT_NE(B4.get(), B2Obj);
}

class AllocSitesTest : public ::testing::TestWithParam<ExecMode> {
protected:
  void SetUp() override {
    if (GetParam() == ExecMode::Baseline && !jit::baselineAvailable())
      GTEST_SKIP() << "this build has no baseline tier";
    static std::shared_ptr<Executable> Exe =
        assembleFile(VMJIT_ALLOC_SITES_INPUT);
    VM = VirtualMachine::create(Exe, VMOptions());
    jit::JITOptions J;
    J.Mode = GetParam();
    J.Threshold = 1;
    J.Background = false;
    jit::enableJIT(*VM, J);
  }

  /// fill(I): a view of a new (or reused) storage holding I twice.
  Tensor fill(int64_t I) {
    return VM->call("fill", I).cast<Tensor>();
  }

  static int32_t at(const Tensor &T, int K) {
    return static_cast<const int32_t *>(T.data())[K];
  }

  std::unique_ptr<VirtualMachine> VM;
};

TEST_P(AllocSitesTest, ADroppedResultIsHandedOutAgain) {
  const TensorObj *First = fill(1).get();
  Tensor Second = fill(2);
  EXPECT_EQ(Second.get(), First);
  EXPECT_EQ(at(Second, 0), 2);
  EXPECT_EQ(at(Second, 1), 2);
  // fill's storage site and tensor site.
  EXPECT_EQ(VM->allocSites().cached(), 2u);
}

TEST_P(AllocSitesTest, AKeptResultIsNeverHandedOut) {
  Tensor First = fill(1);
  Tensor Second = fill(2);
  EXPECT_NE(Second.get(), First.get());
  EXPECT_NE(Second.data(), First.data());
  EXPECT_EQ(at(First, 0), 1);
  EXPECT_EQ(at(Second, 0), 2);
}

TEST_P(AllocSitesTest, AResultKeptAcrossAThousandCallsKeepsItsValues) {
  Tensor Kept = fill(7);
  for (int I = 0; I < 1000; ++I) {
    Tensor T = fill(I);
    ASSERT_EQ(at(T, 1), I);
  }
  EXPECT_EQ(at(Kept, 0), 7);
  EXPECT_EQ(at(Kept, 1), 7);
}

TEST_P(AllocSitesTest, ResultsOutliveTheVM) {
  Tensor Kept = fill(3);
  fill(4); // dropped: the sites hold it
  VM.reset();
  EXPECT_EQ(at(Kept, 0), 3);
  EXPECT_EQ(Kept.useCount(), 1u);
}

TEST_P(AllocSitesTest, AResultDroppedOnAnotherThreadIsHandedOutAgain) {
  Tensor First = fill(1);
  const TensorObj *Obj = First.get();
  std::thread Drop([T = std::move(First)]() mutable {
    // The other thread writes the tensor, then lets it go.
    static_cast<int32_t *>(T.data())[0] = 9;
    T = Tensor();
  });
  Drop.join();
  Tensor Second = fill(2);
  EXPECT_EQ(Second.get(), Obj);
  EXPECT_EQ(at(Second, 0), 2);
}

TEST_P(AllocSitesTest, TheVMHoldsItsSitesObjectsUntilCleared) {
  fill(1);
  EXPECT_EQ(VM->allocSites().cached(), 2u);
  VM->allocSites().clear();
  EXPECT_EQ(VM->allocSites().cached(), 0u);
  EXPECT_EQ(at(fill(5), 1), 5);
}

TEST_P(AllocSitesTest, AViewOfTheSameStorageIsHandedOutOnlyWhenDropped) {
  expectViewsHandedOutOnlyWhenDropped(*VM);
}

// Tier 2's other lowering style (registers in the frame, not promoted)
// checks the site inline too.
TEST(AllocSitesFlatTest, AViewOfTheSameStorageIsHandedOutOnlyWhenDropped) {
  auto VM = VirtualMachine::create(assembleFile(VMJIT_ALLOC_SITES_INPUT),
                                   VMOptions());
  jit::JITOptions J;
  J.Mode = ExecMode::Compiled;
  J.Background = false;
  J.PromoteLimit = 0;
  jit::enableJIT(*VM, J);
  expectViewsHandedOutOnlyWhenDropped(*VM);
}

TEST_P(AllocSitesTest, AShapeIsRewrittenOnlyWhenDropped) {
  auto ShapeOf = [&](int64_t N) {
    Any X = VM->call("tensor_of", N);
    return VM->call("shape_of", X).cast<Shape>();
  };
  const ShapeObj *First = ShapeOf(3).get();
  Shape Second = ShapeOf(4); // the first was dropped: rewritten
  EXPECT_EQ(Second.get(), First);
  EXPECT_EQ(Second[0], 4);
  Shape Third = ShapeOf(5); // the second is kept
  EXPECT_NE(Third.get(), Second.get());
  EXPECT_EQ(Second[0], 4);
  EXPECT_EQ(Third[0], 5);
  EXPECT_EQ(Third[1], 2);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, AllocSitesTest,
                         ::testing::ValuesIn(kAllExecModes),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param));
                         });

} // namespace
