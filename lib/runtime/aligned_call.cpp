//===- aligned_call.cpp - Kernels that need aligned data ------------------===//
//
// See include/vmjit/runtime/aligned_call.h.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/aligned_call.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/error.h"

#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <vector>

namespace vmjit {
namespace {

/// Bytes of `T`'s data if it is compact (strides null or row-major), else
/// nullopt.
std::optional<uint64_t> compactBytes(const DLTensor &T) {
  uint64_t Elems = 1;
  int64_t Expected = 1;
  for (int I = T.ndim - 1; I >= 0; --I) {
    if (T.strides && T.shape[I] != 1 && T.strides[I] != Expected)
      return std::nullopt;
    Expected *= T.shape[I];
    Elems *= static_cast<uint64_t>(T.shape[I]);
  }
  return tensorDataBytes(Elems, T.dtype);
}

struct FreeDeleter {
  void operator()(void *P) const noexcept { std::free(P); }
};

/// One aligned copy of an unaligned tensor's data.
struct AlignedCopy {
  const char *Original; ///< data + byte_offset of the tensor copied
  uint64_t Bytes;
  std::unique_ptr<void, FreeDeleter> Storage;
};

/// The aligned copy of `T`'s data among `Copies`, made on first use.
AlignedCopy &copyFor(std::vector<AlignedCopy> &Copies, const DLTensor &T,
                     uint64_t Bytes) {
  const char *Data = static_cast<const char *>(T.data) + T.byte_offset;
  for (AlignedCopy &C : Copies)
    if (C.Original == Data && C.Bytes == Bytes)
      return C;
  const size_t Rounded =
      (Bytes + kKernelDataAlignment - 1) / kKernelDataAlignment *
      kKernelDataAlignment;
  void *Storage = std::aligned_alloc(kKernelDataAlignment,
                                     Rounded ? Rounded : kKernelDataAlignment);
  if (!Storage)
    throwError("MemoryError",
               fmt::format("cannot allocate {} bytes to align a kernel's "
                           "tensor argument",
                           Bytes));
  std::memcpy(Storage, Data, Bytes);
  Copies.push_back({Data, Bytes, std::unique_ptr<void, FreeDeleter>(Storage)});
  return Copies.back();
}

} // namespace

bool isCompactTensor(const DLTensor &T) noexcept {
  return compactBytes(T).has_value();
}

int callWithAlignedCopies(VMJITSafeCallType Entry, VMJITSafeCallType Fallback,
                          const VMJITAny *Args, int32_t Num, VMJITAny *Result,
                          AlignedCallKind &Kind) noexcept {
  std::vector<VMJITAny> Aligned(Args, Args + Num);
  std::vector<DLTensor> Views(static_cast<size_t>(Num));
  std::vector<AlignedCopy> Copies;
  bool Strided = false;
  const int Rc = safeCallGuard([&] {
    for (int32_t I = 0; I < Num && !Strided; ++I) {
      const DLTensor *T = argumentTensor(Args[I]);
      if (!T || tensorDataAligned(*T))
        continue;
      std::optional<uint64_t> Bytes = compactBytes(*T);
      if (!Bytes) {
        if (!Fallback)
          throwError("ValueError",
                     fmt::format("argument {}: a kernel compiled for aligned "
                                 "data got a strided tensor at an address "
                                 "not {}-byte aligned",
                                 I, kKernelDataAlignment));
        Strided = true;
        break;
      }
      Views[I] = *T;
      Views[I].data = copyFor(Copies, *T, *Bytes).Storage.get();
      Views[I].byte_offset = 0;
      Aligned[I].type_index = kVMJITDLTensorPtr;
      Aligned[I].zero_padding = 0;
      Aligned[I].v_ptr = &Views[I];
    }
  });
  if (Rc != 0)
    return Rc;
  if (Strided) {
    Kind = AlignedCallKind::FellBack;
    return Fallback(nullptr, Args, Num, Result);
  }
  Kind = AlignedCallKind::Copied;
  const int CallRc = Entry(nullptr, Aligned.data(), Num, Result);
  // Written back only where the kernel changed the bytes: an input may be
  // read-only memory.
  for (const AlignedCopy &C : Copies)
    if (std::memcmp(C.Original, C.Storage.get(), C.Bytes) != 0)
      std::memcpy(const_cast<char *>(C.Original), C.Storage.get(), C.Bytes);
  return CallRc;
}

} // namespace vmjit
