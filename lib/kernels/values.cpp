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
#include "vmjit/runtime/dtype_traits.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

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
  return visitDType(D, [&](auto Tag) -> Tensor {
    using T = typename decltype(Tag)::Type;
    if constexpr (!std::is_void_v<T>)
      return fillAs<T>(Shape, V, D);
    else
      unsupportedDType(kTensorFull, D,
                       "bool, int8..int64, uint8..uint64, float32 or float64");
  });
}

/// Element `P` of C++ type T as the scalar tensor.item gives back.
template <typename T> Any itemValue(const void *P) {
  if constexpr (std::is_same_v<T, bool>)
    return Any(*static_cast<const uint8_t *>(P) != 0);
  else if constexpr (std::is_floating_point_v<T>)
    return Any(double(*static_cast<const T *>(P)));
  else // uint64 above INT64_MAX wraps to a negative int
    return Any(int64_t(*static_cast<const T *>(P)));
}

Any item(DLTensor *X) {
  checkTensor(kTensorItem, 1, X);
  const int64_t N = numelOf(X);
  if (N != 1)
    valueError("{}: tensor of shape {} has {} elements, expected exactly 1",
               kTensorItem, shapeOf(X), N);
  const DLDataType D = X->dtype;
  const void *P = dataOf(X);
  return visitDType(D, [&](auto Tag) -> Any {
    using T = typename decltype(Tag)::Type;
    if constexpr (!std::is_void_v<T>)
      return itemValue<T>(P);
    else
      unsupportedDType(kTensorItem, D,
                       "bool, an integer dtype, float32 or float64");
  });
}

} // namespace

void registerValueFunctions(Registry &R) {
  addEntry<kTensorFull, &full>(R);
  addEntry<kTensorItem, &item>(R);
}

} // namespace vmjit::kernels
