//===- KernelTestUtil.h - Helpers of the standard library tests -*- C++ -*-===//
//
// A private registry holding scalar.*, tensor.* and kernel.*, calls by
// name, tensors from values and back, and the Error a call throws.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_KERNELS_KERNELTESTUTIL_H
#define VMJIT_UNITTESTS_KERNELS_KERNELTESTUTIL_H

#include "vmjit/kernels/standard_library.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace vmjit::kernels::test {

/// A registry of its own (not the global one) with the whole library.
inline Registry &testRegistry() {
  static Registry *R = [] {
    auto *Reg = new Registry();
    registerScalarFunctions(*Reg);
    registerTensorFunctions(*Reg);
    return Reg;
  }();
  return *R;
}

inline Function fn(const std::string &Name) {
  auto F = testRegistry().find(Name);
  if (!F) {
    ADD_FAILURE() << "no function " << Name;
    return Function();
  }
  return *F;
}

/// Calls `Name` with the arguments converted to views.
template <typename... A> Any call(const std::string &Name, A &&...Args) {
  return fn(Name)(std::forward<A>(Args)...);
}

/// The Error `Body` throws (a test failure if it throws none).
template <typename F> Error errorOf(F &&Body) {
  try {
    Body();
  } catch (const Error &E) {
    return E;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error("None", "");
}

template <typename T> constexpr DLDataType dtypeFor() {
  if constexpr (std::is_same_v<T, float>)
    return dtype::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return dtype::Float64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtype::Int32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return dtype::Int64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return dtype::Int8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return dtype::Int16;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return dtype::UInt8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return dtype::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return dtype::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return dtype::UInt64;
  else if constexpr (std::is_same_v<T, bool>)
    return dtype::Bool;
}

/// A tensor of `Shape` holding `Values` (row-major).
template <typename T>
Tensor make(std::vector<int64_t> Shape, std::vector<T> Values) {
  Tensor X = Tensor::empty(Shape, dtypeFor<T>());
  EXPECT_EQ(size_t(X.numel()), Values.size()) << "test tensor size";
  for (size_t I = 0; I < Values.size(); ++I)
    X.data<T>()[I] = Values[I];
  return X;
}

/// A tensor of `Shape` holding 0, 1, 2, ... (times `Scale`, plus `Offset`).
template <typename T>
Tensor iota(std::vector<int64_t> Shape, double Scale = 1, double Offset = 0) {
  Tensor X = Tensor::empty(Shape, dtypeFor<T>());
  for (int64_t I = 0; I < X.numel(); ++I)
    X.data<T>()[I] = T(double(I) * Scale + Offset);
  return X;
}

template <typename T> std::vector<T> values(const Tensor &X) {
  EXPECT_EQ(X.dtype(), dtypeFor<T>()) << "dtype of the tensor read back";
  return std::vector<T>(X.data<T>(), X.data<T>() + X.numel());
}

inline std::vector<int64_t> shapeOf(const Tensor &X) {
  return std::vector<int64_t>(X.shape().begin(), X.shape().end());
}

inline Tensor tensorOf(const Any &A) { return A.cast<Tensor>(); }

} // namespace vmjit::kernels::test

#endif // VMJIT_UNITTESTS_KERNELS_KERNELTESTUTIL_H
