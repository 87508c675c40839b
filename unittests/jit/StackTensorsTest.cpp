//===- StackTensorsTest.cpp - Tensors tier 2 keeps on its stack -----------===//
//
// jit/stack_tensors.h: which storages and views a driver function keeps on
// the native stack (the plan, on small programs with hand-bound callees),
// and programs running with them in every mode: the same results and
// errors, the kernels given DLTensors of the stack where tier 2 runs.
//
//===----------------------------------------------------------------------===//

#include "EveryMode.h"
#include "stack_tensors.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/jit/callee_binding.h"
#include "vmjit/runtime/aligned_call.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::jit;

namespace {

/// The constants every program here uses, then `Body` (one function, its
/// `.end` added).
std::shared_ptr<vm::Executable> program(const std::string &Body) {
  vm::registerVMBuiltins();
  return vm::assemble(".const $f32 = dtype float32\n"
                      ".const $global = str \"global\"\n"
                      ".const $b128 = shape [128]\n"
                      ".const $b16 = shape [16]\n"
                      ".const $s4 = shape [4]\n"
                      ".const $s8 = shape [8]\n" +
                          Body + ".end\n",
                      "stack.vmasm");
}

/// `main`'s plan, with k.* bound as kernels that take stack tensors at
/// the positions `Mask` sets (an executable's own bindings otherwise).
StackTensorPlan planOf(const vm::Executable &Exe, uint64_t Mask = ~0ull,
                       std::vector<int64_t> Guarded = {},
                       int64_t HostDevices = 1) {
  BoundCallees B = bindCallees(Exe, /*InlineBuiltins=*/true);
  for (size_t K = 0; K < Exe.functions().size(); ++K)
    if (Exe.functions()[K].Name.starts_with("k."))
      B.Callees[K].StackTensorArgs = Mask;
  const int64_t Main = *Exe.findFunction("main");
  StackTensorLimits Limits;
  Limits.HostDevices = HostDevices;
  return planStackTensors(Exe, Main, B.Callees, loopHeads(Exe, Main), Guarded,
                          Limits);
}

/// Registers kept on the stack: storages, then tensors.
std::vector<int64_t> stackRegs(const StackTensorPlan &P) {
  std::vector<int64_t> Out;
  for (const auto &S : P.Storages)
    Out.push_back(S.Reg);
  for (const auto &T : P.Tensors)
    Out.push_back(T.Reg);
  return Out;
}

// A storage, two views handed to kernels and cleared, an output returned.
// (Views 64 bytes apart: the kernel slots copy unaligned tensors.)
const char *kDriver = R"(
.func main(x)
  %s = call vm.builtin.alloc_storage(%vm, $b128, 0, $f32, $global)
  %a = call vm.builtin.alloc_tensor(%s, 0, $s4, $f32, $global)
  %b = call vm.builtin.alloc_tensor(%s, 64, $s4, $f32, $global)
  call k.neg(%x, %a)
  call k.add(%a, %a, %b)
  %a = call vm.builtin.null_value()
  %os = call vm.builtin.alloc_storage(%vm, $b16, 0, $f32, $global)
  %y = call vm.builtin.alloc_tensor(%os, 0, $s4, $f32, $global)
  call k.add(%b, %x, %y)
  %b = call vm.builtin.null_value()
  %s = call vm.builtin.null_value()
  %os = call vm.builtin.null_value()
  ret %y
)";

