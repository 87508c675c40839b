//===- scalar.cpp - scalar.add ... scalar.not -----------------------------===//
//
// Scalar arithmetic and comparisons on int, bool and float values, as free
// safe-call entries that read the 16-byte values directly. The semantics
// are those of docs/kernels.md exactly (the JIT inlines them): int64 with
// wrapping add/sub/mul when both operands are int or bool, float64 when
// either is a float; C division (truncation, remainder with the sign of
// the dividend); errors for integer division by zero and INT64_MIN / -1.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "vmjit/kernels/scalar_ops.h"
#include "vmjit/kernels/standard_library.h"

#include <cmath>
#include <limits>

namespace vmjit::kernels {
namespace {

using detail::valueError;

namespace ops = scalar;
using ops::Op;

constexpr const char *opName(Op O) { return ops::name(O).data(); }

inline bool isIntLike(const VMJITAny &V) {
  return V.type_index == kVMJITInt || V.type_index == kVMJITBool;
}

/// An int's value; a bool reads as 0 or 1 (any non-zero payload is 1).
inline int64_t intOf(const VMJITAny &V) {
  return V.type_index == kVMJITBool ? int64_t(V.v_int64 != 0) : V.v_int64;
}

[[noreturn]] void badArg(const char *Name, int Index, const VMJITAny &V,
                         const char *Expected) {
  vmjit::detail::throwArgTypeError(Name, Index, Expected, AnyView::fromRaw(V));
}

/// The value as a double; `Name`'s TypeError if it is not a number.
inline double toDouble(const char *Name, int Index, const VMJITAny &V) {
  if (V.type_index == kVMJITFloat)
    return V.v_float64;
  if (isIntLike(V))
    return double(intOf(V));
  badArg(Name, Index, V, "int or float");
}

inline void setInt(VMJITAny *R, int64_t V) {
  *reinterpret_cast<Any *>(R) = Any(V);
}
inline void setFloat(VMJITAny *R, double V) {
  *reinterpret_cast<Any *>(R) = Any(V);
}
inline void setBool(VMJITAny *R, bool V) {
  *reinterpret_cast<Any *>(R) = Any(V);
}

/// The int result of `O`, or `O`'s error (division or modulo by zero,
/// INT64_MIN / -1).
template <Op O> int64_t intOp(int64_t A, int64_t B) {
  int64_t Out;
  if (!ops::intOp<O>(A, B, Out)) {
    if (B == 0)
      valueError("{}: integer {} by zero", opName(O),
                 O == Op::Div ? "division" : "modulo");
    valueError("{}: integer overflow", opName(O));
  }
  return Out;
}

template <Op O>
int binaryEntry(void *, const VMJITAny *Args, int32_t Num,
                VMJITAny *Result) noexcept {
  return safeCallGuard([&] {
    constexpr const char *Name = opName(O);
    if (Num != 2)
      vmjit::detail::throwArityError(Name, 2, Num);
    const VMJITAny &A = Args[0], &B = Args[1];
    if (isIntLike(A) && isIntLike(B)) {
      if constexpr (ops::isComparison(O))
        setBool(Result, intOp<O>(intOf(A), intOf(B)) != 0);
      else
        setInt(Result, intOp<O>(intOf(A), intOf(B)));
      return;
    }
    double X = toDouble(Name, 1, A), Y = toDouble(Name, 2, B);
    if constexpr (ops::isComparison(O))
      setBool(Result, ops::compare<O>(X, Y));
    else
      setFloat(Result, ops::floatOp<O>(X, Y));
  });
}

int negEntry(void *, const VMJITAny *Args, int32_t Num,
             VMJITAny *Result) noexcept {
  return safeCallGuard([&] {
    if (Num != 1)
      vmjit::detail::throwArityError("scalar.neg", 1, Num);
    const VMJITAny &A = Args[0];
    if (isIntLike(A))
      setInt(Result, intOp<Op::Neg>(intOf(A), 0));
    else if (A.type_index == kVMJITFloat)
      setFloat(Result, ops::floatOp<Op::Neg>(A.v_float64, 0));
    else
      badArg("scalar.neg", 1, A, "int or float");
  });
}

int notEntry(void *, const VMJITAny *Args, int32_t Num,
             VMJITAny *Result) noexcept {
  return safeCallGuard([&] {
    if (Num != 1)
      vmjit::detail::throwArityError("scalar.not", 1, Num);
    const VMJITAny &A = Args[0];
    if (!isIntLike(A))
      badArg("scalar.not", 1, A, "int or bool");
    setBool(Result, intOp<Op::Not>(intOf(A), 0) != 0);
  });
}

template <Op O> void addBinary(Registry &R) {
  R.add(opName(O), Function::fromSafeCall(&binaryEntry<O>, opName(O)));
}

} // namespace

void registerScalarFunctions(Registry &R) {
  // One registration per row of the scalar.* table.
#define VMJIT_SCALAR_REGISTER(Enum, Name, Arity)                               \
  if constexpr (Arity == 2)                                                    \
    addBinary<Op::Enum>(R);
  VMJIT_SCALAR_OPS(VMJIT_SCALAR_REGISTER)
#undef VMJIT_SCALAR_REGISTER
  R.add("scalar.neg", Function::fromSafeCall(&negEntry, "scalar.neg"));
  R.add("scalar.not", Function::fromSafeCall(&notEntry, "scalar.not"));
}

} // namespace vmjit::kernels
