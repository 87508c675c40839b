//===- builtins_shape.cpp - The shape heap and symbolic dimensions --------===//
//
// vm.builtin.alloc_shape_heap, match_shape, make_shape, match_prim_value
// and make_prim_value: how TVM's compiled drivers check and record the
// symbolic dimensions of their inputs and build shapes from them.
//
// The (code, value) pairs' codes are TVM's MatchShapeCode and MakeShapeCode
// (runtime/shape_codes.h).
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/shape_codes.h"
#include "vmjit/runtime/string.h"

#include <algorithm>
#include <fmt/format.h>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

/// alloc_shape_heap(%vm, size): a zeroed int64 [size] tensor holding the
/// symbolic dimensions of a call.
Tensor allocShapeHeap(VMContext, int64_t Size) {
  if (Size < 0 || Size > (int64_t(1) << 24))
    fail("vm.builtin.alloc_shape_heap",
         fmt::format("heap size {} is out of range", Size));
  Tensor H = Tensor::empty({Size}, dtype::Int64);
  std::fill_n(H.data<int64_t>(), Size, 0);
  return H;
}

/// What a match code checks, for messages: "dimension I" of a shape, or
/// the value of match_prim_value (Dim < 0).
std::string matchedName(int32_t Dim) {
  return Dim < 0 ? std::string("the value") : fmt::format("dimension {}", Dim);
}

/// One match code applied to `Value` (dimension Dim, or the value when Dim
/// is negative). Messages are formatted only when the match fails.
void matchOne(const char *Fn, const ShapeHeap &Heap, int64_t Code,
              int64_t Imm, int64_t Value, const ErrorContext &Ctx,
              int32_t Dim) {
  int64_t Want;
  switch (static_cast<MatchShapeCode>(Code)) {
  case MatchShapeCode::AssertEqualToImm:
    Want = Imm;
    break;
  case MatchShapeCode::StoreToHeap:
    Heap.slot(Fn, Imm) = Value;
    return;
  case MatchShapeCode::NoOp:
    return;
  case MatchShapeCode::AssertEqualToLoad:
    Want = Heap.slot(Fn, Imm);
    break;
  default:
    fail(Fn, fmt::format("unknown match code {}", Code));
  }
  if (Value != Want)
    fail(Fn, fmt::format("{}{} is {}, expected {}", Ctx.prefix(),
                         matchedName(Dim), Value, Want));
}

/// A TypeError unless `A` holds `N` (code, value) pairs besides its
/// `OtherArgs` other arguments (N within int32 indexing).
void checkPairCount(const char *Fn, PackedArgs A, int64_t N,
                    int64_t OtherArgs) {
  if (N < 0 || N > (INT32_MAX - OtherArgs) / 2 || A.size() != OtherArgs + 2 * N)
    fail(Fn,
         fmt::format("{} (code, value) pairs need {} arguments, got {}", N,
                     OtherArgs + 2 * N, A.size()),
         "TypeError");
}

/// match_shape(value, heap, n, (code, imm) x n, text): checks and records
/// the n dimensions of a tensor or shape; the rank is checked first.
void matchShape(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.match_shape";
  needArgs(Fn, A, 4, INT32_MAX);
  auto Dims = dimsOf(A[0]);
  if (!Dims)
    fail(Fn,
         fmt::format("argument 1 expected Tensor or Shape but got {}",
                     A[0].typeName()),
         "TypeError");
  ShapeHeap Heap = heapArg(Fn, A[1], 1);
  int64_t N = arg<int64_t>(Fn, A, 2);
  checkPairCount(Fn, A, N, /*OtherArgs=*/4);
  const ErrorContext Ctx(arg<std::string_view>(Fn, A, A.size() - 1));
  if (static_cast<int64_t>(Dims->size()) != N)
    fail(Fn, fmt::format("{}expected rank {} but got shape {}", Ctx.prefix(),
                         N, shapeString(*Dims)));
  for (int32_t I = 0; I < static_cast<int32_t>(N); ++I) {
    int64_t Code = arg<int64_t>(Fn, A, 3 + 2 * I);
    int64_t Imm = arg<int64_t>(Fn, A, 4 + 2 * I);
    matchOne(Fn, Heap, Code, Imm, (*Dims)[static_cast<size_t>(I)], Ctx, I);
  }
  Rv->reset();
}

/// One make code.
int64_t makeOne(const char *Fn, const ShapeHeap &Heap, int64_t Code,
                int64_t Imm) {
  if (Code == static_cast<int64_t>(MakeShapeCode::UseImm))
    return Imm;
  if (Code == static_cast<int64_t>(MakeShapeCode::LoadShape))
    return Heap.slot(Fn, Imm);
  fail(Fn, fmt::format("unknown make_shape code {}", Code));
}

/// make_shape(heap, n, (code, imm) x n): a shape.
void makeShape(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.make_shape";
  needArgs(Fn, A, 2, INT32_MAX);
  ShapeHeap Heap = heapArg(Fn, A[0], 0);
  int64_t N = arg<int64_t>(Fn, A, 1);
  checkPairCount(Fn, A, N, /*OtherArgs=*/2);
  // A few dimensions are built on the stack (no allocation).
  int64_t Small[ShapeObj::kInlineDims];
  std::vector<int64_t> Large;
  int64_t *Dims = Small;
  if (N > static_cast<int64_t>(ShapeObj::kInlineDims)) {
    Large.resize(static_cast<size_t>(N));
    Dims = Large.data();
  }
  for (int32_t I = 0; I < static_cast<int32_t>(N); ++I)
    Dims[I] = makeOne(Fn, Heap, arg<int64_t>(Fn, A, 2 + 2 * I),
                      arg<int64_t>(Fn, A, 3 + 2 * I));
  *Rv = Shape(std::span<const int64_t>(Dims, static_cast<size_t>(N)));
}

/// match_prim_value(value, heap, code, imm, text): one match code applied
/// to an int (TVM's check of an R.Prim argument).
void matchPrimValue(int64_t Value, AnyView Heap, int64_t Code, int64_t Imm,
                    std::optional<std::string_view> Text) {
  const char *Fn = "vm.builtin.match_prim_value";
  matchOne(Fn, heapArg(Fn, Heap, 1), Code, Imm, Value, ErrorContext(Text),
           -1);
}

/// make_prim_value(heap, code, imm): one make code, as an int.
int64_t makePrimValue(AnyView Heap, int64_t Code, int64_t Imm) {
  const char *Fn = "vm.builtin.make_prim_value";
  return makeOne(Fn, heapArg(Fn, Heap, 0), Code, Imm);
}

} // namespace

void registerShapeBuiltins(GlobalDef &D) {
  D.def("vm.builtin.alloc_shape_heap", allocShapeHeap)
      .defPacked("vm.builtin.match_shape", matchShape)
      .defPacked("vm.builtin.make_shape", makeShape)
      .def("vm.builtin.match_prim_value", matchPrimValue)
      .def("vm.builtin.make_prim_value", makePrimValue);
}

} // namespace vmjit::vm::builtin
