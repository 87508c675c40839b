//===- values.cpp - tensor.full and tensor.item ---------------------------===//
//
// Between scalar values and tensors. tensor.full(shape, value, dtype) fills
// a new tensor (shape: a Shape or an int; dtype: a DataType or its name;
// value: int, bool or float) for bool, int8..int64, uint8..uint64, float32
// and float64. tensor.item(x) reads a one-element tensor back as int, float
// or bool.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <algorithm>
#include <cmath>

namespace vmjit::kernels {
namespace {

using namespace detail;

constexpr char kTensorFull[] = "tensor.full";
constexpr char kTensorItem[] = "tensor.item";

/// The fill value converted to T (see docs/kernels.md).
template <typename T> T fillValue(const VMJITAny &V, DLDataType D) {
  const bool IsFloat = V.type_index == kVMJITFloat;
  const int64_t I =
      V.type_index == kVMJITBool ? int64_t(V.v_int64 != 0) : V.v_int64;
  if constexpr (std::is_same_v<T, bool>) {
    return IsFloat ? V.v_float64 != 0.0 : I != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return IsFloat ? T(V.v_float64) : T(I);
  } else {
    if (!IsFloat)
      return T(I); // modulo 2^bits
    // A float converts by truncation and must fit.
    const double Tr = std::trunc(V.v_float64);
    constexpr int Bits = int(sizeof(T) * 8) - (std::is_signed_v<T> ? 1 : 0);
    const double Lo = std::is_signed_v<T> ? -std::ldexp(1.0, Bits) : 0.0;
    const double Hi = std::ldexp(1.0, Bits); // exclusive
    if (!(Tr >= Lo && Tr < Hi))
      valueError("{}: value {} does not fit {}", kTensorFull, V.v_float64,
                 dtypeName(D));
    return T(Tr);
  }
}

template <typename T>
Tensor fillAs(std::span<const int64_t> Shape, const VMJITAny &V, DLDataType D) {
  const T Value = fillValue<T>(V, D);
  Tensor Result = Tensor::empty(Shape, D);
  std::fill_n(Result.data<T>(), Result.numel(), Value);
  return Result;
}

Tensor full(AnyView ShapeArg, AnyView Value, DLDataType D) {
  int64_t Scratch;
  std::span<const int64_t> Shape = shapeArg(kTensorFull, 1, ShapeArg, Scratch);
  for (int64_t Dim : Shape)
    if (Dim < 0)
      valueError("{}: shape {} has a negative dimension", kTensorFull,
                 shapeString(Shape));
  const VMJITAny &V = Value.raw();
  if (V.type_index != kVMJITInt && V.type_index != kVMJITBool &&
      V.type_index != kVMJITFloat)
    vmjit::detail::throwArgTypeError(kTensorFull, 2, "int, float or bool",
                                     Value);
  if (D.lanes == 1) {
    switch (D.code) {
    case kDLBool:
      if (D.bits == 8)
        return fillAs<bool>(Shape, V, D);
      break;
    case kDLFloat:
      if (D.bits == 32)
        return fillAs<float>(Shape, V, D);
      if (D.bits == 64)
        return fillAs<double>(Shape, V, D);
      break;
    case kDLInt:
      switch (D.bits) {
      case 8:
        return fillAs<int8_t>(Shape, V, D);
      case 16:
        return fillAs<int16_t>(Shape, V, D);
      case 32:
        return fillAs<int32_t>(Shape, V, D);
      case 64:
        return fillAs<int64_t>(Shape, V, D);
      }
      break;
    case kDLUInt:
      switch (D.bits) {
      case 8:
        return fillAs<uint8_t>(Shape, V, D);
      case 16:
        return fillAs<uint16_t>(Shape, V, D);
      case 32:
        return fillAs<uint32_t>(Shape, V, D);
      case 64:
        return fillAs<uint64_t>(Shape, V, D);
      }
      break;
    }
  }
  unsupportedDType(kTensorFull, D,
                   "bool, int8..int64, uint8..uint64, float32 or float64");
}

Any item(DLTensor *X) {
  checkTensor(kTensorItem, 1, X);
  const int64_t N = numelOf(X);
  if (N != 1)
    valueError("{}: tensor of shape {} has {} elements, expected exactly 1",
               kTensorItem, shapeOf(X), N);
  const DLDataType D = X->dtype;
  const void *P = dataOf(X);
  switch (D.code) {
  case kDLBool:
    if (D.bits == 8)
      return Any(*static_cast<const uint8_t *>(P) != 0);
    break;
  case kDLFloat:
    if (D.bits == 32)
      return Any(double(*static_cast<const float *>(P)));
    if (D.bits == 64)
      return Any(*static_cast<const double *>(P));
    break;
  case kDLInt:
    switch (D.bits) {
    case 8:
      return Any(int64_t(*static_cast<const int8_t *>(P)));
    case 16:
      return Any(int64_t(*static_cast<const int16_t *>(P)));
    case 32:
      return Any(int64_t(*static_cast<const int32_t *>(P)));
    case 64:
      return Any(*static_cast<const int64_t *>(P));
    }
    break;
  case kDLUInt:
    switch (D.bits) {
    case 8:
      return Any(int64_t(*static_cast<const uint8_t *>(P)));
    case 16:
      return Any(int64_t(*static_cast<const uint16_t *>(P)));
    case 32:
      return Any(int64_t(*static_cast<const uint32_t *>(P)));
    case 64: // above INT64_MAX wraps to a negative int
      return Any(int64_t(*static_cast<const uint64_t *>(P)));
    }
    break;
  }
  unsupportedDType(kTensorItem, D,
                   "bool, an integer dtype, float32 or float64");
}

} // namespace

void registerValueFunctions(Registry &R) {
  addEntry<kTensorFull, &full>(R);
  addEntry<kTensorItem, &item>(R);
}

} // namespace vmjit::kernels
