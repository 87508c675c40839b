//===- vmjit/runtime/aligned_call.h - Aligned kernel calls ------*- C++ -*-===//
//
// TVM's kernels assume 64-byte aligned tensor data (`llvm.assume` align 64
// in their IR), and code compiled for a CPU with wide vector units relies
// on it. vmjit's own tensors are aligned; one from outside (a NumPy array
// passed without a copy, a view at an odd offset) may not be. These calls
// make a safe call with every CPU tensor argument aligned: an unaligned
// compact one is copied into aligned storage for the call and copied back
// where the call changed it.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_ALIGNED_CALL_H
#define VMJIT_RUNTIME_ALIGNED_CALL_H

#include "vmjit/runtime/c_api.h"

#include <cstddef>
#include <cstdint>
#include <dlpack/dlpack.h>

namespace vmjit {

/// The alignment TVM's kernels assume of tensor data.
inline constexpr size_t kKernelDataAlignment = 64;

/// The DLTensor an argument holds (a Tensor object or a DLTensor pointer),
/// or null.
inline const DLTensor *argumentTensor(const VMJITAny &A) noexcept {
  if (A.type_index == kVMJITTensor)
    return reinterpret_cast<const DLTensor *>(
        reinterpret_cast<const char *>(A.v_obj) + sizeof(VMJITObject));
  if (A.type_index == kVMJITDLTensorPtr)
    return static_cast<const DLTensor *>(A.v_ptr);
  return nullptr;
}

/// Whether a tensor's data (with its byte offset) is where a kernel
/// assuming kKernelDataAlignment may read it: aligned, or not on the CPU
/// (left to that device's kernels).
inline bool tensorDataAligned(const DLTensor &T) noexcept {
  const uintptr_t Data =
      reinterpret_cast<uintptr_t>(T.data) + static_cast<uintptr_t>(T.byte_offset);
  // The device is read only for the rare unaligned address.
  return Data % kKernelDataAlignment == 0 || T.device.device_type != kDLCPU;
}

/// Whether `T`'s strides are null or those of a compact row-major layout.
VMJIT_DLL bool isCompactTensor(const DLTensor &T) noexcept;

/// Whether every tensor argument of a call is aligned (the fast check made
/// before each call of a compiled kernel).
inline bool tensorArgumentsAligned(const VMJITAny *Args, int32_t Num) noexcept {
  for (int32_t I = 0; I < Num; ++I)
    if (const DLTensor *T = argumentTensor(Args[I]))
      if (!tensorDataAligned(*T)) [[unlikely]]
        return false;
  return true;
}

/// What callWithAlignedCopies did.
enum class AlignedCallKind {
  /// Unaligned tensors were copied into aligned storage for the call.
  Copied,
  /// An unaligned tensor could not be copied (strided, or more than the
  /// copy may take): the call went to `Fallback`.
  FellBack,
};

/// Calls `Entry` (a free safe-call entry, self ignored) with `Args`, each
/// unaligned compact CPU tensor replaced by an aligned copy (one copy per
/// distinct data address, so arguments that alias still alias); after the
/// call, each copy whose bytes changed is written back. When an unaligned
/// tensor is strided, `Fallback` (code that needs no alignment: TVM's own
/// machine code) is called instead with the arguments as they are; when
/// there is none, the call fails with a ValueError naming the argument.
/// Sets `Kind` to what happened. A safe call: 0, or -1 with an error raised.
VMJIT_DLL int callWithAlignedCopies(VMJITSafeCallType Entry,
                                    VMJITSafeCallType Fallback,
                                    const VMJITAny *Args, int32_t Num,
                                    VMJITAny *Result,
                                    AlignedCallKind &Kind) noexcept;

} // namespace vmjit

#endif // VMJIT_RUNTIME_ALIGNED_CALL_H
