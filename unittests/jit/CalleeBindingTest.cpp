//===- CalleeBindingTest.cpp - One binding of a function table ------------===//
//
// bindCallees (jit/callee_binding.h), the one place the JIT and
// ahead-of-time code bind a function table: what each callee becomes, the
// count rule, and a user's replacement of a builtin bound as a call.
//
//===----------------------------------------------------------------------===//

#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/native_helpers.h"
#include "vmjit/vm/virtual_machine.h"

#include <gtest/gtest.h>

#include <string>

using namespace vmjit;
using namespace vmjit::jit;

namespace {

const char *kProgram = R"(
.func helper(x)
  ret %x
.end
.func main(n)
  %a = call scalar.add(%n, 1)
  %b = call vm.builtin.copy(%a)
  %t = call vm.builtin.make_tuple(%b, 2)
  %c = call helper(%t)
  ret %c
.end
)";

std::shared_ptr<vm::Executable> assembled() {
  vm::registerVMBuiltins();
  return vm::assemble(kProgram, "bind.vmasm");
}

const CalleeBinding &bindingOf(const BoundCallees &B, const vm::Executable &Exe,
                               const std::string &Name) {
  for (size_t K = 0; K < Exe.functions().size(); ++K)
    if (Exe.functions()[K].Name == Name)
      return B.Callees[K];
  ADD_FAILURE() << "no function " << Name;
  return B.Callees.front();
}

} // namespace

TEST(CalleeBindingTest, TheJITBindsPackedCalleesDirectAndStandardOnesInline) {
  auto Exe = assembled();
  auto VM = vm::VirtualMachine::create(Exe);
  const BoundCallees B = bindCallees(*VM, /*InlineBuiltins=*/true);
  ASSERT_EQ(B.Callees.size(), Exe->functions().size());
  const CalleeBinding &Add = bindingOf(B, *Exe, "scalar.add");
  EXPECT_EQ(Add.How, CalleeBinding::Direct);
  EXPECT_TRUE(Add.Standard);
  EXPECT_EQ(Add.Inline, SpecialBuiltin::ScalarAdd);
  EXPECT_FALSE(Add.CountAtCall) << "scalar.* inline are not counted";
  const CalleeBinding &Tuple = bindingOf(B, *Exe, "vm.builtin.make_tuple");
  EXPECT_EQ(Tuple.How, CalleeBinding::Direct);
  EXPECT_EQ(Tuple.Inline, SpecialBuiltin::None);
  EXPECT_TRUE(Tuple.CountAtCall);
  EXPECT_NE(Tuple.Entry, 0u);
  EXPECT_EQ(bindingOf(B, *Exe, "helper").How, CalleeBinding::Pool);
  EXPECT_FALSE(bindingOf(B, *Exe, "helper").CountAtCall);
  // Without inline builtins every packed call is counted.
  const BoundCallees Plain = bindCallees(*VM, /*InlineBuiltins=*/false);
  EXPECT_EQ(bindingOf(Plain, *Exe, "scalar.add").Inline, SpecialBuiltin::None);
  EXPECT_TRUE(bindingOf(Plain, *Exe, "scalar.add").CountAtCall);
  EXPECT_NE(Plain.Key, B.Key);
}

TEST(CalleeBindingTest, AUsersReplacementIsCalledNotInlined) {
  auto Exe = assembled();
  Registry Own;
  vm::registerVMBuiltins(Own);
  Own.addTyped(
      "scalar.add", [](int64_t A, int64_t B) { return A - B; },
      /*AllowOverride=*/true);
  vm::VMOptions Opts;
  Opts.FunctionRegistry = &Own;
  auto VM = vm::VirtualMachine::create(Exe, Opts);
  const BoundCallees B = bindCallees(*VM, /*InlineBuiltins=*/true);
  const CalleeBinding &Add = bindingOf(B, *Exe, "scalar.add");
  EXPECT_EQ(Add.How, CalleeBinding::Direct);
  EXPECT_FALSE(Add.Standard);
  EXPECT_EQ(Add.Inline, SpecialBuiltin::None);
  EXPECT_TRUE(Add.CountAtCall);
}

TEST(CalleeBindingTest, AheadOfTimeCodeBindsEveryCalleeThroughThePool) {
  auto Exe = assembled();
  const BoundCallees B = bindCallees(*Exe, /*InlineBuiltins=*/true);
  for (const CalleeBinding &C : B.Callees)
    EXPECT_EQ(C.How, CalleeBinding::Pool);
  EXPECT_EQ(bindingOf(B, *Exe, "vm.builtin.copy").Inline, SpecialBuiltin::Copy);
  EXPECT_FALSE(bindingOf(B, *Exe, "vm.builtin.copy").CountAtCall);
  EXPECT_TRUE(bindingOf(B, *Exe, "vm.builtin.make_tuple").CountAtCall);
  // The entries bound inline, which the loader checks the VM resolves to
  // the standard functions.
  EXPECT_EQ(B.Inlined.size(), 2u);
}

TEST(CalleeBindingTest, SiteHelpersComeFromTheTable) {
  EXPECT_STREQ(siteHelper(SpecialBuiltin::AllocTensor),
               vm::helper::vmjit_jit_alloc_tensor);
  EXPECT_STREQ(siteHelper(SpecialBuiltin::AllocStorage),
               vm::helper::vmjit_jit_alloc_storage);
  EXPECT_STREQ(siteHelper(SpecialBuiltin::MakeShape),
               vm::helper::vmjit_jit_make_shape);
  EXPECT_EQ(siteHelper(SpecialBuiltin::Copy), nullptr);
  EXPECT_EQ(siteHelper(SpecialBuiltin::None), nullptr);
}
