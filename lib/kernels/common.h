//===- common.h - Shared helpers of the CPU standard library ----*- C++ -*-===//
//
// Internal to lib/kernels: error helpers, typed free safe-call entries,
// tensor argument checks (compact CPU tensors, out = expected shape and
// dtype, overlap rules), dtype dispatch and the per-family registration
// functions that register.cpp calls.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_KERNELS_COMMON_H
#define VMJIT_LIB_KERNELS_COMMON_H

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/function.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"

#include <cstdint>
#include <fmt/format.h>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

/// Tells GCC the iterations of the next loop are independent (ivdep).
/// Nothing under clang (the fuzz builds): its vectorizer checks aliasing
/// at run time, and its loop hint warns wherever instrumentation prevents
/// vectorizing.
#if defined(__clang__)
#define VMJIT_IVDEP
#else
#define VMJIT_IVDEP _Pragma("GCC ivdep")
#endif

namespace vmjit::kernels {

//===----------------------------------------------------------------------===//
// Registration of each family (one source file each).
//===----------------------------------------------------------------------===//

void registerElementwiseFunctions(Registry &R);
void registerMatmulFunctions(Registry &R);
void registerSoftmaxFunctions(Registry &R);
void registerNormFunctions(Registry &R);
void registerShapeFunctions(Registry &R);
void registerReduceFunctions(Registry &R);
void registerValueFunctions(Registry &R);

namespace detail {

//===----------------------------------------------------------------------===//
// Errors.
//===----------------------------------------------------------------------===//

template <typename... A>
[[noreturn]] void valueError(fmt::format_string<A...> Fmt, A &&...Args) {
  throwError("ValueError", fmt::format(Fmt, std::forward<A>(Args)...));
}
template <typename... A>
[[noreturn]] void typeError(fmt::format_string<A...> Fmt, A &&...Args) {
  throwError("TypeError", fmt::format(Fmt, std::forward<A>(Args)...));
}

inline std::string shapeOf(const DLTensor *T) {
  return shapeString(std::span<const int64_t>(T->shape, size_t(T->ndim)));
}
inline std::span<const int64_t> dimsOf(const DLTensor *T) {
  return {T->shape, size_t(T->ndim)};
}
inline int64_t numelOf(const DLTensor *T) {
  int64_t N = 1;
  for (int I = 0; I < T->ndim; ++I)
    N *= T->shape[I];
  return N;
}
inline bool sameShape(const DLTensor *A, const DLTensor *B) {
  if (A->ndim != B->ndim)
    return false;
  for (int I = 0; I < A->ndim; ++I)
    if (A->shape[I] != B->shape[I])
      return false;
  return true;
}
inline bool sameShape(const DLTensor *A, std::span<const int64_t> S) {
  if (size_t(A->ndim) != S.size())
    return false;
  for (int I = 0; I < A->ndim; ++I)
    if (A->shape[I] != S[I])
      return false;
  return true;
}
template <typename T = void> T *dataOf(const DLTensor *X) {
  return reinterpret_cast<T *>(static_cast<char *>(X->data) + X->byte_offset);
}

//===----------------------------------------------------------------------===//
// Tensor argument checks.
//===----------------------------------------------------------------------===//

/// Checks that argument `Index` (from 1) of `Fn` is a non-null, compact,
/// single-lane CPU tensor; ValueError otherwise.
void checkTensor(const char *Fn, int Index, const DLTensor *T);

/// Checks that `Out` (argument `Index`) is a compact CPU tensor of exactly
/// `Shape` and `DType`: "kernel.add: out has shape [2, 2] and dtype
/// float32, expected shape [2, 3] and dtype float32".
void checkOut(const char *Fn, int Index, const DLTensor *Out,
              std::span<const int64_t> Shape, DLDataType DType);

/// True when the element ranges of `A` and `B` share memory.
bool overlaps(const DLTensor *A, const DLTensor *B);

/// Rejects an input that shares memory with `Out` unless it is exactly
/// `Out`'s memory (same start, same element count): "kernel.matmul: out
/// overlaps argument 1". `AllowExact` false rejects every overlap.
void checkAlias(const char *Fn, int Index, const DLTensor *In,
                const DLTensor *Out, bool AllowExact);

/// Both operands have the same dtype, else "tensor.add: dtypes float32 and
/// int32 do not match (shapes [2, 3] and [3])".
void checkSameDType(const char *Fn, const DLTensor *A, const DLTensor *B);

/// "tensor.exp: dtype int32 is not supported (expected float32 or float64)".
[[noreturn]] void unsupportedDType(const char *Fn, DLDataType T,
                                   const char *Expected);

/// Calls `F(T{})` with T the C++ type of a float32 / float64 tensor.
template <typename F>
decltype(auto) dispatchFloat(const char *Fn, DLDataType D, F &&Body) {
  if (D.code == kDLFloat && D.lanes == 1) {
    if (D.bits == 32)
      return Body(float{});
    if (D.bits == 64)
      return Body(double{});
  }
  unsupportedDType(Fn, D, "float32 or float64");
}

/// Calls `F(T{})` for float32, float64, int32, int64.
template <typename F>
decltype(auto) dispatchNumeric(const char *Fn, DLDataType D, F &&Body) {
  if (D.lanes == 1) {
    if (D.code == kDLFloat && D.bits == 32)
      return Body(float{});
    if (D.code == kDLFloat && D.bits == 64)
      return Body(double{});
    if (D.code == kDLInt && D.bits == 32)
      return Body(int32_t{});
    if (D.code == kDLInt && D.bits == 64)
      return Body(int64_t{});
  }
  unsupportedDType(Fn, D, "float32, float64, int32 or int64");
}

template <typename T> constexpr DLDataType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return dtype::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return dtype::Float64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtype::Int32;
  else
    return dtype::Int64;
}

/// A shape from a Shape value or an int (a 1-D shape); TypeError otherwise.
std::span<const int64_t> shapeArg(const char *Fn, int Index, const AnyView &V,
                                  int64_t &Scratch);

//===----------------------------------------------------------------------===//
// Typed free safe-call entries.
//
// typedEntry<Name, Fn> is a safe-call entry that ignores `self` (so JIT code
// may call its address directly), checks the argument count and converts
// each argument with TypeTraits, with the same messages as
// Function::fromTyped ("tensor.add: argument 2 expected Tensor but got
// int").
//===----------------------------------------------------------------------===//

template <typename T>
T unpack(const char *Name, const VMJITAny *Args, int32_t I) {
  if (auto V = TypeTraitsOf<T>::fromAny(&Args[I]))
    return std::move(*V);
  vmjit::detail::throwArgTypeError(Name, I + 1, TypeTraitsOf<T>::typeName(),
                                   AnyView::fromRaw(Args[I]));
}

template <const char *Name, auto Fn, size_t... I>
void callEntry(const VMJITAny *Args, VMJITAny *Result,
               std::index_sequence<I...>) {
  using Sig = vmjit::detail::Signature<decltype(Fn)>;
  using Ret = typename Sig::Return;
  Any *Res = reinterpret_cast<Any *>(Result);
  if constexpr (std::is_void_v<Ret>) {
    Fn(unpack<std::tuple_element_t<I, typename Sig::Args>>(Name, Args, I)...);
    Res->reset();
  } else {
    *Res = Any(Fn(
        unpack<std::tuple_element_t<I, typename Sig::Args>>(Name, Args, I)...));
  }
}

template <const char *Name, auto Fn>
int typedEntry(void *, const VMJITAny *Args, int32_t Num,
               VMJITAny *Result) noexcept {
  return safeCallGuard([&] {
    constexpr size_t Arity = vmjit::detail::Signature<decltype(Fn)>::Arity;
    if (Num != int32_t(Arity))
      vmjit::detail::throwArityError(Name, int32_t(Arity), Num);
    callEntry<Name, Fn>(Args, Result, std::make_index_sequence<Arity>());
  });
}

/// Registers `Fn` (a function pointer with typed parameters) as `Name`.
template <const char *Name, auto Fn> void addEntry(Registry &R) {
  R.add(Name, Function::fromSafeCall(&typedEntry<Name, Fn>, Name));
}

} // namespace detail
} // namespace vmjit::kernels

#endif // VMJIT_LIB_KERNELS_COMMON_H
