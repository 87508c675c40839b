// Tests vm.builtin.alloc_shape_heap, match_shape, make_shape,
// match_prim_value and make_prim_value with TVM's conventions: match codes
// 0 assert == imm, 1 store, 2 nothing, 3 assert == heap; make codes 0 imm,
// 1 load; match_shape checks the rank first and takes a tensor or a shape;
// the heap may be None when no slot is used; unknown codes are errors.
#include "BuiltinTestUtil.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::ElementsAre;

namespace {

struct BuiltinShapeTest : ::testing::Test {
  std::unique_ptr<VirtualMachine> VM = makeVM();
  Function Alloc = builtin("vm.builtin.alloc_shape_heap");
  Function Match = builtin("vm.builtin.match_shape");
  Function Make = builtin("vm.builtin.make_shape");
  Function MatchPrim = builtin("vm.builtin.match_prim_value");
  Function MakePrim = builtin("vm.builtin.make_prim_value");
  Tensor heap(int64_t N) { return Alloc(vmArg(*VM), N).cast<Tensor>(); }
};

} // namespace

TEST_F(BuiltinShapeTest, AllocShapeHeap) {
  Tensor H = heap(3);
  EXPECT_EQ(H.dtype(), dtype::Int64);
  EXPECT_THAT(valuesOf<int64_t>(H), ElementsAre(0, 0, 0));
  EXPECT_EQ(heap(0).numel(), 0);
  EXPECT_EQ(errorText([&] { Alloc(vmArg(*VM), -1); }),
            "ValueError: vm.builtin.alloc_shape_heap: heap size -1 is out of "
            "range");
  EXPECT_EQ(errorText([&] { Alloc(3); }),
            "TypeError: vm.builtin.alloc_shape_heap: expected 2 arguments but "
            "got 1");
}

TEST_F(BuiltinShapeTest, TheProbeOfAllCodes) {
  // TVM's match_shape_codes probe: on [2, 5, 9] (a shape or a tensor),
  // assert 2, store 5 to heap[0], nothing; then nothing, assert == heap[0],
  // nothing; make_shape(7, heap[0], 2) = [7, 5, 2].
  for (Any X : {Any(Shape{2, 5, 9}), Any(Tensor::empty({2, 5, 9}, dtype::Float32))}) {
    Tensor H = heap(2);
    EXPECT_TRUE(
        Match(X, H, 3, 0, 2, 1, 0, 2, 99, "PROBE_ERR").isNone());
    EXPECT_TRUE(Match(X, H, 3, 2, 0, 3, 0, 2, 0, "PROBE_ERR").isNone());
    EXPECT_THAT(dimsOf(Make(H, 3, 0, 7, 1, 0, 0, 2)), ElementsAre(7, 5, 2));
  }
}

TEST_F(BuiltinShapeTest, MatchShapeFailures) {
  Tensor H = heap(2);
  Shape S{3, 5, 9};
  EXPECT_EQ(errorText([&] { Match(S, H, 3, 0, 2, 1, 0, 2, 99, "PROBE_ERR"); }),
            "ValueError: vm.builtin.match_shape: PROBE_ERR: dimension 0 is 3, "
            "expected 2");
  H.data<int64_t>()[1] = 4;
  EXPECT_EQ(errorText([&] { Match(S, H, 3, 2, 0, 3, 1, 2, 0, "ctx"); }),
            "ValueError: vm.builtin.match_shape: ctx: dimension 1 is 5, "
            "expected 4");
  // The rank is checked before any code runs: nothing is stored.
  H.data<int64_t>()[0] = -1;
  EXPECT_EQ(errorText([&] { Match(S, H, 2, 1, 0, 1, 1, "ctx"); }),
            "ValueError: vm.builtin.match_shape: ctx: expected rank 2 but got "
            "shape [3, 5, 9]");
  EXPECT_EQ(H.data<int64_t>()[0], -1);
  // Codes run in order: the store before the unknown code happened.
  EXPECT_EQ(errorText([&] { Match(S, H, 3, 1, 0, 4, 0, 2, 0, "ctx"); }),
            "ValueError: vm.builtin.match_shape: unknown match code 4");
  EXPECT_EQ(H.data<int64_t>()[0], 3);
  EXPECT_EQ(errorText([&] { Match(S, H, 3, 1, 2, 2, 0, 2, 0, "ctx"); }),
            "IndexError: vm.builtin.match_shape: heap slot 2 is out of range "
            "(heap of 2)");
  EXPECT_EQ(errorText([&] { Match(S, H, 3, 1, 0, 2, 0, "ctx"); }),
            "TypeError: vm.builtin.match_shape: 3 (code, value) pairs need 10 "
            "arguments, got 8");
  EXPECT_EQ(errorText([&] { Match(5, H, 0, "ctx"); }),
            "TypeError: vm.builtin.match_shape: argument 1 expected Tensor or "
            "Shape but got int");
  EXPECT_EQ(errorText([&] { Match(S, Tensor::empty({2}, dtype::Int32), 3, 2,
                                  0, 2, 0, 2, 0, "ctx"); }),
            "TypeError: vm.builtin.match_shape: argument 2 must be the int64 "
            "shape heap");
}

