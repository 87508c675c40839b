//===- KernelInlineTest.cpp - Small kernels inlined into tier 2 -----------===//
//
// jit/kernel_inline.h: which kernels' IR the kernel tier keeps for tier 2
// (small, loop-free, touching no mutable global but TVM's context slots,
// not writing their result; or such an entry calling its compute body),
// on TVM-shaped IR and on the models of ../shared/tvm-models (skipped
// without them), and linking it into a unit.
//
//===----------------------------------------------------------------------===//

#include "kernel_inline.h"
#include "vmjit/runtime/tvm_backend.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <filesystem>
#include <gtest/gtest.h>

using namespace llvm;
using namespace vmjit::jit;

namespace {

/// Kernels as TVM writes them: `ok` (a compute body called once, an error
/// raised through a context slot), `global` (writes a mutable global),
/// `result` (may write its result), `loop` (a loop).
const char *kKernels = R"(
@__TVMFFIErrorSetRaisedFromCStr = linkonce global ptr null
@counter = global i32 0
@.msg = private constant [6 x i8] c"wrong\00"

define internal void @ok_compute_(ptr noalias align 64 %x) noinline {
  %v = load <4 x float>, ptr %x, align 64
  %n = fneg <4 x float> %v
  store <4 x float> %n, ptr %x, align 64
  ret void
}

define i32 @__tvm_ffi_ok(ptr %self, ptr %args, i32 %n, ptr readnone %result) {
entry:
  %two = icmp eq i32 %n, 1
  br i1 %two, label %go, label %fail
fail:
  %raise = load ptr, ptr @__TVMFFIErrorSetRaisedFromCStr
  call void %raise(ptr @.msg, ptr @.msg)
  ret i32 -1
go:
  %p = getelementptr i8, ptr %args, i64 8
  %t = load ptr, ptr %p
  %d = load ptr, ptr %t
  call void @ok_compute_(ptr %d)
  ret i32 0
}

define i32 @__tvm_ffi_global(ptr %self, ptr %args, i32 %n, ptr readnone %result) {
  store i32 %n, ptr @counter
  ret i32 0
}

define i32 @__tvm_ffi_result(ptr %self, ptr %args, i32 %n, ptr %result) {
  store i32 0, ptr %result
  ret i32 0
}

define i32 @__tvm_ffi_loop(ptr %self, ptr %args, i32 %n, ptr readnone %result) {
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %j, %head ]
  %j = add i32 %i, 1
  %done = icmp eq i32 %j, %n
  br i1 %done, label %exit, label %head
exit:
  ret i32 0
}
)";

const std::vector<std::string> kNames = {"ok", "global", "result", "loop"};

std::unique_ptr<Module> parse(LLVMContext &Ctx, const char *Text) {
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseAssemblyString(Text, Err, Ctx);
  EXPECT_TRUE(M) << Err.getMessage().str();
  return M;
}

/// The context slots `M` defines, as the kernel tier lists them.
std::vector<std::string> slotsOf(const Module &M) {
  std::vector<std::string> Slots;
  for (const GlobalVariable &G : M.globals())
    if (vmjit::tvm::isContextSlotName(
            std::string_view(G.getName().data(), G.getName().size())) ||
        G.getName() == StringRef(vmjit::tvm::kLibraryCtxSymbol.data(),
                                 vmjit::tvm::kLibraryCtxSymbol.size()))
      Slots.push_back(G.getName().str());
  return Slots;
}

/// The extracted IR of `K` read into `Ctx`, verified (null, and a test
/// failure, when it does not read).
std::unique_ptr<Module> extractedIR(const InlineKernels &K, LLVMContext &Ctx) {
  Expected<std::unique_ptr<Module>> X =
      parseBitcodeFile(MemoryBufferRef(K.Bitcode, "inline"), Ctx);
  if (!X) {
    ADD_FAILURE() << toString(X.takeError());
    return nullptr;
  }
  EXPECT_FALSE(verifyModule(**X, &errs()));
  return std::move(*X);
}

