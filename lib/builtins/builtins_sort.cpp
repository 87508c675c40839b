//===- builtins_sort.cpp - TVM's CPU sort, argsort and topk ---------------===//
//
// tvm.contrib.sort.sort, tvm.contrib.sort.argsort and tvm.contrib.sort.topk
// (Apache TVM's src/runtime/extra/contrib/sort/sort.cc): the functions that
// TVM-compiled CPU kernels of sort, argsort and topk look up by name and
// call with their input and output tensors. Each slice along the axis is
// sorted stably (equal values keep their order; topk takes the lower index
// first among equal values); NaN sorts as the largest value. Element types
// are TVM's: float16/32/64 and int32/64 (topk: also int8 and uint8).
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <span>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

/// An IEEE half-precision element, ordered by its value.
struct Half {
  uint16_t Bits;
  float value() const {
    const uint32_t Sign = uint32_t(Bits >> 15) << 31;
    const uint32_t Exp = (Bits >> 10) & 0x1f;
    uint32_t Man = Bits & 0x3ff;
    uint32_t Out;
    if (Exp == 0x1f) {
      Out = Sign | 0x7f800000u | (Man << 13); // inf, NaN
    } else if (Exp != 0) {
      Out = Sign | ((Exp + 112) << 23) | (Man << 13);
    } else if (Man == 0) {
      Out = Sign; // zero
    } else {
      // Subnormal: shift the mantissa up to normalize it.
      int E = 113;
      while (!(Man & 0x400)) {
        Man <<= 1;
        --E;
      }
      Out = Sign | (uint32_t(E) << 23) | ((Man & 0x3ff) << 13);
    }
    float F;
    std::memcpy(&F, &Out, sizeof F);
    return F;
  }
};

template <typename T> auto keyOf(T V) {
  if constexpr (std::is_same_v<T, Half>)
    return V.value();
  else
    return V;
}

/// A < B, with NaN above every other value (a strict weak order).
template <typename T> bool lessThan(T A, T B) {
  auto X = keyOf(A), Y = keyOf(B);
  if constexpr (std::is_floating_point_v<decltype(X)>)
    if (std::isnan(X) || std::isnan(Y))
      return !std::isnan(X) && std::isnan(Y);
  return X < Y;
}

/// The slices along one axis of a compact tensor: Before x Len x After.
struct Slices {
  int64_t Before = 1, Len = 0, After = 1;
};

/// The axis (negative counts from the end) as slices of `Shape`.
Slices slicesOf(const char *Fn, std::span<const int64_t> Shape, int64_t Axis) {
  const int64_t NDim = static_cast<int64_t>(Shape.size());
  const int64_t A = Axis < 0 ? Axis + NDim : Axis;
  if (A < 0 || A >= NDim)
    fail(Fn, fmt::format("axis {} is out of range for a tensor of rank {}",
                         Axis, NDim));
  Slices S;
  for (int64_t I = 0; I < NDim; ++I) {
    if (I < A)
      S.Before *= Shape[static_cast<size_t>(I)];
    else if (I > A)
      S.After *= Shape[static_cast<size_t>(I)];
  }
  S.Len = Shape[static_cast<size_t>(A)];
  return S;
}

/// A tensor argument: compact, on the CPU; its first element.
char *elements(const char *Fn, const DLTensor *T, std::string_view What) {
  if (T->device.device_type != kDLCPU)
    fail(Fn, fmt::format("{} is on device type {}; only CPU tensors are "
                         "supported",
                         What, static_cast<int>(T->device.device_type)));
  if (T->strides) {
    int64_t Expect = 1;
    for (int I = T->ndim - 1; I >= 0; --I) {
      if (T->shape[I] != 1 && T->strides[I] != Expect)
        fail(Fn, fmt::format("{} must be compact (it is strided)", What));
      Expect *= T->shape[I];
    }
  }
  return static_cast<char *>(T->data) + T->byte_offset;
}

std::span<const int64_t> dimsOf(const DLTensor *T) {
  return {T->shape, static_cast<size_t>(T->ndim)};
}

/// ValueError unless `Out` has the shape `Want`.
void needShape(const char *Fn, const DLTensor *Out,
               std::span<const int64_t> Want, std::string_view What) {
  auto Have = dimsOf(Out);
  if (!std::equal(Have.begin(), Have.end(), Want.begin(), Want.end()))
    fail(Fn, fmt::format("{} has shape {} but must have shape {}", What,
                         shapeString(Have), shapeString(Want)));
}

template <typename T> struct Tag { using Type = T; };

