//===- CodeKeyTest.cpp - The object-cache key is derived ------------------===//
//
// Every decision tier-2 code depends on reaches its key (jit/code_key.h):
// the encoding keeps different record sequences apart, and lowering one
// program under each decision changed gives a key of its own, the same
// decisions the same key.
//
//===----------------------------------------------------------------------===//

#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/code_key.h"
#include "vmjit/jit/lowering.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/native_code.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::jit;

namespace {

/// A program with what the lowering decides on: inline scalar builtins, a
/// tuple_getitem (promoted only), a call of a bytecode function (direct
/// calls, owned arguments) and an embedded constant.
std::string program(const char *Constant) {
  return std::string(R"(
.const $c = int )") +
         Constant + R"(
.func leaf(x)
  %y = call scalar.add(%x, 1)
  ret %y
.end
.func main(n)
  %t = call vm.builtin.make_tuple(%n, 2)
  %a = call vm.builtin.tuple_getitem(%t, 0)
  %b = call leaf(%a)
  %c = call scalar.mul(%b, $c)
  ret %c
.end
)";
}

struct Lowering {
  std::shared_ptr<vm::Executable> Exe;
  std::vector<CalleeBinding> Callees;
  LoweringOptions Opts;
};

Lowering baseLowering(const char *Constant = "3") {
  vm::registerVMBuiltins();
  Lowering L;
  L.Exe = vm::assemble(program(Constant), "key.vmasm");
  L.Callees = bindCallees(*L.Exe, /*InlineBuiltins=*/true).Callees;
  return L;
}

int64_t functionIndex(const vm::Executable &Exe, const std::string &Name) {
  for (size_t K = 0; K < Exe.functions().size(); ++K)
    if (Exe.functions()[K].Name == Name)
      return static_cast<int64_t>(K);
  ADD_FAILURE() << "no function " << Name;
  return 0;
}

std::string keyOf(const Lowering &L) {
  std::vector<int64_t> Funcs = {functionIndex(*L.Exe, "leaf"),
                                functionIndex(*L.Exe, "main")};
  std::optional<CodeKey> Key = loweringKey(*L.Exe, Funcs, L.Callees, L.Opts);
  if (!Key) {
    ADD_FAILURE() << "lowering failed";
    return "";
  }
  return Key->text();
}

} // namespace

TEST(CodeKeyTest, RecordsNeverRunTogether) {
  auto Text = [](const std::function<void(CodeKey &)> &Record) {
    CodeKey K;
    Record(K);
    return K.text();
  };
  EXPECT_NE(Text([](CodeKey &K) { K.record("a", "b,c"); }),
            Text([](CodeKey &K) { K.record("a", "b", "c"); }));
  EXPECT_NE(Text([](CodeKey &K) { K.record("x", 12); }),
            Text([](CodeKey &K) { K.record("x", 1, 2); }));
  EXPECT_NE(Text([](CodeKey &K) { K.record("x", 1); }),
            Text([](CodeKey &K) { K.record("x1"); }));
  EXPECT_NE(Text([](CodeKey &K) { K.record("t", int64_t(-1)); }),
            Text([](CodeKey &K) { K.record("t", ~uint64_t(0)); }));
  EXPECT_NE(Text([](CodeKey &K) {
              K.record("a");
              K.record("b");
            }),
            Text([](CodeKey &K) { K.record("a;b"); }));
  EXPECT_EQ(Text([](CodeKey &K) { K.record("p", 3, "q", true); }),
            Text([](CodeKey &K) { K.record("p", 3, "q", true); }));
}

TEST(CodeKeyTest, EveryLoweringDecisionChangesTheKey) {
  const std::string Base = keyOf(baseLowering());
  EXPECT_EQ(keyOf(baseLowering()), Base) << "the same decisions, the same key";

  std::map<std::string, std::function<void(Lowering &)>> Changes = {
      {"no inline builtins",
       [](Lowering &L) { L.Opts.InlineBuiltins = false; }},
      {"flat", [](Lowering &L) { L.Opts.PromoteRegisters = false; }},
      {"owned arguments", [](Lowering &L) { L.Opts.OwnedArguments = true; }},
      {"direct calls", [](Lowering &L) { L.Opts.DirectCalls = true; }},
      {"no direct bodies",
       [](Lowering &L) {
         L.Opts.DirectCalls = true;
         L.Opts.DirectBodyLimit = 0;
       }},
      {"speculation",
       [](Lowering &L) {
         FunctionSpeculation S;
         S.Params = {vm::kind::Int};
         L.Opts.Speculate[functionIndex(*L.Exe, "main")] = S;
       }},
      {"a callee counted",
       [](Lowering &L) {
         L.Callees[static_cast<size_t>(
                       functionIndex(*L.Exe, "vm.builtin.make_tuple"))]
             .CountAtCall ^= true;
       }},
      {"a builtin not inlined",
       [](Lowering &L) {
         L.Callees[static_cast<size_t>(functionIndex(*L.Exe, "scalar.mul"))]
             .Inline = SpecialBuiltin::None;
       }},
  };
  std::map<std::string, std::string> Seen = {{Base, "the base"}};
  for (auto &[What, Change] : Changes) {
    Lowering L = baseLowering();
    Change(L);
    const std::string Key = keyOf(L);
    auto [It, New] = Seen.emplace(Key, What);
    EXPECT_TRUE(New) << What << " gives the key of " << It->second;
  }
  // A constant of the pool embedded in the code: not in the function's
  // words, so in the key.
  EXPECT_NE(keyOf(baseLowering("4")), Base);
}
