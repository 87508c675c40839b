//===- vmjit/vm/feedback.h - Type feedback of one site ----------*- C++ -*-===//
//
// What the interpreter and tier 1's counted code record, at a parameter or
// at the result of a call, for tier 2 to speculate on
// (docs/jit.md#speculation-and-deoptimization): the kinds of value seen
// (vm::kind bits) and, for tensors, the one rank and dtype they had.
// Tier 1's stencils (jit/baseline/stencils.cpp) write the same slots.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_FEEDBACK_H
#define VMJIT_VM_FEEDBACK_H

#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/native_code.h"

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace vmjit::vm {

/// One feedback site. Threads sharing it race: relaxed loads and stores,
/// no read-modify-write (a lost update only costs a deoptimization later).
struct FeedbackSlot {
  /// The vm::kind bits of every value seen.
  uint8_t Kinds;
  uint8_t Reserved[7];
  /// The objects seen: 0 none; feedback::kMixed objects that are not all
  /// tensors of one rank and dtype; else the tensorWord they all had.
  uint64_t Tensor;
};
// Tier 1's stencils address the fields.
static_assert(offsetof(FeedbackSlot, Kinds) == 0 &&
              offsetof(FeedbackSlot, Tensor) == 8 &&
              sizeof(FeedbackSlot) == 16);

namespace feedback {

/// FeedbackSlot::Tensor: objects other than tensors of one rank and dtype.
inline constexpr uint64_t kMixed = ~uint64_t(0);

/// The rank and dtype of a tensor in one word: never 0, never kMixed.
inline uint64_t tensorWord(int32_t NDim, DLDataType DType) noexcept {
  const auto Bits = std::bit_cast<uint32_t>(DType);
  const uint64_t W = (uint64_t(uint32_t(NDim)) << 32) | Bits;
  return W == 0 ? kMixed : W;
}
inline int32_t rankOf(uint64_t Word) noexcept {
  return static_cast<int32_t>(Word >> 32);
}
/// The dtype's four bytes as JIT code compares them.
inline uint32_t dtypeBitsOf(uint64_t Word) noexcept {
  return static_cast<uint32_t>(Word);
}
/// Whether `Word` names one rank and dtype.
inline bool oneTensorShape(uint64_t Word) noexcept {
  return Word != 0 && Word != kMixed;
}

/// The word of value `V` at an object (not a scalar, not a view): its
/// tensorWord when it is a tensor, else kMixed.
inline uint64_t objectWord(const VMJITAny &V) noexcept {
  if (V.type_index != kVMJITTensor)
    return kMixed;
  const auto *T = reinterpret_cast<const DLTensor *>(
      reinterpret_cast<const char *>(V.v_obj) + kTensorDLTensorOffset);
  return tensorWord(T->ndim, T->dtype);
}

/// Adds value `V` to slot `S`.
inline void note(FeedbackSlot &S, const VMJITAny &V) noexcept {
  kind::note(S.Kinds, V.type_index);
  if (V.type_index < kVMJITStaticObjectBegin)
    return;
  std::atomic_ref<uint64_t> A(S.Tensor);
  const uint64_t Seen = A.load(std::memory_order_relaxed);
  if (Seen == kMixed)
    return;
  const uint64_t W = objectWord(V);
  if (Seen != W) [[unlikely]]
    A.store(Seen == 0 ? W : kMixed, std::memory_order_relaxed);
}

} // namespace feedback
} // namespace vmjit::vm

#endif // VMJIT_VM_FEEDBACK_H