/// Calls Body(Tag<T>) for the element type `DT` among the sortable ones
/// (with int8 and uint8 when `Bytes`); TypeError otherwise.
template <typename F>
void withSortable(const char *Fn, DLDataType DT, std::string_view What,
                  bool Bytes, F &&Body) {
  if (DT == dtype::Float32)
    return Body(Tag<float>());
  if (DT == dtype::Float64)
    return Body(Tag<double>());
  if (DT == dtype::Int32)
    return Body(Tag<int32_t>());
  if (DT == dtype::Int64)
    return Body(Tag<int64_t>());
  if (DT == dtype::Float16)
    return Body(Tag<Half>());
  if (Bytes && DT == dtype::Int8)
    return Body(Tag<int8_t>());
  if (Bytes && DT == dtype::UInt8)
    return Body(Tag<uint8_t>());
  fail(Fn,
       fmt::format("{} of element type {} is not supported (float16, "
                   "float32, float64, int32, int64{})",
                   What, dtypeName(DT), Bytes ? ", int8, uint8" : ""),
       "TypeError");
}

/// Calls Body(Tag<T>) for an index output type: int32, int64, float32,
/// float64, or `Same` (the input's type) when given; TypeError otherwise.
template <typename F>
void withIndexType(const char *Fn, DLDataType DT,
                   std::optional<DLDataType> Same, F &&Body) {
  if (DT == dtype::Int32)
    return Body(Tag<int32_t>());
  if (DT == dtype::Int64)
    return Body(Tag<int64_t>());
  if (DT == dtype::Float32)
    return Body(Tag<float>());
  if (DT == dtype::Float64)
    return Body(Tag<double>());
  if (Same && DT == *Same && DT == dtype::Int8)
    return Body(Tag<int8_t>());
  if (Same && DT == *Same && DT == dtype::UInt8)
    return Body(Tag<uint8_t>());
  fail(Fn,
       fmt::format("indices of element type {} are not supported (int32, "
                   "int64, float32, float64)",
                   dtypeName(DT)),
       "TypeError");
}

/// The order of (index, value) pairs in a sorted slice: by value
/// (ascending or descending), then by index, which makes std::sort stable.
template <typename T> auto sortOrder(bool Ascend) {
  return [Ascend](const std::pair<int64_t, T> &A,
                  const std::pair<int64_t, T> &B) {
    if (Ascend ? lessThan(A.second, B.second) : lessThan(B.second, A.second))
      return true;
    if (Ascend ? lessThan(B.second, A.second) : lessThan(A.second, B.second))
      return false;
    return A.first < B.first;
  };
}

/// Sorts every slice of `In` stably and hands each sorted (index, value)
/// pair to Emit(flat output position, pair).
template <typename T, typename E>
void sortSlices(const T *In, const Slices &S, bool Ascend, E &&Emit) {
  std::vector<std::pair<int64_t, T>> Row(static_cast<size_t>(S.Len));
  const auto Before = sortOrder<T>(Ascend);
  for (int64_t I = 0; I < S.Before; ++I)
    for (int64_t J = 0; J < S.After; ++J) {
      const int64_t Base = I * S.Len * S.After + J;
      for (int64_t K = 0; K < S.Len; ++K)
        Row[static_cast<size_t>(K)] = {K, In[Base + K * S.After]};
      std::sort(Row.begin(), Row.end(), Before);
      for (int64_t K = 0; K < S.Len; ++K)
        Emit(Base + K * S.After, Row[static_cast<size_t>(K)]);
    }
}

/// tvm.contrib.sort.sort(input, output, axis, is_ascend): output = input
/// sorted along the axis (same shape and element type).
void sortBuiltin(DLTensor *In, DLTensor *Out, int64_t Axis, bool Ascend) {
  const char *Fn = "tvm.contrib.sort.sort";
  const Slices S = slicesOf(Fn, dimsOf(In), Axis);
  if (Out->dtype != In->dtype)
    fail(Fn,
         fmt::format("the output is {} but the input is {}",
                     dtypeName(Out->dtype), dtypeName(In->dtype)),
         "TypeError");
  needShape(Fn, Out, dimsOf(In), "the output");
  char *Src = elements(Fn, In, "the input");
  char *Dst = elements(Fn, Out, "the output");
  withSortable(Fn, In->dtype, "an input", false, [&](auto Tg) {
    using T = typename decltype(Tg)::Type;
    T *O = reinterpret_cast<T *>(Dst);
    sortSlices(reinterpret_cast<const T *>(Src), S, Ascend,
               [O](int64_t At, const auto &P) { O[At] = P.second; });
  });
}

/// tvm.contrib.sort.argsort(input, output, axis, is_ascend): output = the
/// indices that sort the input along the axis (int32, int64, float32 or
/// float64).
void argsortBuiltin(DLTensor *In, DLTensor *Out, int64_t Axis, bool Ascend) {
  const char *Fn = "tvm.contrib.sort.argsort";
  const Slices S = slicesOf(Fn, dimsOf(In), Axis);
  needShape(Fn, Out, dimsOf(In), "the output");
  char *Src = elements(Fn, In, "the input");
  char *Dst = elements(Fn, Out, "the output");
  withSortable(Fn, In->dtype, "an input", false, [&](auto Tg) {
    using T = typename decltype(Tg)::Type;
    withIndexType(Fn, Out->dtype, std::nullopt, [&](auto Ix) {
      using I = typename decltype(Ix)::Type;
      I *O = reinterpret_cast<I *>(Dst);
      sortSlices(
          reinterpret_cast<const T *>(Src), S, Ascend,
          [O](int64_t At, const auto &P) { O[At] = static_cast<I>(P.first); });
    });
  });
}

