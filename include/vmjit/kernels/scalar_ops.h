//===- vmjit/kernels/scalar_ops.h - The scalar.* operations, once -*- C++ -*-===//
//
// One row per scalar builtin (name, arity, result kind) and its int64 and
// float64 operations. Everything that runs a scalar.* function reads this
// table: the kernels (lib/kernels/scalar.cpp), the baseline tier's inline
// int paths (jit/baseline/stencils.cpp) and the optimizing tier's inlined
// builtins (jit/lowering.cpp).
//
// Semantics (docs/kernels.md): int64 with wrapping add/sub/mul/neg when the
// operands are ints (bools read as 0/1), float64 when either is a float; C
// division (truncation, remainder with the sign of the dividend); integer
// division or modulo by zero and INT64_MIN / -1 are errors (intOp declines
// them: the caller takes its error path).
//
// Header-only and free of exceptions so that stencils can use it.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_KERNELS_SCALAR_OPS_H
#define VMJIT_KERNELS_SCALAR_OPS_H

#include <cmath>
#include <cstdint>
#include <string_view>

namespace vmjit::kernels::scalar {

/// X(Enum, Name, Arity)
#define VMJIT_SCALAR_OPS(X)                                                    \
  X(Add, "scalar.add", 2)                                                      \
  X(Sub, "scalar.sub", 2)                                                      \
  X(Mul, "scalar.mul", 2)                                                      \
  X(Div, "scalar.div", 2)                                                      \
  X(Mod, "scalar.mod", 2)                                                      \
  X(Min, "scalar.min", 2)                                                      \
  X(Max, "scalar.max", 2)                                                      \
  X(Lt, "scalar.lt", 2)                                                        \
  X(Le, "scalar.le", 2)                                                        \
  X(Gt, "scalar.gt", 2)                                                        \
  X(Ge, "scalar.ge", 2)                                                        \
  X(Eq, "scalar.eq", 2)                                                        \
  X(Ne, "scalar.ne", 2)                                                        \
  X(Neg, "scalar.neg", 1)                                                      \
  X(Not, "scalar.not", 1)

enum class Op : uint8_t {
#define VMJIT_SCALAR_ENUM(Enum, Name, Arity) Enum,
  VMJIT_SCALAR_OPS(VMJIT_SCALAR_ENUM)
#undef VMJIT_SCALAR_ENUM
};

inline constexpr int kNumOps = 0
#define VMJIT_SCALAR_COUNT(Enum, Name, Arity) +1
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_COUNT)
#undef VMJIT_SCALAR_COUNT
    ;

constexpr std::string_view name(Op O) {
  switch (O) {
#define VMJIT_SCALAR_NAME(Enum, Name, Arity)                                   \
  case Op::Enum:                                                               \
    return Name;
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_NAME)
#undef VMJIT_SCALAR_NAME
  }
  return "scalar";
}

constexpr int arity(Op O) {
  switch (O) {
#define VMJIT_SCALAR_ARITY(Enum, Name, Arity)                                  \
  case Op::Enum:                                                               \
    return Arity;
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_ARITY)
#undef VMJIT_SCALAR_ARITY
  }
  return 0;
}

/// The six comparisons (bool result on any operands).
constexpr bool isComparison(Op O) { return O >= Op::Lt && O <= Op::Ne; }
/// Operations whose result is a bool.
constexpr bool returnsBool(Op O) { return isComparison(O) || O == Op::Not; }
/// Operations defined on floats too (scalar.not is int/bool only).
constexpr bool acceptsFloat(Op O) { return O != Op::Not; }

/// The operation of `Name`, if it is one of the table's.
constexpr bool lookup(std::string_view Name, Op &Out) {
#define VMJIT_SCALAR_LOOKUP(Enum, Name_, Arity)                                \
  if (Name == Name_) {                                                         \
    Out = Op::Enum;                                                            \
    return true;                                                               \
  }
  VMJIT_SCALAR_OPS(VMJIT_SCALAR_LOOKUP)
#undef VMJIT_SCALAR_LOOKUP
  return false;
}

template <Op O, typename T> constexpr bool compare(T A, T B) {
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

/// The int64 result of `O` on ints A and B (B unused by unary ones; a
/// comparison gives 0 or 1). False where the operation is an error
/// (division or modulo by zero, INT64_MIN / -1).
template <Op O> constexpr bool intOp(int64_t A, int64_t B, int64_t &Out) {
  using U = uint64_t;
  if constexpr (O == Op::Add)
    Out = int64_t(U(A) + U(B));
  else if constexpr (O == Op::Sub)
    Out = int64_t(U(A) - U(B));
  else if constexpr (O == Op::Mul)
    Out = int64_t(U(A) * U(B));
  else if constexpr (O == Op::Div || O == Op::Mod) {
    if (B == 0 || (B == -1 && A == INT64_MIN))
      return false;
    Out = O == Op::Div ? A / B : A % B;
  } else if constexpr (O == Op::Min)
    Out = B < A ? B : A;
  else if constexpr (O == Op::Max)
    Out = B > A ? B : A;
  else if constexpr (isComparison(O))
    Out = compare<O>(A, B);
  else if constexpr (O == Op::Neg)
    Out = int64_t(U(0) - U(A));
  else
    Out = A == 0;
  return true;
}

/// The float64 result of arithmetic `O` (not a comparison, not scalar.not).
template <Op O> inline double floatOp(double A, double B) {
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
  else if constexpr (O == Op::Max)
    return B > A ? B : A;
  else
    return -A; // Neg
}

} // namespace vmjit::kernels::scalar

#endif // VMJIT_KERNELS_SCALAR_OPS_H
