//===- ScalarTest.cpp - scalar.add ... scalar.not -------------------------===//

#include "KernelTestUtil.h"

#include <cmath>
#include <limits>

using namespace vmjit;
using namespace vmjit::kernels::test;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t asInt(const Any &A) {
  EXPECT_EQ(A.typeIndex(), kVMJITInt)
      << "expected an int, got " << A.typeName();
  return A.cast<int64_t>();
}
double asFloat(const Any &A) {
  EXPECT_EQ(A.typeIndex(), kVMJITFloat)
      << "expected a float, got " << A.typeName();
  return A.cast<double>();
}
bool asBool(const Any &A) {
  EXPECT_EQ(A.typeIndex(), kVMJITBool)
      << "expected a bool, got " << A.typeName();
  return A.cast<bool>();
}

TEST(ScalarTest, IntArithmetic) {
  EXPECT_EQ(asInt(call("scalar.add", 2, 3)), 5);
  EXPECT_EQ(asInt(call("scalar.sub", 2, 3)), -1);
  EXPECT_EQ(asInt(call("scalar.mul", -4, 3)), -12);
  EXPECT_EQ(asInt(call("scalar.min", 4, -3)), -3);
  EXPECT_EQ(asInt(call("scalar.max", 4, -3)), 4);
}

TEST(ScalarTest, IntArithmeticWraps) {
  EXPECT_EQ(asInt(call("scalar.add", kMax, 1)), kMin);
  EXPECT_EQ(asInt(call("scalar.sub", kMin, 1)), kMax);
  EXPECT_EQ(asInt(call("scalar.mul", kMax, 2)), -2);
  EXPECT_EQ(asInt(call("scalar.neg", kMin)), kMin);
}

TEST(ScalarTest, DivisionTruncatesTowardZero) {
  EXPECT_EQ(asInt(call("scalar.div", 7, 2)), 3);
  EXPECT_EQ(asInt(call("scalar.div", -7, 2)), -3);
  EXPECT_EQ(asInt(call("scalar.div", 7, -2)), -3);
  EXPECT_EQ(asInt(call("scalar.div", -7, -2)), 3);
  EXPECT_EQ(asInt(call("scalar.div", kMin, 1)), kMin);
}

TEST(ScalarTest, ModuloTakesTheSignOfTheDividend) {
  EXPECT_EQ(asInt(call("scalar.mod", 7, 3)), 1);
  EXPECT_EQ(asInt(call("scalar.mod", -7, 3)), -1);
  EXPECT_EQ(asInt(call("scalar.mod", 7, -3)), 1);
  EXPECT_EQ(asInt(call("scalar.mod", -7, -3)), -1);
  EXPECT_EQ(asInt(call("scalar.mod", 6, 3)), 0);
}

TEST(ScalarTest, IntegerDivisionByZero) {
  Error E = errorOf([] { call("scalar.div", 1, 0); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "scalar.div: integer division by zero");
  Error M = errorOf([] { call("scalar.mod", 1, 0); });
  EXPECT_EQ(M.kind(), "ValueError");
  EXPECT_EQ(M.message(), "scalar.mod: integer modulo by zero");
  // A bool false is the int 0.
  EXPECT_EQ(errorOf([] { call("scalar.div", 1, false); }).message(),
            "scalar.div: integer division by zero");
}

TEST(ScalarTest, IntegerOverflow) {
  Error E = errorOf([] { call("scalar.div", kMin, -1); });
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_EQ(E.message(), "scalar.div: integer overflow");
  EXPECT_EQ(errorOf([] { call("scalar.mod", kMin, -1); }).message(),
            "scalar.mod: integer overflow");
  EXPECT_EQ(asInt(call("scalar.div", kMin + 1, -1)), kMax);
}

TEST(ScalarTest, FloatArithmetic) {
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.add", 1.5, 2.25)), 3.75);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.sub", 1.5, 2.25)), -0.75);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.mul", 1.5, -2.0)), -3.0);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.div", 7.0, 2.0)), 3.5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.mod", -7.5, 2.0)), -1.5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.min", 1.5, -2.0)), -2.0);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.max", 1.5, -2.0)), 1.5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.neg", 1.5)), -1.5);
}

TEST(ScalarTest, FloatDivisionIsIEEE) {
  EXPECT_EQ(asFloat(call("scalar.div", 1.0, 0.0)),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(asFloat(call("scalar.div", -1.0, 0)),
            -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(asFloat(call("scalar.div", 0.0, 0.0))));
  EXPECT_TRUE(std::isnan(asFloat(call("scalar.mod", 1.0, 0.0))));
}

TEST(ScalarTest, MixedIntAndFloatIsFloat) {
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.add", 1, 0.5)), 1.5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.add", 0.5, 1)), 1.5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.div", 7, 2.0)), 3.5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.mul", 2.0, 3)), 6.0);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.max", 1, 0.5)), 1.0);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.min", 2.0, 3)), 2.0);
}

TEST(ScalarTest, BoolCountsAsInt) {
  EXPECT_EQ(asInt(call("scalar.add", true, true)), 2);
  EXPECT_EQ(asInt(call("scalar.mul", true, 5)), 5);
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.add", true, 0.5)), 1.5);
  EXPECT_EQ(asInt(call("scalar.neg", true)), -1);
  EXPECT_TRUE(asBool(call("scalar.eq", true, 1)));
}

TEST(ScalarTest, MinMaxWithNaNReturnTheFirstUnlessOrdered) {
  const double NaN = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(asFloat(call("scalar.min", NaN, 1.0))));
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.min", 1.0, NaN)), 1.0);
  EXPECT_TRUE(std::isnan(asFloat(call("scalar.max", NaN, 1.0))));
  EXPECT_DOUBLE_EQ(asFloat(call("scalar.max", 1.0, NaN)), 1.0);
}