/// The k best of every slice (largest, or smallest when ascending; the
/// lower index first among equal values), in order.
template <typename T, typename I>
void topkSlices(const T *In, const Slices &S, int64_t K, bool Ascend, T *Values,
                I *Indices) {
  std::vector<std::pair<int64_t, T>> Row(static_cast<size_t>(S.Len));
  const int64_t Take = std::min(K, S.Len);
  const auto Better = sortOrder<T>(Ascend);
  for (int64_t B = 0; B < S.Before; ++B)
    for (int64_t J = 0; J < S.After; ++J) {
      const int64_t Src = B * S.Len * S.After + J;
      const int64_t Dst = B * K * S.After + J;
      for (int64_t X = 0; X < S.Len; ++X)
        Row[static_cast<size_t>(X)] = {X, In[Src + X * S.After]};
      std::partial_sort(Row.begin(), Row.begin() + Take, Row.end(), Better);
      for (int64_t X = 0; X < Take; ++X) {
        const auto &P = Row[static_cast<size_t>(X)];
        if (Indices)
          Indices[Dst + X * S.After] = static_cast<I>(P.first);
        if (Values)
          Values[Dst + X * S.After] = P.second;
      }
    }
}

/// tvm.contrib.sort.topk(input, [values,] [indices,] k, axis, ret_type,
/// is_ascend): ret_type "both" passes both outputs, "values" or "indices"
/// one. k < 1 means the whole axis. Outputs have the input's shape with k
/// along the axis (only the first min(k, length) are written).
void topkBuiltin(PackedArgs A, Any * /*Rv*/) {
  const char *Fn = "tvm.contrib.sort.topk";
  needArgs(Fn, A, 6, 7);
  DLTensor *In = arg<DLTensor *>(Fn, A, 0);
  const int32_t N = A.size();
  int64_t K = arg<int64_t>(Fn, A, N - 4);
  const int64_t Axis = arg<int64_t>(Fn, A, N - 3);
  const std::string RetType = arg<std::string>(Fn, A, N - 2);
  const bool Ascend = arg<bool>(Fn, A, N - 1);
  if (RetType != "both" && RetType != "values" && RetType != "indices")
    fail(Fn, fmt::format("ret_type '{}' is not one of \"both\", \"values\", "
                         "\"indices\"",
                         RetType));
  const int32_t Want = RetType == "both" ? 7 : 6;
  if (N != Want)
    fail(Fn,
         fmt::format("ret_type \"{}\" takes {} arguments but got {}", RetType,
                     Want, N),
         "TypeError");
  DLTensor *ValuesOut = nullptr, *IndicesOut = nullptr;
  if (RetType != "indices")
    ValuesOut = arg<DLTensor *>(Fn, A, 1);
  if (RetType != "values")
    IndicesOut = arg<DLTensor *>(Fn, A, RetType == "both" ? 2 : 1);

  const Slices S = slicesOf(Fn, dimsOf(In), Axis);
  if (K < 1)
    K = S.Len;
  std::vector<int64_t> OutShape(In->shape, In->shape + In->ndim);
  OutShape[static_cast<size_t>(Axis < 0 ? Axis + In->ndim : Axis)] = K;
  const char *Src = elements(Fn, In, "the input");
  char *Values = nullptr, *Indices = nullptr;
  if (ValuesOut) {
    if (ValuesOut->dtype != In->dtype)
      fail(Fn,
           fmt::format("the values output is {} but the input is {}",
                       dtypeName(ValuesOut->dtype), dtypeName(In->dtype)),
           "TypeError");
    needShape(Fn, ValuesOut, OutShape, "the values output");
    Values = elements(Fn, ValuesOut, "the values output");
  }
  if (IndicesOut) {
    needShape(Fn, IndicesOut, OutShape, "the indices output");
    Indices = elements(Fn, IndicesOut, "the indices output");
  }
  const DLDataType IndexType = IndicesOut ? IndicesOut->dtype : dtype::Int64;
  withSortable(Fn, In->dtype, "an input", true, [&](auto Tg) {
    using T = typename decltype(Tg)::Type;
    withIndexType(Fn, IndexType, In->dtype, [&](auto Ix) {
      using I = typename decltype(Ix)::Type;
      topkSlices(reinterpret_cast<const T *>(Src), S, K, Ascend,
                 reinterpret_cast<T *>(Values), reinterpret_cast<I *>(Indices));
    });
  });
}

} // namespace

void registerSortBuiltins(GlobalDef &D) {
  D.def("tvm.contrib.sort.sort", sortBuiltin)
      .def("tvm.contrib.sort.argsort", argsortBuiltin)
      .defPacked("tvm.contrib.sort.topk", topkBuiltin);
}

} // namespace vmjit::vm::builtin
