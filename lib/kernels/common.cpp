//===- common.cpp - Tensor argument checks of the standard library --------===//

#include "common.h"

namespace vmjit::kernels::detail {

void checkTensor(const char *Fn, int Index, const DLTensor *T) {
  if (!T)
    typeError("{}: argument {} expected Tensor but got a null tensor pointer",
              Fn, Index);
  if (T->device.device_type != kDLCPU)
    valueError("{}: argument {} must be a CPU tensor (device type {})", Fn,
               Index, int(T->device.device_type));
  if (T->dtype.lanes != 1)
    valueError("{}: argument {} has dtype {}; vector dtypes are not supported",
               Fn, Index, dtypeName(T->dtype));
  if (!isByteAligned(T->dtype))
    valueError("{}: argument {} has dtype {}; dtypes packed several to a byte "
               "are not supported",
               Fn, Index, dtypeName(T->dtype));
  if (T->strides) {
    int64_t Expected = 1;
    for (int I = T->ndim - 1; I >= 0; --I) {
      if (T->shape[I] != 1 && T->strides[I] != Expected)
        valueError("{}: argument {} must be a compact (contiguous) tensor", Fn,
                   Index);
      Expected *= T->shape[I];
    }
  }
  if (!T->data && numelOf(T) != 0)
    valueError("{}: argument {} has no data", Fn, Index);
}

void checkOut(const char *Fn, int Index, const DLTensor *Out,
              std::span<const int64_t> Shape, DLDataType DType) {
  checkTensor(Fn, Index, Out);
  if (!sameShape(Out, Shape) || Out->dtype != DType)
    valueError("{}: out has shape {} and dtype {}, expected shape {} and "
               "dtype {}",
               Fn, shapeOf(Out), dtypeName(Out->dtype), shapeString(Shape),
               dtypeName(DType));
}

bool overlaps(const DLTensor *A, const DLTensor *B) {
  auto Begin = [](const DLTensor *T) {
    return reinterpret_cast<uintptr_t>(dataOf(T));
  };
  auto End = [&](const DLTensor *T) {
    return Begin(T) +
           uintptr_t(tensorDataBytes(uint64_t(numelOf(T)), T->dtype));
  };
  if (Begin(A) == End(A) || Begin(B) == End(B))
    return false;
  return Begin(A) < End(B) && Begin(B) < End(A);
}

void checkAlias(const char *Fn, int Index, const DLTensor *In,
                const DLTensor *Out, bool AllowExact) {
  if (!overlaps(In, Out))
    return;
  if (AllowExact && dataOf(In) == dataOf(Out) && numelOf(In) == numelOf(Out) &&
      dtypeBytes(In->dtype) == dtypeBytes(Out->dtype))
    return;
  valueError("{}: out overlaps argument {}{}", Fn, Index,
             AllowExact ? " (only an input that is exactly out may alias it)"
                        : "");
}

void checkSameDType(const char *Fn, const DLTensor *A, const DLTensor *B) {
  if (A->dtype != B->dtype)
    valueError("{}: dtypes {} and {} do not match (shapes {} and {})", Fn,
               dtypeName(A->dtype), dtypeName(B->dtype), shapeOf(A),
               shapeOf(B));
}

void unsupportedDType(const char *Fn, DLDataType T, const char *Expected) {
  valueError("{}: dtype {} is not supported (expected {})", Fn, dtypeName(T),
             Expected);
}

std::span<const int64_t> shapeArg(const char *Fn, int Index, const AnyView &V,
                                  int64_t &Scratch) {
  const VMJITAny &Raw = V.raw();
  if (Raw.type_index == kVMJITShape) {
    auto *Cell = reinterpret_cast<const VMJITShapeCell *>(
        reinterpret_cast<const char *>(Raw.v_obj) + sizeof(VMJITObject));
    return {Cell->data, Cell->size};
  }
  if (Raw.type_index == kVMJITInt) {
    Scratch = Raw.v_int64;
    return {&Scratch, 1};
  }
  vmjit::detail::throwArgTypeError(Fn, Index, "Shape or int", V);
}

} // namespace vmjit::kernels::detail
