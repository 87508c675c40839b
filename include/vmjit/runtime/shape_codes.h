//===- vmjit/runtime/shape_codes.h - TVM's shape-builtin codes -*- C++ -*-===//
//
// The codes of the (code, value) pairs that TVM's compiler passes to
// vm.builtin.match_shape and vm.builtin.make_shape (TVM's MatchShapeCode
// and MakeShapeCode): the builtins, the interpreter's call sites and both
// JIT tiers read them from here.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_SHAPE_CODES_H
#define VMJIT_RUNTIME_SHAPE_CODES_H

#include <cstdint>

namespace vmjit {

/// match_shape's codes: what a dimension is checked against.
enum class MatchShapeCode : int64_t {
  /// The dimension equals the value.
  AssertEqualToImm = 0,
  /// The dimension is stored to heap[value].
  StoreToHeap = 1,
  /// No check.
  NoOp = 2,
  /// The dimension equals heap[value].
  AssertEqualToLoad = 3,
};

/// make_shape's codes: where a dimension comes from.
enum class MakeShapeCode : int64_t {
  /// The value itself.
  UseImm = 0,
  /// heap[value].
  LoadShape = 1,
};

/// Whether `Code` is one of match_shape's codes.
constexpr bool isMatchShapeCode(int64_t Code) {
  return Code >= static_cast<int64_t>(MatchShapeCode::AssertEqualToImm) &&
         Code <= static_cast<int64_t>(MatchShapeCode::AssertEqualToLoad);
}

/// Whether match_shape's `Code` reads or writes a heap slot (its value).
constexpr bool matchShapeUsesHeap(int64_t Code) {
  return Code == static_cast<int64_t>(MatchShapeCode::StoreToHeap) ||
         Code == static_cast<int64_t>(MatchShapeCode::AssertEqualToLoad);
}

} // namespace vmjit

#endif // VMJIT_RUNTIME_SHAPE_CODES_H
