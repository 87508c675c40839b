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
#include "vmjit/kernels/standard_library.h"

#include <cmath>
#include <limits>

namespace vmjit::kernels {
namespace {

using detail::valueError;

enum class Op { Add, Sub, Mul, Div, Mod, Min, Max, Lt, Le, Gt, Ge, Eq, Ne };

constexpr const char *opName(Op O) {
  switch (O) {
  case Op::Add:
    return "scalar.add";
  case Op::Sub:
    return "scalar.sub";
  case Op::Mul:
    return "scalar.mul";
  case Op::Div:
    return "scalar.div";
  case Op::Mod:
    return "scalar.mod";
  case Op::Min:
    return "scalar.min";
  case Op::Max:
    return "scalar.max";
  case Op::Lt:
    return "scalar.lt";
  case Op::Le:
    return "scalar.le";
  case Op::Gt:
    return "scalar.gt";
  case Op::Ge:
    return "scalar.ge";
  case Op::Eq:
    return "scalar.eq";
  case Op::Ne:
    return "scalar.ne";
  }
  return "scalar";
}

constexpr bool isComparison(Op O) { return O >= Op::Lt; }

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

template <Op O> int64_t intOp(int64_t A, int64_t B) {
  constexpr const char *Name = opName(O);
  using U = uint64_t;
  if constexpr (O == Op::Add)
    return int64_t(U(A) + U(B));
  else if constexpr (O == Op::Sub)
    return int64_t(U(A) - U(B));
  else if constexpr (O == Op::Mul)
    return int64_t(U(A) * U(B));
  else if constexpr (O == Op::Div || O == Op::Mod) {
    if (B == 0)
      valueError("{}: integer {} by zero", Name,
                 O == Op::Div ? "division" : "modulo");
    if (B == -1 && A == std::numeric_limits<int64_t>::min())
      valueError("{}: integer overflow", Name);
    return O == Op::Div ? A / B : A % B;
  } else if constexpr (O == Op::Min)
    return B < A ? B : A;
  else
    return B > A ? B : A;
}

template <Op O> double floatOp(double A, double B) {
  if constexpr (O == Op::Add)
    return A + B;
  else if constexpr (O == Op::Sub)
    return A - B;
  else if constexpr (O == Op::Mul)
    return A * B;
  else if constexpr (O == Op::Div)
    return A / B;
  else if constexpr (O == Op::Mod)
    return std::fmod(A, B);
  else if constexpr (O == Op::Min)
    return B < A ? B : A;
  else
    return B > A ? B : A;
}

template <Op O, typename T> bool compare(T A, T B) {
  if constexpr (O == Op::Lt)
    return A < B;
  else if constexpr (O == Op::Le)
    return A <= B;
  else if constexpr (O == Op::Gt)
    return A > B;
  else if constexpr (O == Op::Ge)
    return A >= B;
  else if constexpr (O == Op::Eq)
    return A == B;
  else
    return A != B;
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
      if constexpr (isComparison(O))
        setBool(Result, compare<O>(intOf(A), intOf(B)));
      else
        setInt(Result, intOp<O>(intOf(A), intOf(B)));
      return;
    }
    double X = toDouble(Name, 1, A), Y = toDouble(Name, 2, B);
    if constexpr (isComparison(O))
      setBool(Result, compare<O>(X, Y));
    else
      setFloat(Result, floatOp<O>(X, Y));
  });
}

int negEntry(void *, const VMJITAny *Args, int32_t Num,
             VMJITAny *Result) noexcept {
  return safeCallGuard([&] {
    if (Num != 1)
      vmjit::detail::throwArityError("scalar.neg", 1, Num);
    const VMJITAny &A = Args[0];
    if (isIntLike(A))
      setInt(Result, int64_t(uint64_t(0) - uint64_t(intOf(A))));
    else if (A.type_index == kVMJITFloat)
      setFloat(Result, -A.v_float64);
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
    setBool(Result, intOf(A) == 0);
  });
}

template <Op O> void addBinary(Registry &R) {
  R.add(opName(O), Function::fromSafeCall(&binaryEntry<O>, opName(O)));
}

} // namespace

void registerScalarFunctions(Registry &R) {
  addBinary<Op::Add>(R);
  addBinary<Op::Sub>(R);
  addBinary<Op::Mul>(R);
  addBinary<Op::Div>(R);
  addBinary<Op::Mod>(R);
  addBinary<Op::Min>(R);
  addBinary<Op::Max>(R);
  addBinary<Op::Lt>(R);
  addBinary<Op::Le>(R);
  addBinary<Op::Gt>(R);
  addBinary<Op::Ge>(R);
  addBinary<Op::Eq>(R);
  addBinary<Op::Ne>(R);
  R.add("scalar.neg", Function::fromSafeCall(&negEntry, "scalar.neg"));
  R.add("scalar.not", Function::fromSafeCall(&notEntry, "scalar.not"));
}

} // namespace vmjit::kernels