/// What extractInlineKernels keeps of kKernels under `Limits`.
std::shared_ptr<InlineKernels> keptOf(InlineKernelLimits Limits = {}) {
  LLVMContext Ctx;
  std::unique_ptr<Module> M = parse(Ctx, kKernels);
  return extractInlineKernels(*M, kNames, slotsOf(*M), {}, Limits);
}

TEST(KernelInlineTest, OnlySmallLoopFreeKernelsOfTheirArgumentsAreKept) {
  std::shared_ptr<InlineKernels> K = keptOf();
  ASSERT_TRUE(K);
  EXPECT_EQ(K->Kernels, std::set<std::string>{"ok"});
  // The extracted module: the entry renamed and always inlined, its
  // compute body (called once) too, the slot a declaration, nothing else.
  LLVMContext Ctx2;
  std::unique_ptr<Module> X = extractedIR(*K, Ctx2);
  ASSERT_TRUE(X);
  Function *E = X->getFunction(inlineKernelSymbol("ok"));
  ASSERT_TRUE(E && !E->isDeclaration());
  EXPECT_TRUE(E->hasFnAttribute(Attribute::AlwaysInline));
  Function *Body = X->getFunction("ok_compute_");
  ASSERT_TRUE(Body);
  EXPECT_TRUE(Body->hasFnAttribute(Attribute::AlwaysInline));
  EXPECT_FALSE(Body->hasFnAttribute(Attribute::NoInline));
  GlobalVariable *Slot = X->getGlobalVariable("__TVMFFIErrorSetRaisedFromCStr");
  ASSERT_TRUE(Slot);
  EXPECT_TRUE(Slot->isDeclaration());
  EXPECT_FALSE(X->getGlobalVariable("counter"));
  for (const char *Gone : {"__tvm_ffi_ok", "__tvm_ffi_global", "__tvm_ffi_loop",
                           "__tvm_ffi_result"})
    EXPECT_FALSE(X->getFunction(Gone)) << Gone;
  EXPECT_EQ(K->Hash.size(), 32u);
}

TEST(KernelInlineTest, TooLargeAKernelKeepsItsEntryOrNothing) {
  // `ok` and its compute body are 14 instructions, its entry 10.
  std::shared_ptr<InlineKernels> Whole = keptOf({14, 10});
  ASSERT_TRUE(Whole);
  EXPECT_TRUE(Whole->CallBodies.empty());
  std::shared_ptr<InlineKernels> Entry = keptOf({13, 10});
  ASSERT_TRUE(Entry);
  EXPECT_EQ(Entry->CallBodies, std::set<std::string>{"ok"});
  EXPECT_FALSE(keptOf({13, 9}));
}

TEST(KernelInlineTest, LinkedIntoAUnitInternalWithItsSlotsBound) {
  LLVMContext Ctx;
  std::shared_ptr<InlineKernels> K = keptOf();
  ASSERT_TRUE(K);
  K->Symbols["__TVMFFIErrorSetRaisedFromCStr"] = 0x1000;
  // A unit calling the kernel's entry.
  Module Unit("unit", Ctx);
  auto *Ptr = PointerType::getUnqual(Ctx);
  auto *Safe = FunctionType::get(Type::getInt32Ty(Ctx),
                                 {Ptr, Ptr, Type::getInt32Ty(Ctx), Ptr}, false);
  Function *Caller =
      Function::Create(Safe, GlobalValue::ExternalLinkage, "caller", Unit);
  IRBuilder<> B(BasicBlock::Create(Ctx, "entry", Caller));
  FunctionCallee Entry =
      Unit.getOrInsertFunction(inlineKernelSymbol("ok"), Safe);
  B.CreateRet(B.CreateCall(Entry, {Caller->getArg(0), Caller->getArg(1),
                                   Caller->getArg(2), Caller->getArg(3)}));
  std::map<std::string, uint64_t> Absolute;
  ASSERT_FALSE(
      static_cast<bool>(linkInlineKernels(Unit, *K, {"ok"}, Absolute)));
  EXPECT_FALSE(verifyModule(Unit, &errs()));
  Function *Linked = Unit.getFunction(inlineKernelSymbol("ok"));
  ASSERT_TRUE(Linked && !Linked->isDeclaration());
  EXPECT_TRUE(Linked->hasInternalLinkage());
  EXPECT_EQ(Absolute["__TVMFFIErrorSetRaisedFromCStr"], 0x1000u);
}

