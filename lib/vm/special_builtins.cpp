//===- special_builtins.cpp - The table of special builtins --------------===//
//
// The rows of vm/special_builtins.h and the checks of the forms tier 2
// inlines.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/special_builtins.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/shape_codes.h"
#include "vmjit/vm/native_helpers.h"

#include <array>
#include <climits>
#include <iterator>

namespace vmjit::vm {

namespace {

using F = ResultFact;
using T1 = Tier1Form;
constexpr int8_t kAnyCount = INT8_MAX;

// Id, Name, MinArgs, MaxArgs, InlineForm, Flat, Counted, SiteHelper, Tier1,
// Result.
constexpr SpecialBuiltinInfo kSpecialBuiltins[] = {
    {SpecialBuiltin::None, "", kNoInlineForm, kNoInlineForm, nullptr, false,
     true, "", T1::Call, F::Unknown},
    {SpecialBuiltin::Copy, "vm.builtin.copy", 1, 1, nullptr, true, false, "",
     T1::Call, F::FirstArg},
    {SpecialBuiltin::ReadIfCond, "vm.builtin.read_if_cond", 1, 1, nullptr, true,
     false, "", T1::Call, F::Truth},
    // Its fast path keeps values across blocks: promoted functions only.
    {SpecialBuiltin::TupleGetItem, "vm.builtin.tuple_getitem", 2, 2, nullptr,
     false, true, "", T1::Call, F::Unknown},
    // TVM's compiler emits it after the last use of every value: the
    // register is cleared (the old value released), no call is made.
    {SpecialBuiltin::NullValue, "vm.builtin.null_value", 0, 0, nullptr, true,
     true, "", T1::ClearRegister, F::NoneValue},
// The scalar operations, in the order of their table (kernels/scalar_ops.h);
// min and max need `select`, which FastISel refuses: not in flat functions.
#define VMJIT_SPECIAL_SCALAR_ROW(Enum, Name, Arity)                            \
  {SpecialBuiltin::Scalar##Enum,                                               \
   Name,                                                                       \
   Arity,                                                                      \
   Arity,                                                                      \
   nullptr,                                                                    \
   kernels::scalar::Op::Enum != kernels::scalar::Op::Min &&                    \
       kernels::scalar::Op::Enum != kernels::scalar::Op::Max,                  \
   false,                                                                      \
   "",                                                                         \
   T1::ScalarStencil,                                                          \
   F::ScalarArithmetic},
    VMJIT_SCALAR_OPS(VMJIT_SPECIAL_SCALAR_ROW)
#undef VMJIT_SPECIAL_SCALAR_ROW
    // check_tensor_info(x, ndim, [dtype or None,] text).
    {SpecialBuiltin::CheckTensorInfo, "vm.builtin.check_tensor_info", 3, 4,
     nullptr, true, true, "", T1::TensorCheck, F::CheckedTensor},
    {SpecialBuiltin::MatchShape, "vm.builtin.match_shape", 0, kAnyCount,
     matchShapeInlinable, true, true, "", T1::Call, F::Unknown},
    // The site's view inline when the arguments are constants; the call
    // through the site's cache otherwise.
    {SpecialBuiltin::AllocTensor, "vm.builtin.alloc_tensor", 0, kAnyCount,
     allocTensorHitInlinable, true, true, helper::vmjit_jit_alloc_tensor,
     T1::SiteCall, F::Unknown},
    {SpecialBuiltin::AllocStorage, "vm.builtin.alloc_storage", kNoInlineForm,
     kNoInlineForm, nullptr, true, true, helper::vmjit_jit_alloc_storage,
     T1::SiteCall, F::Unknown},
    {SpecialBuiltin::MakeShape, "vm.builtin.make_shape", 0, kAnyCount,
     makeShapeInlinable, true, true, helper::vmjit_jit_make_shape, T1::SiteCall,
     F::Unknown},
};

// A row per builtin, each at its own number.
constexpr bool rowsInOrder() {
  if (std::size(kSpecialBuiltins) != kNumSpecialBuiltins)
    return false;
  for (int K = 0; K < kNumSpecialBuiltins; ++K)
    if (static_cast<int>(kSpecialBuiltins[K].Id) != K)
      return false;
  return true;
}
static_assert(rowsInOrder());

} // namespace

const SpecialBuiltinInfo &specialBuiltin(SpecialBuiltin B) noexcept {
  return kSpecialBuiltins[static_cast<size_t>(B)];
}

SpecialBuiltin specialBuiltinFor(std::string_view Name) noexcept {
  if (Name.empty())
    return SpecialBuiltin::None;
  for (const SpecialBuiltinInfo &Row : kSpecialBuiltins)
    if (Row.Name == Name)
      return Row.Id;
  return SpecialBuiltin::None;
}

bool inlineFormApplies(SpecialBuiltin B, InstrView I) {
  const SpecialBuiltinInfo &Row = specialBuiltin(B);
  const int64_t N = I.callNumArgs();
  return B != SpecialBuiltin::None && N >= Row.MinArgs && N <= Row.MaxArgs &&
         (!Row.InlineForm || Row.InlineForm(I));
}

bool countedWhenInlined(std::string_view Name) noexcept {
  return specialBuiltin(specialBuiltinFor(Name)).Counted;
}

FunctionObj *standardSpecial(SpecialBuiltin B) noexcept {
  static const std::array<FunctionObj *, kNumSpecialBuiltins> Standard = [] {
    std::array<FunctionObj *, kNumSpecialBuiltins> Out{};
    for (int K = 1; K < kNumSpecialBuiltins; ++K) {
      std::optional<Function> Fn = standardFunction(kSpecialBuiltins[K].Name);
      Out[static_cast<size_t>(K)] = Fn ? Fn->get() : nullptr;
    }
    return Out;
  }();
  return Standard[static_cast<size_t>(B)];
}

bool matchShapeInlinable(InstrView I) {
  const int64_t N = I.callNumArgs();
  if (N < 4 || I.callArg(2).kind() != ArgKind::Immediate)
    return false;
  const int64_t Dims = I.callArg(2).value();
  if (Dims < 0 || Dims > 8 || N != 4 + 2 * Dims)
    return false;
  for (int64_t D = 0; D < Dims; ++D) {
    Arg Code = I.callArg(3 + 2 * D), Imm = I.callArg(4 + 2 * D);
    if (Code.kind() != ArgKind::Immediate || Imm.kind() != ArgKind::Immediate ||
        !isMatchShapeCode(Code.value()) ||
        (matchShapeUsesHeap(Code.value()) && Imm.value() < 0))
      return false;
  }
  return true;
}

bool makeShapeInlinable(InstrView I) {
  const int64_t N = I.callNumArgs();
  if (I.callDst() == kVoidRegister || N < 2 ||
      I.callArg(1).kind() != ArgKind::Immediate)
    return false;
  const int64_t Dims = I.callArg(1).value();
  if (Dims < 0 || Dims > static_cast<int64_t>(ShapeObj::kInlineDims) ||
      N != 2 + 2 * Dims)
    return false;
  constexpr auto UseImm = static_cast<int64_t>(MakeShapeCode::UseImm);
  constexpr auto LoadShape = static_cast<int64_t>(MakeShapeCode::LoadShape);
  for (int64_t D = 0; D < Dims; ++D) {
    Arg Code = I.callArg(2 + 2 * D), Imm = I.callArg(3 + 2 * D);
    if (Code.kind() != ArgKind::Immediate || Imm.kind() != ArgKind::Immediate ||
        (Code.value() != UseImm && Code.value() != LoadShape) ||
        (Code.value() == LoadShape && Imm.value() < 0))
      return false;
  }
  return true;
}

bool allocTensorHitInlinable(InstrView I) {
  const int64_t N = I.callNumArgs();
  if (I.callDst() == kVoidRegister || (N != 4 && N != 5))
    return false;
  const Arg Storage = I.callArg(0);
  if (Storage.kind() != ArgKind::Register || Storage.value() == kVMRegister ||
      Storage.value() == kVoidRegister ||
      I.callArg(1).kind() != ArgKind::Immediate)
    return false;
  for (int64_t K = 2; K < N; ++K)
    if (I.callArg(K).kind() != ArgKind::ConstIdx)
      return false;
  return true;
}

} // namespace vmjit::vm