TEST(ScalarTest, Comparisons) {
  EXPECT_TRUE(asBool(call("scalar.lt", 1, 2)));
  EXPECT_FALSE(asBool(call("scalar.lt", 2, 2)));
  EXPECT_TRUE(asBool(call("scalar.le", 2, 2)));
  EXPECT_FALSE(asBool(call("scalar.le", 3, 2)));
  EXPECT_TRUE(asBool(call("scalar.gt", 3, 2)));
  EXPECT_FALSE(asBool(call("scalar.gt", 2, 2)));
  EXPECT_TRUE(asBool(call("scalar.ge", 2, 2)));
  EXPECT_FALSE(asBool(call("scalar.ge", 1, 2)));
  EXPECT_TRUE(asBool(call("scalar.eq", 2, 2)));
  EXPECT_FALSE(asBool(call("scalar.eq", 2, 3)));
  EXPECT_TRUE(asBool(call("scalar.ne", 2, 3)));
  EXPECT_FALSE(asBool(call("scalar.ne", 2, 2)));
  // Mixed compares as double.
  EXPECT_TRUE(asBool(call("scalar.lt", 1, 1.5)));
  EXPECT_TRUE(asBool(call("scalar.eq", 2, 2.0)));
  EXPECT_FALSE(asBool(call("scalar.gt", 1.0, 1)));
}

TEST(ScalarTest, IntComparisonsAreExact) {
  // As doubles these two would be equal.
  const int64_t Big = (int64_t(1) << 53) + 1;
  EXPECT_TRUE(asBool(call("scalar.ne", Big, Big - 1)));
  EXPECT_TRUE(asBool(call("scalar.gt", Big, Big - 1)));
  EXPECT_TRUE(asBool(call("scalar.lt", kMin, kMax)));
}

TEST(ScalarTest, NaNComparisons) {
  const double NaN = std::numeric_limits<double>::quiet_NaN();
  for (const char *Name :
       {"scalar.lt", "scalar.le", "scalar.gt", "scalar.ge", "scalar.eq"})
    EXPECT_FALSE(asBool(call(Name, NaN, 1.0))) << Name;
  EXPECT_TRUE(asBool(call("scalar.ne", NaN, NaN)));
}

TEST(ScalarTest, NegAndNot) {
  EXPECT_EQ(asInt(call("scalar.neg", 5)), -5);
  EXPECT_EQ(asInt(call("scalar.neg", -5)), 5);
  EXPECT_TRUE(std::signbit(asFloat(call("scalar.neg", 0.0))));
  EXPECT_TRUE(asBool(call("scalar.not", 0)));
  EXPECT_FALSE(asBool(call("scalar.not", 7)));
  EXPECT_FALSE(asBool(call("scalar.not", -1)));
  EXPECT_TRUE(asBool(call("scalar.not", false)));
  EXPECT_FALSE(asBool(call("scalar.not", true)));
}

TEST(ScalarTest, NotOfFloatIsATypeError) {
  Error E = errorOf([] { call("scalar.not", 1.5); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "scalar.not: argument 1 expected int or bool but got "
                         "float");
}

TEST(ScalarTest, WrongTypes) {
  Error E = errorOf([] { call("scalar.add", 1, String("hello world")); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(),
            "scalar.add: argument 2 expected int or float but got str");
  EXPECT_EQ(errorOf([] { call("scalar.lt", nullptr, 1); }).message(),
            "scalar.lt: argument 1 expected int or float but got None");
  Tensor T = Tensor::empty({1}, dtype::Float32);
  EXPECT_EQ(errorOf([&] { call("scalar.mul", 2.0, T); }).message(),
            "scalar.mul: argument 2 expected int or float but got Tensor");
  EXPECT_EQ(errorOf([&] { call("scalar.neg", T); }).message(),
            "scalar.neg: argument 1 expected int or float but got Tensor");
}

TEST(ScalarTest, WrongArity) {
  Error E = errorOf([] { call("scalar.add", 1); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "scalar.add: expected 2 arguments but got 1");
  EXPECT_EQ(errorOf([] { call("scalar.neg", 1, 2); }).message(),
            "scalar.neg: expected 1 argument but got 2");
  EXPECT_EQ(errorOf([] { call("scalar.not"); }).message(),
            "scalar.not: expected 1 argument but got 0");
}

TEST(ScalarTest, EntriesAreFree) {
  // JIT code may call the entry address directly.
  for (const char *Name :
       {"scalar.add", "scalar.sub", "scalar.mul", "scalar.div", "scalar.mod",
        "scalar.min", "scalar.max", "scalar.lt", "scalar.le", "scalar.gt",
        "scalar.ge", "scalar.eq", "scalar.ne", "scalar.neg", "scalar.not"}) {
    Function F = fn(Name);
    ASSERT_TRUE(F.defined()) << Name;
    EXPECT_TRUE(F.get()->isFreeEntry()) << Name;
    EXPECT_EQ(F.name(), Name);
  }
  VMJITAny Args[2];
  Args[0] = Any(int64_t(20)).raw();
  Args[1] = Any(int64_t(22)).raw();
  VMJITAny Result;
  Result.type_index = kVMJITNone;
  ASSERT_EQ(fn("scalar.add").get()->entry()(nullptr, Args, 2, &Result), 0);
  EXPECT_EQ(Result.type_index, kVMJITInt);
  EXPECT_EQ(Result.v_int64, 42);
}

} // namespace