/// A model's bitcode and its packed entries, or null without ../shared.
std::unique_ptr<Module> modelModule(LLVMContext &Ctx, const std::string &Name,
                                    std::vector<std::string> &Entries) {
  const std::string Path =
      std::string(VMJIT_TVM_MODELS) + "/" + Name + "/model.bc";
  if (!std::filesystem::exists(Path))
    return nullptr;
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(Path);
  if (!Buf)
    return nullptr;
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile((*Buf)->getMemBufferRef(), Ctx);
  if (!M) {
    consumeError(M.takeError());
    return nullptr;
  }
  for (const Function &F : **M)
    if (!F.isDeclaration() && F.getName().starts_with("__tvm_ffi_"))
      Entries.push_back(F.getName().drop_front(10).str());
  return std::move(*M);
}

TEST(KernelInlineTest, ManySmallsKernelsAreKeptTheMlpsCallTheirBodies) {
  LLVMContext Ctx;
  std::vector<std::string> Entries;
  std::unique_ptr<Module> M = modelModule(Ctx, "many_small", Entries);
  if (!M)
    GTEST_SKIP() << "no ../shared/tvm-models/many_small/model.bc";
  std::shared_ptr<InlineKernels> K =
      extractInlineKernels(*M, Entries, slotsOf(*M), {});
  ASSERT_TRUE(K);
  EXPECT_EQ(K->Kernels,
            (std::set<std::string>{"add", "add1", "multiply", "multiply1",
                                   "subtract", "tir_negative", "tir_tanh"}));
  // TVM tags each kernel's buffers for type-based alias analysis; kernels
  // inlined into one function share buffers, so the tags are dropped.
  LLVMContext Ctx2;
  std::unique_ptr<Module> X = extractedIR(*K, Ctx2);
  ASSERT_TRUE(X);
  unsigned Tagged = 0;
  for (const Function &F : *X)
    for (const BasicBlock &BB : F)
      for (const Instruction &I : BB)
        Tagged += I.getMetadata(LLVMContext::MD_tbaa) != nullptr;
  EXPECT_EQ(Tagged, 0u);
  EXPECT_TRUE(K->CallBodies.empty());
  // The mlp's kernels have loops: their entries are kept, each calling its
  // compute body, which stays in the kernel module, exported.
  std::vector<std::string> MlpEntries;
  std::unique_ptr<Module> Mlp = modelModule(Ctx, "mlp", MlpEntries);
  ASSERT_TRUE(Mlp);
  std::shared_ptr<InlineKernels> MlpK =
      extractInlineKernels(*Mlp, MlpEntries, slotsOf(*Mlp), {});
  ASSERT_TRUE(MlpK);
  EXPECT_EQ(MlpK->CallBodies,
            std::set<std::string>(MlpEntries.begin(), MlpEntries.end()));
  EXPECT_EQ(MlpK->Kernels, MlpK->CallBodies);
  for (const std::string &Name : MlpEntries) {
    Function *Body = Mlp->getFunction(computeBodySymbol(Name));
    ASSERT_TRUE(Body && !Body->isDeclaration()) << Name;
    EXPECT_FALSE(Body->hasLocalLinkage()) << Name;
  }
}

/// A kernel whose compute body has a loop.
const char *kLoopBody = R"(
define internal fastcc void @scale_compute_(ptr noalias align 64 %x, i64 %n) noinline {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %j, %head ]
  %p = getelementptr float, ptr %x, i64 %i
  %v = load float, ptr %p
  %w = fadd float %v, %v
  store float %w, ptr %p
  %j = add i64 %i, 1
  %done = icmp eq i64 %j, %n
  br i1 %done, label %exit, label %head
exit:
  ret void
}

define i32 @__tvm_ffi_scale(ptr %self, ptr %args, i32 %n, ptr readnone %result) {
  %p = getelementptr i8, ptr %args, i64 8
  %t = load ptr, ptr %p
  %d = load ptr, ptr %t
  call fastcc void @scale_compute_(ptr %d, i64 16)
  ret i32 0
}