TEST_F(BuiltinShapeTest, MatchShapeWithANullHeap) {
  // No slot used: fine, as in TVM.
  EXPECT_TRUE(Match(Shape{4, 5}, nullptr, 2, 0, 4, 2, 0, "ctx").isNone());
  // A slot used: an error where TVM dereferences a null pointer.
  EXPECT_EQ(errorText([&] { Match(Shape{4, 5}, nullptr, 2, 0, 4, 1, 0, "c"); }),
            "ValueError: vm.builtin.match_shape: heap slot 0 is used but the "
            "shape heap is null");
}

TEST_F(BuiltinShapeTest, MatchShapeOnADLTensorPointer) {
  Tensor X = Tensor::empty({6}, dtype::Int8);
  Tensor H = heap(1);
  EXPECT_TRUE(Match(X.dl(), H, 1, 1, 0, "ctx").isNone());
  EXPECT_EQ(H.data<int64_t>()[0], 6);
}

TEST_F(BuiltinShapeTest, MakeShape) {
  // TVM's make_shape_imm_no_heap probe: a null heap with immediates only.
  EXPECT_THAT(dimsOf(Make(nullptr, 2, 0, 4, 0, 5)), ElementsAre(4, 5));
  EXPECT_THAT(dimsOf(Make(nullptr, 0)), ElementsAre());
  Tensor H = heap(2);
  H.data<int64_t>()[1] = 11;
  EXPECT_THAT(dimsOf(Make(H, 3, 1, 1, 0, -1, 1, 0)), ElementsAre(11, -1, 0));
  // make_shape_bad_code: code 2 is not a make code (TVM: InternalError).
  EXPECT_EQ(errorText([&] { Make(nullptr, 1, 2, 5); }),
            "ValueError: vm.builtin.make_shape: unknown make_shape code 2");
  EXPECT_EQ(errorText([&] { Make(nullptr, 1, 1, 0); }),
            "ValueError: vm.builtin.make_shape: heap slot 0 is used but the "
            "shape heap is null");
  EXPECT_EQ(errorText([&] { Make(H, 1, 1, 2); }),
            "IndexError: vm.builtin.make_shape: heap slot 2 is out of range "
            "(heap of 2)");
  EXPECT_EQ(errorText([&] { Make(H, 2, 0, 1); }),
            "TypeError: vm.builtin.make_shape: 2 (code, value) pairs need 6 "
            "arguments, got 4");
  EXPECT_EQ(errorText([&] { Make(H, -1); }),
            "TypeError: vm.builtin.make_shape: -1 (code, value) pairs need 0 "
            "arguments, got 2");
  EXPECT_EQ(errorText([&] { Make(3, 0); }),
            "TypeError: vm.builtin.make_shape: argument 1 expected Tensor (the "
            "shape heap) or None but got int");
}

TEST_F(BuiltinShapeTest, MatchPrimValue) {
  Tensor H = heap(2);
  // (value, heap, code, imm, text)
  EXPECT_TRUE(MatchPrim(8, H, 1, 1, "n").isNone());
  EXPECT_EQ(H.data<int64_t>()[1], 8);
  EXPECT_TRUE(MatchPrim(8, H, 3, 1, "n").isNone());
  EXPECT_TRUE(MatchPrim(8, H, 0, 8, "n").isNone());
  EXPECT_TRUE(MatchPrim(8, nullptr, 2, 0, nullptr).isNone());
  EXPECT_EQ(errorText([&] { MatchPrim(9, H, 3, 1, "arg n"); }),
            "ValueError: vm.builtin.match_prim_value: arg n: the value is 9, "
            "expected 8");
  EXPECT_EQ(errorText([&] { MatchPrim(9, H, 0, 8, nullptr); }),
            "ValueError: vm.builtin.match_prim_value: the value is 9, "
            "expected 8");
  EXPECT_EQ(errorText([&] { MatchPrim(9, H, 5, 0, "n"); }),
            "ValueError: vm.builtin.match_prim_value: unknown match code 5");
  EXPECT_EQ(errorText([&] { MatchPrim(9, nullptr, 1, 0, "n"); }),
            "ValueError: vm.builtin.match_prim_value: heap slot 0 is used but "
            "the shape heap is null");
  EXPECT_EQ(errorText([&] { MatchPrim(1.5, H, 0, 1, "n"); }),
            "TypeError: vm.builtin.match_prim_value: argument 1 expected int "
            "but got float");
}

TEST_F(BuiltinShapeTest, MakePrimValue) {
  Tensor H = heap(1);
  H.data<int64_t>()[0] = 21;
  // (heap, code, imm)
  EXPECT_EQ(MakePrim(H, 1, 0).cast<int64_t>(), 21);
  EXPECT_EQ(MakePrim(nullptr, 0, -4).cast<int64_t>(), -4);
  EXPECT_EQ(errorText([&] { MakePrim(H, 3, 0); }),
            "ValueError: vm.builtin.make_prim_value: unknown make_shape code "
            "3");
  EXPECT_EQ(errorText([&] { MakePrim(H, 1, 1); }),
            "IndexError: vm.builtin.make_prim_value: heap slot 1 is out of "
            "range (heap of 1)");
}
