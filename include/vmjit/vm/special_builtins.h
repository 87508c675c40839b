//===- vmjit/vm/special_builtins.h - Builtins every tier knows -*- C++ -*-===//
//
// The standard builtins that the interpreter and both JIT tiers treat
// specially, one row each (as wasm3's c_operations[]): the name, the
// argument counts its inline form takes, whether its calls are counted
// when it runs inline, the VM helper with a call-site cache it goes
// through, how tier 1 runs it and what the analyses know of its result.
// Everything that asks "is this call special?" reads this table: the
// interpreter (its pointers to the standard function objects), the
// callee bindings of the JIT and of ahead-of-time code
// (jit/callee_binding.h), kind inference and tensor facts, tier 1's
// stencil choice, tier 2's emitters and the stats' list of uncounted
// calls.
//
// Adding an inline builtin: one row here (appended: the numbers are in
// object-cache keys), its tier-2 emitter (jit/inline_builtins.cpp) and,
// for tier 1, its stencil.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_SPECIAL_BUILTINS_H
#define VMJIT_VM_SPECIAL_BUILTINS_H

#include "vmjit/bytecode/bytecode.h"
#include "vmjit/kernels/scalar_ops.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace vmjit {
class FunctionObj;
} // namespace vmjit

namespace vmjit::vm {

/// The special builtins. The numbers are part of object-cache keys:
/// append rows, never reorder them (pinned below).
enum class SpecialBuiltin : uint8_t {
  None,
  Copy,
  ReadIfCond,
  TupleGetItem,
  NullValue,
#define VMJIT_SPECIAL_SCALAR_ENUM(Enum, Name, Arity) Scalar##Enum,
  VMJIT_SCALAR_OPS(VMJIT_SPECIAL_SCALAR_ENUM)
#undef VMJIT_SPECIAL_SCALAR_ENUM
      CheckTensorInfo,
  MatchShape,
  AllocTensor,
  AllocStorage,
  MakeShape,
};

inline constexpr int kNumSpecialBuiltins =
    static_cast<int>(SpecialBuiltin::MakeShape) + 1;

// The numbers cache keys rely on.
static_assert(static_cast<int>(SpecialBuiltin::NullValue) == 4 &&
              static_cast<int>(SpecialBuiltin::ScalarAdd) == 5 &&
              static_cast<int>(SpecialBuiltin::ScalarNot) == 19 &&
              static_cast<int>(SpecialBuiltin::CheckTensorInfo) == 20 &&
              static_cast<int>(SpecialBuiltin::MakeShape) == 24);

/// What the analyses (kind inference, tensor facts) know of the result of
/// a special builtin's inline form.
enum class ResultFact : uint8_t {
  /// Nothing beyond a call's (the builtin's own result).
  Unknown,
  /// None (null_value, match_shape).
  NoneValue,
  /// The first argument itself: its kinds and its tensor facts (copy).
  FirstArg,
  /// A bool when the argument is an int or bool; anything else raises
  /// (read_if_cond).
  Truth,
  /// scalar.*: a bool from a comparison or `not`, else an int from ints
  /// and bools, a float when an operand is a float.
  ScalarArithmetic,
  /// The first argument, a tensor of the rank and dtype the call checks
  /// (check_tensor_info).
  CheckedTensor,
};

/// How tier 1 (jit/baseline) runs a special builtin bound inline.
enum class Tier1Form : uint8_t {
  /// The call.
  Call,
  /// A register clear (null_value).
  ClearRegister,
  /// A call through the VM's cache of the call site (SiteHelper); the
  /// alloc_tensor hit inline first where allocTensorHitInlinable holds.
  SiteCall,
  /// The guard stencil, the call when it fails (check_tensor_info).
  TensorCheck,
  /// The scalar stencils (int fast path, fused forms).
  ScalarStencil,
};

/// Argument-count bounds that no call meets: the builtin has no inline
/// form in tier 2 (only its site call).
inline constexpr int8_t kNoInlineForm = -1;

/// One special builtin.
struct SpecialBuiltinInfo {
  SpecialBuiltin Id;
  std::string_view Name;
  /// The argument counts tier 2's inline form takes (a call with another
  /// count stays a call, which raises the arity error); kNoInlineForm:
  /// none.
  int8_t MinArgs, MaxArgs;
  /// Whether tier 2 inlines it only in the form `InlineForm` accepts
  /// (constants where it needs them).
  bool (*InlineForm)(InstrView I);
  /// Whether the flat lowering (large functions) inlines it too: not
  /// when its fast path keeps values across blocks or needs `select`.
  bool Flat;
  /// Whether code that runs it inline still counts its calls (the VM's
  /// callCount); the stats mark the others "not counted".
  bool Counted;
  /// The VM helper (vm/native_helpers.h) through which native code calls
  /// it with a call-site cache (vm/alloc_sites.h); empty: none.
  std::string_view SiteHelper;
  Tier1Form Tier1;
  ResultFact Result;
};

/// Whether a match_shape call has the form tier 2 inlines: n, the codes
/// and the values immediates, n at most 8, every code a MatchShapeCode
/// (runtime/shape_codes.h; a heap slot not negative).
bool matchShapeInlinable(InstrView I);
/// Whether a make_shape call has the form both tiers check against its
/// site inline: a result register, n an immediate of at most
/// ShapeObj::kInlineDims, every code UseImm or LoadShape (a heap slot not
/// negative) and every value an immediate.
bool makeShapeInlinable(InstrView I);
/// Whether a call of alloc_tensor has the form both JIT tiers check inline
/// against its call site (vm::reusedConstantView): a result register, the
/// storage in a register, the byte offset an immediate and the shape,
/// dtype and scope constants, so that every run of it passes the
/// arguments the site's view was made from.
bool allocTensorHitInlinable(InstrView I);

/// The row of `B` (the table is in lib/vm/special_builtins.cpp).
const SpecialBuiltinInfo &specialBuiltin(SpecialBuiltin B) noexcept;

/// The special builtin the standard function `Name` is, or None.
SpecialBuiltin specialBuiltinFor(std::string_view Name) noexcept;

/// Whether call `I` has a form tier 2 inlines builtin `B` in (its
/// argument count and, where the row has one, its InlineForm).
bool inlineFormApplies(SpecialBuiltin B, InstrView I);

/// The scalar operation a special builtin is, if it is one.
inline std::optional<kernels::scalar::Op> scalarOpOf(SpecialBuiltin B) {
  const int K =
      static_cast<int>(B) - static_cast<int>(SpecialBuiltin::ScalarAdd);
  if (K < 0 || K >= kernels::scalar::kNumOps)
    return std::nullopt;
  return static_cast<kernels::scalar::Op>(K);
}

/// The one count rule: a call of a function the VM counts
/// (VirtualMachine::countsAtCall) is counted by native code at the call
/// unless the code runs it as the inline form of a builtin whose row says
/// not Counted. `Inline` is the builtin the code inlines, or None.
inline bool countedAtCall(bool VMCounts, SpecialBuiltin Inline) {
  return VMCounts &&
         (Inline == SpecialBuiltin::None || specialBuiltin(Inline).Counted);
}

/// Whether every call of standard function `Name` is counted even when
/// native code runs it inline (false for the builtins that are not).
bool countedWhenInlined(std::string_view Name) noexcept;

/// The standard library's own function object of `B` (it lives as long as
/// the process), or null for None. The interpreter compares pool entries
/// with it: a user's replacement, registered with override, is called.
FunctionObj *standardSpecial(SpecialBuiltin B) noexcept;

} // namespace vmjit::vm

#endif // VMJIT_VM_SPECIAL_BUILTINS_H