define i32 @__tvm_ffi_twice(ptr %self, ptr %args, i32 %n, ptr readnone %result) {
  %p = getelementptr i8, ptr %args, i64 8
  %t = load ptr, ptr %p
  %d = load ptr, ptr %t
  call fastcc void @twice_a_(ptr %d, i64 16)
  call fastcc void @twice_b_(ptr %d, i64 16)
  ret i32 0
}

define internal fastcc void @twice_a_(ptr %x, i64 %n) {
  %v = load float, ptr %x
  %w = fadd float %v, %v
  store float %w, ptr %x
  ret void
}

define internal fastcc void @twice_b_(ptr %x, i64 %n) {
  %v = load float, ptr %x
  %w = fmul float %v, %v
  store float %w, ptr %x
  ret void
}
)";

TEST(KernelInlineTest, AnEntryCallingOneComputeBodyWithALoopKeepsTheCall) {
  LLVMContext Ctx;
  std::unique_ptr<Module> M = parse(Ctx, kLoopBody);
  // `twice` (6 instructions and two functions of 4) is too large as a
  // whole; it calls two functions of one size, so which one is its body is
  // not known, and it is not kept (either one taken, the entry and the
  // other would fit).
  std::shared_ptr<InlineKernels> K =
      extractInlineKernels(*M, {"scale", "twice"}, {}, {}, {13, 10});
  ASSERT_TRUE(K);
  EXPECT_EQ(K->Kernels, std::set<std::string>{"scale"});
  EXPECT_EQ(K->CallBodies, std::set<std::string>{"scale"});
  // In the kernel module: the body exported under its symbol, called with
  // the C convention (the kernel tier's code and tier 2's call agree).
  EXPECT_FALSE(verifyModule(*M, &errs()));
  EXPECT_FALSE(M->getFunction("scale_compute_"));
  Function *Body = M->getFunction(computeBodySymbol("scale"));
  ASSERT_TRUE(Body && !Body->isDeclaration());
  EXPECT_EQ(Body->getLinkage(), GlobalValue::ExternalLinkage);
  EXPECT_EQ(Body->getCallingConv(), CallingConv::C);
  for (const User *U : Body->users())
    EXPECT_EQ(cast<CallBase>(U)->getCallingConv(), CallingConv::C);
  // In the extracted IR: the entry, and the body a declaration.
  LLVMContext Ctx2;
  std::unique_ptr<Module> X = extractedIR(*K, Ctx2);
  ASSERT_TRUE(X);
  Function *E = X->getFunction(inlineKernelSymbol("scale"));
  ASSERT_TRUE(E && !E->isDeclaration());
  Function *Decl = X->getFunction(computeBodySymbol("scale"));
  ASSERT_TRUE(Decl);
  EXPECT_TRUE(Decl->isDeclaration());
  EXPECT_EQ(Decl->getCallingConv(), CallingConv::C);
  // In another unit than its caller's: not assumed within a PC-relative
  // reach.
  EXPECT_FALSE(Decl->isDSOLocal());
  // The `twice` kernel's functions are untouched.
  EXPECT_TRUE(M->getFunction("twice_a_")->hasLocalLinkage());
}

TEST(KernelInlineTest, ABodySymbolTakenInTheModuleKeepsNoEntry) {
  LLVMContext Ctx;
  std::unique_ptr<Module> M = parse(Ctx, kLoopBody);
  Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false),
                   GlobalValue::ExternalLinkage, computeBodySymbol("scale"),
                   *M);
  EXPECT_FALSE(extractInlineKernels(*M, {"scale"}, {}, {}));
  EXPECT_TRUE(M->getFunction("scale_compute_"));
}

TEST(KernelInlineTest, AnEntryTooLargeWithoutItsBodyIsNotKept) {
  LLVMContext Ctx;
  std::unique_ptr<Module> M = parse(Ctx, kLoopBody);
  // `scale`'s entry is 5 instructions.
  EXPECT_FALSE(extractInlineKernels(*M, {"scale"}, {}, {}, {400, 4}));
  EXPECT_TRUE(M->getFunction("scale_compute_"));
  EXPECT_TRUE(extractInlineKernels(*M, {"scale"}, {}, {}, {400, 5}));
}

} // namespace
