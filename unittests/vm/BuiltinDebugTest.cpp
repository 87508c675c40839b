// Tests vm.builtin.invoke_debug_func: it calls the named global function
// with (line info, args...) and returns None; the io effect must be None,
// and a name nothing registers is a ValueError, as in TVM.
#include "BuiltinTestUtil.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;

TEST(BuiltinDebugTest, CallsTheDebugFunction) {
  Function Invoke = builtin("vm.builtin.invoke_debug_func");
  std::vector<std::string> Seen;
  Registry::global().addPacked(
      "test.debug_record",
      [&Seen](PackedArgs A, Any *Rv) {
        std::string S;
        for (int32_t I = 0; I < A.size(); ++I)
          S += (I ? "," : "") + (A[I].as<std::string>()
                                     ? *A[I].as<std::string>()
                                     : std::to_string(A[I].cast<int64_t>()));
        Seen.push_back(S);
        *Rv = 99; // dropped: the result is the io effect
      },
      /*AllowOverride=*/true);
  Any R = Invoke(nullptr, "test.debug_record", "model.py:12", 7, "x");
  EXPECT_TRUE(R.isNone());
  Invoke(nullptr, "test.debug_record", "model.py:13");
  EXPECT_EQ(Seen, (std::vector<std::string>{"model.py:12,7,x", "model.py:13"}));
  // Through a program, as TVM emits it (the io effect lowered to None).
  auto VM = makeVM(R"(
.const $name = str "test.debug_record"
.const $line = str "model.py:20"
.func main(x)
  %io = call vm.builtin.null_value()
  %io = call vm.builtin.invoke_debug_func(%io, $name, $line, %x)
  ret %io
.end
)");
  EXPECT_TRUE(VM->call("main", 5).isNone());
  EXPECT_EQ(Seen.back(), "model.py:20,5");
  Registry::global().remove("test.debug_record");
}

TEST(BuiltinDebugTest, Errors) {
  Function Invoke = builtin("vm.builtin.invoke_debug_func");
  EXPECT_EQ(errorText([&] { Invoke(nullptr, "no.such.debug_func", "l"); }),
            "ValueError: vm.builtin.invoke_debug_func: the debug function "
            "'no.such.debug_func' is not found; register it as a global "
            "function first (vmjit.register_func in Python)");
  EXPECT_EQ(errorText([&] { Invoke(Shape{1}, "vm.builtin.null_value", "l"); }),
            "ValueError: vm.builtin.invoke_debug_func: the io effect must be "
            "lowered to None, but it is Shape");
  EXPECT_EQ(errorText([&] { Invoke(1, "vm.builtin.null_value", "l"); }),
            "TypeError: vm.builtin.invoke_debug_func: argument 1 expected None "
            "(the io effect) but got int");
  EXPECT_EQ(errorText([&] { Invoke(nullptr, 5, "l"); }),
            "TypeError: vm.builtin.invoke_debug_func: argument 2 expected str "
            "but got int");
  EXPECT_EQ(errorText([&] { Invoke(nullptr, "vm.builtin.null_value"); }),
            "TypeError: vm.builtin.invoke_debug_func: expected at least 3 "
            "arguments but got 2");
  // The debug function's own error comes through.
  EXPECT_EQ(
      errorText([&] { Invoke(nullptr, "vm.builtin.tuple_getitem", "l", 1); }),
      "TypeError: vm.builtin.tuple_getitem: argument 1 expected Array "
      "but got str");
}