TEST(StackTensorsTest, KernelOnlyViewsAndTheirStorageJoin) {
  auto Exe = program(kDriver);
  StackTensorPlan P = planOf(*Exe);
  // %s, %a, %b (registers 1, 2, 3); the returned %y and its storage not.
  EXPECT_EQ(stackRegs(P), (std::vector<int64_t>{1, 2, 3}));
  ASSERT_EQ(P.Tensors.size(), 2u);
  EXPECT_EQ(P.Storages[0].Bytes, 128);
  EXPECT_EQ(P.Tensors[1].Offset, 64);
  EXPECT_EQ(P.Tensors[1].Shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(P.Tensors[1].DType.bits, 32);
}

TEST(StackTensorsTest, NothingJoinsWhereAKernelMayKeepATensor) {
  auto Exe = program(kDriver);
  EXPECT_TRUE(planOf(*Exe, /*Mask=*/0).empty());
  // k.add's first argument may not be on the stack: %a and %b go to it,
  // so their storage stays allocated with them.
  EXPECT_TRUE(planOf(*Exe, /*Mask=*/~1ull).empty());
  // Not on a device that is not the host.
  EXPECT_TRUE(planOf(*Exe, ~0ull, {}, /*HostDevices=*/0).empty());
}

TEST(StackTensorsTest, ViewsSeenByAnythingButKernelsStayAllocated) {
  struct Case {
    const char *Name;
    std::string Body;
  };
  const std::string Head = ".func main(x)\n"
                           "  %s = call vm.builtin.alloc_storage(%vm, $b128, "
                           "0, $f32, $global)\n"
                           "  %a = call vm.builtin.alloc_tensor(%s, 0, $s4, "
                           "$f32, $global)\n"
                           "  call k.neg(%x, %a)\n";
  const std::vector<Case> Cases = {
      {"returned", Head + "  ret %a\n"},
      {"passed to a builtin",
       Head + "  %n = call vm.builtin.shape_of(%a)\n  ret %x\n"},
      {"copied", Head + "  %c = call vm.builtin.copy(%a)\n  ret %x\n"},
      {"read after it was cleared",
       Head + "  %a = call vm.builtin.null_value()\n  call k.neg(%x, %a)\n"
              "  ret %x\n"},
      {"the storage returned", Head + "  ret %s\n"},
      {"written twice",
       Head + "  %a = call vm.builtin.alloc_tensor(%s, 16, $s4, $f32, "
              "$global)\n  call k.neg(%x, %a)\n  ret %x\n"},
      {"too large for its storage",
       ".func main(x)\n  %s = call vm.builtin.alloc_storage(%vm, $b16, 0, "
       "$f32, $global)\n  %a = call vm.builtin.alloc_tensor(%s, 0, $s8, $f32, "
       "$global)\n  call k.neg(%x, %a)\n  ret %x\n"},
      {"at an offset past its storage",
       ".func main(x)\n  %s = call vm.builtin.alloc_storage(%vm, $b16, 0, "
       "$f32, $global)\n  %a = call vm.builtin.alloc_tensor(%s, 4, $s4, $f32, "
       "$global)\n  call k.neg(%x, %a)\n  ret %x\n"},
      {"on a device the VM lacks",
       ".func main(x)\n  %s = call vm.builtin.alloc_storage(%vm, $b128, 3, "
       "$f32, $global)\n  %a = call vm.builtin.alloc_tensor(%s, 0, $s4, $f32, "
       "$global)\n  call k.neg(%x, %a)\n  ret %x\n"},
      {"live at a loop header",
       Head + "loop:\n  call k.neg(%a, %x)\n  %c = call "
              "vm.builtin.read_if_cond(%x)\n  if %c else done\n  goto loop\n"
              "done:\n  ret %x\n"},
  };
  for (const Case &C : Cases) {
    SCOPED_TRACE(C.Name);
    auto Exe = program(C.Body);
    EXPECT_TRUE(planOf(*Exe).empty()) << planOf(*Exe).describe();
  }
  // The control case: the same head, the view cleared and the input
  // returned.
  auto Exe = program(Head + "  %a = call vm.builtin.null_value()\n  ret %x\n");
  EXPECT_EQ(stackRegs(planOf(*Exe)), (std::vector<int64_t>{1, 2}));
}

TEST(StackTensorsTest, NotLiveAfterACallWhoseResultIsGuarded) {
  auto Exe = program(kDriver);
  // Tier 1 goes on after pc 3 (k.neg) with the frame's registers: %a and
  // %b are read after it.
  EXPECT_TRUE(planOf(*Exe, ~0ull, {3}).empty());
  // After the output's storage is made, only %b is: it stays allocated,
  // and with it %a and their storage.
  EXPECT_TRUE(planOf(*Exe, ~0ull, {6}).empty());
  // After the last kernel call none of them is read.
  EXPECT_EQ(stackRegs(planOf(*Exe, ~0ull, {8})),
            (std::vector<int64_t>{1, 2, 3}));
}

//===----------------------------------------------------------------------===//
// Running with tensors on the stack
//===----------------------------------------------------------------------===//

/// The type indices of the tensor arguments the test kernels were given.
std::vector<int32_t> &seenTypes() {
  static std::vector<int32_t> Seen;
  return Seen;
}

const float *data(const VMJITAny &A) {
  const DLTensor *T = argumentTensor(A);
  return reinterpret_cast<const float *>(static_cast<const char *>(T->data) +
                                         T->byte_offset);
}

/// k.neg(in, out) and k.add(a, b, out) on float32[4], as TVM's kernels:
/// their checks raise (a value of 1000 in k.neg's input, to test errors).
int kernelNeg(void *, const VMJITAny *A, int32_t N, VMJITAny *) noexcept {
  if (N != 2 || !argumentTensor(A[0]) || !argumentTensor(A[1])) {
    VMJITErrorSetRaisedFromCStr("TypeError", "k.neg takes two tensors");
    return -1;
  }
  seenTypes().push_back(A[0].type_index);
  seenTypes().push_back(A[1].type_index);
  auto *Out = const_cast<float *>(data(A[1]));
  for (int I = 0; I < 4; ++I) {
    if (data(A[0])[I] == 1000.0f) {
      VMJITErrorSetRaisedFromCStr("ValueError", "k.neg: 1000 is too large");
      return -1;
    }
    Out[I] = -data(A[0])[I];
  }
  return 0;
}

int kernelAdd(void *, const VMJITAny *A, int32_t N, VMJITAny *) noexcept {
  if (N != 3) {
    VMJITErrorSetRaisedFromCStr("TypeError", "k.add takes three tensors");
    return -1;
  }
  for (int K = 0; K < 3; ++K)
    seenTypes().push_back(A[K].type_index);
  auto *Out = const_cast<float *>(data(A[2]));
  for (int I = 0; I < 4; ++I)
    Out[I] = data(A[0])[I] + data(A[1])[I];
  return 0;
}

/// k.neg and k.add as kernel slots published with their effects (as the
/// kernel tier publishes them), or without.
std::shared_ptr<KernelLibrary> slotKernels(bool WithEffects) {
  const ArgAccess R = ArgAccess::Read, W = ArgAccess::Write;
  std::map<std::string, Function, std::less<>> F;
  auto Slot = [&](const char *Name, VMJITSafeCallType Entry, KernelEffects E) {
    auto S = makeObject<KernelSlotObj>(Name, Function());
    S->publish(Entry, nullptr,
               WithEffects ? std::optional<KernelEffects>(E) : std::nullopt);
    F.emplace(Name, Function(ObjectPtr<Object>(std::move(S))));
  };
  Slot("k.neg", &kernelNeg, {true, {R, W}});
  Slot("k.add", &kernelAdd, {true, {R, R, W}});
  return KernelLibrary::fromFunctions("stack-kernels", std::move(F), {},
                                      nullptr);
}

Tensor input(float First) {
  Tensor T = Tensor::empty({4}, *parseDType("float32"));
  for (int I = 0; I < 4; ++I)
    T.data<float>()[I] = First + static_cast<float>(I);
  return T;
}

/// Every function's call count in `VM` is `Ref`'s (tier 2 counts the
/// calls the stack makes nothing of once for a straight run of them).
void expectCountsOf(const vm::VirtualMachine &VM, const vm::VirtualMachine &Ref,
                    const vm::Executable &Exe) {
  for (size_t F = 0; F < Exe.functions().size(); ++F)
    EXPECT_EQ(VM.callCount(static_cast<int64_t>(F)),
              Ref.callCount(static_cast<int64_t>(F)))
        << Exe.functions()[F].Name;
}

TEST(StackTensorsTest, EveryModeAgreesAndTierTwoPassesStackTensors) {
  auto Exe = program(kDriver);
  std::unique_ptr<vm::VirtualMachine> Ref;
  for (const jittest::TestMode &M : jittest::everyMode()) {
    SCOPED_TRACE(jittest::modeName(M));
    auto VM = jittest::vmWith(Exe, {slotKernels(true)}, M);
    for (int Call = 0; Call < 3; ++Call) {
      seenTypes().clear();
      Tensor X = input(1.5f);
      std::vector<AnyView> Args = {AnyView(X)};
      Any Y = VM->invoke(VM->functionIndex("main"), Args);
      // y = 2 * (-x) + x.
      Tensor T = Y.cast<Tensor>();
      for (int I = 0; I < 4; ++I)
        EXPECT_EQ(T.data<float>()[I], -(1.5f + static_cast<float>(I)));
      // k.neg(x, a), k.add(a, a, b), k.add(b, x, y): a and b from the
      // stack wherever tier-2 code made the call.
      // (Under deopt stress the entry's guard sends every call to tier 1;
      // tiered mode's first call runs before or after its compile.)
      if (M.DeoptStress || (M.Mode == vm::ExecMode::Tiered && Call == 0))
        continue;
      const bool Tier2 = M.Mode == vm::ExecMode::Compiled ||
                         (M.Mode == vm::ExecMode::Tiered && Call > 0);
      const int32_t S = Tier2 ? kVMJITDLTensorPtr : kVMJITTensor;
      const int32_t O = kVMJITTensor;
      EXPECT_EQ(seenTypes(), (std::vector<int32_t>{O, S, S, S, S, S, O, O}))
          << "call " << Call;
    }
    if (!Ref)
      Ref = std::move(VM); // bytecode, the first mode
    else
      expectCountsOf(*VM, *Ref, *Exe);
  }
}

/// The type indices the kernels saw in one call of main by `VM`.
std::vector<int32_t> typesSeenByOneCall(vm::VirtualMachine &VM) {
  seenTypes().clear();
  Tensor X = input(0);
  std::vector<AnyView> Args = {AnyView(X)};
  VM.invoke(VM.functionIndex("main"), Args);
  return seenTypes();
}

TEST(StackTensorsTest, WithoutProvenEffectsEveryTensorIsAllocated) {
  auto Exe = program(kDriver);
  for (const jittest::TestMode &M : jittest::everyMode()) {
    SCOPED_TRACE(jittest::modeName(M));
    auto VM = jittest::vmWith(Exe, {slotKernels(false)}, M);
    // Twice: tiered mode's second call runs tier 2.
    typesSeenByOneCall(*VM);
    EXPECT_EQ(typesSeenByOneCall(*VM), std::vector<int32_t>(8, kVMJITTensor));
  }
}

TEST(StackTensorsTest, TheOptionOffAllocatesEveryTensor) {
  auto Exe = program(kDriver);
  for (const jittest::TestMode &M : jittest::everyMode()) {
    SCOPED_TRACE(jittest::modeName(M));
    auto VM =
        jittest::vmWith(Exe, {slotKernels(true)}, M, -1,
                        [](jit::JITOptions &O) { O.StackTensors = false; });
    // Twice: tiered mode's second call runs tier 2.
    typesSeenByOneCall(*VM);
    EXPECT_EQ(typesSeenByOneCall(*VM), std::vector<int32_t>(8, kVMJITTensor));
  }
}

TEST(StackTensorsTest, AKernelErrorIsTheSameInEveryMode) {
  auto Exe = program(kDriver);
  std::unique_ptr<vm::VirtualMachine> Ref;
  for (const jittest::TestMode &M : jittest::everyMode()) {
    SCOPED_TRACE(jittest::modeName(M));
    auto VM = jittest::vmWith(Exe, {slotKernels(true)}, M);
    for (int Call = 0; Call < 3; ++Call) {
      Tensor Bad = input(1000);
      std::vector<AnyView> Args = {AnyView(Bad)};
      try {
        VM->invoke(VM->functionIndex("main"), Args);
        ADD_FAILURE() << "no error";
      } catch (const Error &E) {
        EXPECT_EQ(E.kind(), "ValueError");
        EXPECT_EQ(E.message(), "k.neg: 1000 is too large");
      }
      // The VM goes on.
      Tensor Good = input(0);
      std::vector<AnyView> GoodArgs = {AnyView(Good)};
      Tensor T = VM->invoke(VM->functionIndex("main"), GoodArgs).cast<Tensor>();
      EXPECT_EQ(T.data<float>()[3], -3.0f);
    }
    if (!Ref)
      Ref = std::move(VM);
    else
      expectCountsOf(*VM, *Ref, *Exe);
  }
}

/// k.neg and k.add as alignment-checking kernel slots published late: the
/// same functions run as the slots' fallback (TVM's code) until publish()
/// publishes them with their effects and tells the tier managers, as the
/// kernel tier does when its compile ends.
struct LateKernels {
  std::shared_ptr<KernelLibrary> Lib;
  std::vector<KernelSlotObj *> Slots;
  std::vector<VMJITSafeCallType> Entries;
  std::vector<KernelEffects> Effects;

  LateKernels() {
    const ArgAccess R = ArgAccess::Read, W = ArgAccess::Write;
    std::map<std::string, Function, std::less<>> F;
    auto Slot = [&](const char *Name, VMJITSafeCallType Entry,
                    KernelEffects E) {
      auto S =
          makeObject<KernelSlotObj>(Name, Function::fromSafeCall(Entry, Name),
                                    KernelSlotObj::Entry::AlignmentChecking);
      Slots.push_back(S.get());
      Entries.push_back(Entry);
      Effects.push_back(std::move(E));
      F.emplace(Name, Function(ObjectPtr<Object>(std::move(S))));
    };
    Slot("k.neg", &kernelNeg, {true, {R, W}});
    Slot("k.add", &kernelAdd, {true, {R, R, W}});
    Lib =
        KernelLibrary::fromFunctions("late-kernels", std::move(F), {}, nullptr);
  }
  void publish() {
    for (size_t K = 0; K < Slots.size(); ++K)
      Slots[K]->publish(Entries[K], nullptr, Effects[K]);
    jit::rebindPublishedKernels();
  }
};

/// Tier-2 code compiled before the kernels were published is compiled
/// again with them bound: tier 2 then passes stack tensors, in every mode
/// with the same results and counts; flat (`Flat`), a function kept at
/// tier 1 for want of stack tensors goes to tier 2.
void checkKernelsPublishedLate(bool Flat) {
  auto Exe = program(kDriver);
  std::unique_ptr<vm::VirtualMachine> Ref;
  for (const jittest::TestMode &M : jittest::everyMode()) {
    SCOPED_TRACE(jittest::modeName(M));
    if (Flat && !jit::baselineAvailable())
      continue;
    LateKernels Late;
    auto VM = jittest::vmWith(Exe, {Late.Lib}, M, -1, [&](JITOptions &O) {
      if (Flat)
        O.PromoteLimit = 0;
    });
    const int64_t Main = VM->functionIndex("main");
    const bool Tier2 =
        M.Mode == vm::ExecMode::Compiled || M.Mode == vm::ExecMode::Tiered;
    for (int Call = 0; Call < 3; ++Call)
      typesSeenByOneCall(*VM);
    // (Under deopt stress the entry's guard sends every call to tier 1.)
    const std::vector<int32_t> Before = typesSeenByOneCall(*VM);
    if (!M.DeoptStress) {
      EXPECT_EQ(Before, std::vector<int32_t>(8, kVMJITTensor));
    }
    jit::TierManager *TM = jit::tierManagerOf(*VM);
    if (TM && Flat && Tier2) {
      EXPECT_TRUE(TM->stats(Main).StaysAtBaseline);
    }
    Late.publish();
    if (TM && Tier2) {
      EXPECT_TRUE(TM->stats(Main).Compiled);
      EXPECT_FALSE(TM->stats(Main).StaysAtBaseline);
      EXPECT_EQ(TM->stats(Main).KernelRecompiles, 1u);
    }
    const int32_t S = Tier2 ? kVMJITDLTensorPtr : kVMJITTensor;
    const int32_t O = kVMJITTensor;
    const std::vector<int32_t> After = typesSeenByOneCall(*VM);
    if (!M.DeoptStress) {
      EXPECT_EQ(After, (std::vector<int32_t>{O, S, S, S, S, S, O, O}));
    }
    Tensor X = input(1.5f);
    std::vector<AnyView> Args = {AnyView(X)};
    Tensor T = VM->invoke(Main, Args).cast<Tensor>();
    for (int I = 0; I < 4; ++I)
      EXPECT_EQ(T.data<float>()[I], -(1.5f + static_cast<float>(I)));
    if (!Ref)
      Ref = std::move(VM);
    else
      expectCountsOf(*VM, *Ref, *Exe);
  }
}

TEST(StackTensorsTest, CodeCompiledBeforeTheKernelsIsCompiledAgain) {
  checkKernelsPublishedLate(/*Flat=*/false);
}

TEST(StackTensorsTest, AFlatFunctionKeptAtTierOneGoesToTierTwo) {
  checkKernelsPublishedLate(/*Flat=*/true);
}

} // namespace
