//===- FunctionTest.cpp - Packed, typed and C-entry functions -------------===//

#include "vmjit/runtime/function.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>

using namespace vmjit;

namespace {

/// The Error a call throws (fails the test if it throws none).
template <typename F> Error errorOf(F Body) {
  try {
    Body();
  } catch (const Error &E) {
    return E;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error("None", "");
}

/// A C-style safe-call entry: returns args[0] * 2, or raises.
int doubleIt(void *, const VMJITAny *Args, int32_t Num, VMJITAny *Result) {
  if (Num != 1 || Args[0].type_index != kVMJITInt) {
    VMJITErrorSetRaisedFromCStr("TypeError", "doubleIt: expected one int");
    return -1;
  }
  Result->type_index = kVMJITInt;
  Result->v_int64 = Args[0].v_int64 * 2;
  return 0;
}

TEST(FunctionTest, TypedIntAndDouble) {
  Function F = Function::fromTyped(
      "scale", [](int64_t A, double B) { return double(A) * B; });
  EXPECT_EQ(F.name(), "scale");
  Any R = F(int64_t(3), 0.5);
  EXPECT_EQ(R.typeIndex(), kVMJITFloat);
  EXPECT_DOUBLE_EQ(R.cast<double>(), 1.5);
  // An int argument widens to the double parameter.
  EXPECT_DOUBLE_EQ(F(4, 2).cast<double>(), 8.0);
}

TEST(FunctionTest, TypedFromFunctionPointer) {
  Function F = Function::fromTyped(
      "neg", +[](int64_t X) -> int64_t { return -X; });
  EXPECT_EQ(F(5).cast<int64_t>(), -5);
}

TEST(FunctionTest, WrongArity) {
  Function F =
      Function::fromTyped("NAME", [](int64_t A, double B) { return A + B; });
  Error E = errorOf([&] { F(1, 2, 3); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "NAME: expected 2 arguments but got 3");
  Function One = Function::fromTyped("one", [](int64_t A) { return A; });
  EXPECT_EQ(errorOf([&] { One(); }).message(),
            "one: expected 1 argument but got 0");
}

TEST(FunctionTest, WrongArgumentType) {
  Function Add = Function::fromTyped(
      "tensor.add", [](Tensor A, Tensor B) { return A.numel() + B.numel(); });
  Tensor T = Tensor::empty({2}, dtype::Float32);
  Error E = errorOf([&] { Add(T, 5); });
  EXPECT_EQ(E.kind(), "TypeError");
  EXPECT_EQ(E.message(), "tensor.add: argument 2 expected Tensor but got int");
  EXPECT_EQ(errorOf([&] { Add(nullptr, T); }).message(),
            "tensor.add: argument 1 expected Tensor but got None");
  EXPECT_EQ(Add(T, T).cast<int64_t>(), 4);
  EXPECT_EQ(T.useCount(), 1u); // the converted arguments were released
}

TEST(FunctionTest, VoidReturnGivesNone) {
  int Calls = 0;
  Function F =
      Function::fromTyped("touch", [&Calls](int64_t N) { Calls += N; });
  Any R = F(3);
  EXPECT_TRUE(R.isNone());
  EXPECT_EQ(Calls, 3);
}

TEST(FunctionTest, TypedStringsAndAny) {
  Function Concat = Function::fromTyped("concat", [](std::string A, String B) {
    return A + std::string(B.view());
  });
  std::string Long(20, 'z');
  EXPECT_EQ(Concat("ab", Long).cast<std::string>(), "ab" + Long);
  Function Kind = Function::fromTyped(
      "kind", [](Any V) { return std::string(V.typeName()); });
  EXPECT_EQ(Kind(1.5).cast<std::string>(), "float");
}

TEST(FunctionTest, Packed) {
  Function Sum = Function::fromPacked("sum", [](PackedArgs Args, Any *Result) {
    int64_t S = 0;
    for (int32_t I = 0; I < Args.size(); ++I)
      S += Args[I].cast<int64_t>();
    *Result = S;
  });
  EXPECT_EQ(Sum().cast<int64_t>(), 0);
  EXPECT_EQ(Sum(1, 2, 3, 4).cast<int64_t>(), 10);
  AnyView Views[] = {AnyView(5), AnyView(6)};
  EXPECT_EQ(Sum.callPacked(Views, 2).cast<int64_t>(), 11);
  EXPECT_FALSE(Sum.get()->isFreeEntry());
}

TEST(FunctionTest, FromSafeCall) {
  Function F = Function::fromSafeCall(&doubleIt, "double");
  EXPECT_TRUE(F.get()->isFreeEntry());
  EXPECT_EQ(F.get()->entry(), &doubleIt);
  EXPECT_EQ(F(21).cast<int64_t>(), 42);
  Error E = errorOf([&] { F("x"); });
  EXPECT_EQ(E.message(), "doubleIt: expected one int");
}

TEST(FunctionTest, FromSafeCallKeepsItsOwner) {
  auto Owner = std::make_shared<int>(7);
  Function F = Function::fromSafeCall(&doubleIt, "double", Owner);
  EXPECT_EQ(Owner.use_count(), 2);
  F = Function();
  EXPECT_EQ(Owner.use_count(), 1);
}

TEST(FunctionTest, CApiFromSafeCall) {
  VMJITObject *Obj = nullptr;
  ASSERT_EQ(VMJITFunctionFromSafeCall(&doubleIt, &Obj), 0);
  ASSERT_NE(Obj, nullptr);
  VMJITAny Arg{}, Result{};
  Arg.type_index = kVMJITInt;
  Arg.v_int64 = 8;
  Result.type_index = kVMJITNone;
  ASSERT_EQ(VMJITFunctionCall(Obj, &Arg, 1, &Result), 0);
  EXPECT_EQ(Result.v_int64, 16);
  VMJITObjectDecRef(Obj);
  EXPECT_EQ(VMJITFunctionFromSafeCall(nullptr, &Obj), -1);
  EXPECT_EQ(takeRaisedError().kind(), "ValueError");
}

TEST(FunctionTest, MixedArguments) {
  Function Describe =
      Function::fromPacked("describe", [](PackedArgs Args, Any *Result) {
        std::string S;
        for (int32_t I = 0; I < Args.size(); ++I)
          S += std::string(Args[I].typeName()) + ";";
        *Result = S;
      });
  Tensor T = Tensor::empty({1}, dtype::Int8);
  Any Owned(std::string(30, 'q'));
  Any R = Describe(1, 2.0, true, "c", T, Owned, nullptr, dtype::Int8);
  EXPECT_EQ(R.cast<std::string>(),
            "int;float;bool;str;Tensor;str;None;DataType;");
}

TEST(FunctionTest, FunctionAsArgument) {
  Function Inc = Function::fromTyped("inc", [](int64_t X) { return X + 1; });
  Function Twice = Function::fromTyped(
      "twice", [](Function G, int64_t X) { return G(G(X)).cast<int64_t>(); });
  EXPECT_EQ(Twice(Inc, 5).cast<int64_t>(), 7);
  EXPECT_EQ(Inc.useCount(), 1u);
}

TEST(FunctionTest, ReturnsObjectsOwned) {
  Function Make =
      Function::fromTyped("make", [] { return String(std::string(40, 'm')); });
  Any R = Make();
  EXPECT_EQ(R.typeIndex(), kVMJITStr);
  EXPECT_EQ(R.cast<String>().useCount(), 2u);
}

TEST(FunctionTest, CallOnNonFunctionIsTypeError) {
  Error NotAFunction("ValueError", "x");
  VMJITAny Result{};
  Result.type_index = kVMJITNone;
  EXPECT_EQ(VMJITFunctionCall(NotAFunction.get()->raw(), nullptr, 0, &Result),
            -1);
  EXPECT_EQ(takeRaisedError().kind(), "TypeError");
  EXPECT_EQ(VMJITFunctionCall(nullptr, nullptr, 0, &Result), -1);
  EXPECT_EQ(takeRaisedError().kind(), "TypeError");
}

} // namespace
