//===- kernel_inline.cpp - Small kernels inlined into tier 2 --------------===//
//
// See kernel_inline.h.
//
//===----------------------------------------------------------------------===//

#include "kernel_inline.h"

#include "llvm/Analysis/CFG.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <optional>

namespace vmjit::jit {

using namespace llvm;

std::string inlineKernelSymbol(const std::string &Name) {
  return "__vmjit_inline_" + Name;
}

std::string computeBodySymbol(const std::string &Name) {
  return "__vmjit_body_" + Name;
}

namespace {

/// The globals `F`'s instructions name, through constant expressions too.
void usedGlobals(const Function &F, std::set<const GlobalValue *> &Out) {
  std::vector<const Constant *> Work;
  for (const BasicBlock &BB : F)
    for (const Instruction &I : BB)
      for (const Use &U : I.operands()) {
        if (const auto *G = dyn_cast<GlobalValue>(U.get()))
          Out.insert(G);
        else if (const auto *C = dyn_cast<Constant>(U.get()))
          Work.push_back(C);
      }
  std::set<const Constant *> Seen;
  while (!Work.empty()) {
    const Constant *C = Work.back();
    Work.pop_back();
    if (!Seen.insert(C).second)
      continue;
    for (const Use &U : C->operands()) {
      if (const auto *G = dyn_cast<GlobalValue>(U.get()))
        Out.insert(G);
      else if (const auto *CC = dyn_cast<Constant>(U.get()))
        Work.push_back(CC);
    }
  }
}

/// What the kernel entry `E` reaches (functions, globals), when it is
/// small and touches no mutable global but the context slots; `Body`, when
/// not null, is reached but not followed (its calls are kept as calls).
std::optional<std::set<const GlobalValue *>>
reachedBy(const Function &E, const std::set<std::string> &Slots,
          unsigned MaxInstructions, const Function *Body = nullptr) {
  std::set<const GlobalValue *> All = {&E};
  std::vector<const Function *> Work = {&E};
  unsigned Instructions = 0;
  while (!Work.empty()) {
    const Function *F = Work.back();
    Work.pop_back();
    Instructions += F->getInstructionCount();
    if (Instructions > MaxInstructions)
      return std::nullopt;
    // A loop is better compiled by the kernel tier's pipeline (O3, Polly)
    // than by tier 2's, which has no loop optimization.
    SmallVector<std::pair<const BasicBlock *, const BasicBlock *>> Back;
    FindFunctionBackedges(*F, Back);
    if (!Back.empty())
      return std::nullopt;
    std::set<const GlobalValue *> Used;
    usedGlobals(*F, Used);
    for (const GlobalValue *G : Used) {
      if (!All.insert(G).second)
        continue;
      if (const auto *GF = dyn_cast<Function>(G)) {
        if (!GF->isDeclaration() && GF != Body)
          Work.push_back(GF);
        continue;
      }
      const auto *GV = dyn_cast<GlobalVariable>(G);
      if (!GV)
        return std::nullopt; // an alias or an ifunc
      if (Slots.count(GV->getName().str()))
        continue;
      if (GV->isDeclaration() || !GV->isConstant())
        return std::nullopt;
      // A constant naming other globals (a table of addresses) would need
      // them too: not followed.
      std::vector<const Constant *> Inits = {GV->getInitializer()};
      while (!Inits.empty()) {
        const Constant *C = Inits.back();
        Inits.pop_back();
        if (isa<GlobalValue>(C))
          return std::nullopt;
        for (const Use &U : C->operands())
          if (const auto *CC = dyn_cast<Constant>(U.get()))
            Inits.push_back(CC);
      }
    }
  }
  return All;
}

/// The number of calls of `F` in its module.
unsigned callsOf(const Function &F) {
  unsigned N = 0;
  for (const User *U : F.users())
    N += isa<CallBase>(U);
  return N;
}

/// The compute body of the kernel entry `E`: of the functions `E` calls
/// that are defined in the module, local to it and called nowhere else
/// (TVM's `NAME_compute_`; its error helpers are called from every check),
/// the one with the most instructions; null when there is none or two
/// share the most.
Function *computeBodyOf(Function &E) {
  Function *Body = nullptr;
  bool Tie = false;
  for (BasicBlock &BB : E)
    for (Instruction &I : BB) {
      auto *Call = dyn_cast<CallBase>(&I);
      Function *F = Call ? Call->getCalledFunction() : nullptr;
      if (!F || F == Body || F->isDeclaration() || !F->hasLocalLinkage() ||
          !F->hasOneUse())
        continue;
      const unsigned N = F->getInstructionCount();
      if (Body && N == Body->getInstructionCount()) {
        Tie = true;
      } else if (!Body || N > Body->getInstructionCount()) {
        Body = F;
        Tie = false;
      }
    }
  return Tie ? nullptr : Body;
}

/// `Body`, the compute body of kernel `Name`, made an exported function of
/// `M` named computeBodySymbol(Name), called with the C convention (TVM
/// makes bodies fastcc: internal to its module).
void exportComputeBody(Function &Body, const std::string &Name) {
  Body.setName(computeBodySymbol(Name));
  Body.setLinkage(GlobalValue::ExternalLinkage);
  Body.setVisibility(GlobalValue::DefaultVisibility);
  Body.setUnnamedAddr(GlobalValue::UnnamedAddr::None);
  Body.setComdat(nullptr);
  Body.setCallingConv(CallingConv::C);
  // One copy, the kernel tier's (TVM marks its bodies so too).
  Body.addFnAttr(Attribute::NoInline);
  for (User *U : Body.users())
    cast<CallBase>(U)->setCallingConv(CallingConv::C);
}

/// In the extracted module: entries renamed, external and always inlined;
/// the other definitions internal, always inlined where called once
/// (compute bodies; TVM's error helpers, called from every check, stay
/// calls);
/// no target attributes (the caller's code generator has the host's);
/// unused declarations gone.
void prepareClone(Module &Clone, const std::set<std::string> &Kernels) {
  for (const std::string &Name : Kernels) {
    Function *E = Clone.getFunction("__tvm_ffi_" + Name);
    E->setName(inlineKernelSymbol(Name));
    E->setLinkage(GlobalValue::ExternalLinkage);
    E->setVisibility(GlobalValue::DefaultVisibility);
    E->setDLLStorageClass(GlobalValue::DefaultStorageClass);
    E->removeFnAttr(Attribute::NoInline);
    E->addFnAttr(Attribute::AlwaysInline);
  }
  std::set<std::string> Entries;
  for (const std::string &Name : Kernels)
    Entries.insert(inlineKernelSymbol(Name));
  for (Function &F : Clone) {
    // TVM's type-based alias tags are per kernel (a tag per buffer): two
    // kernels inlined into one function may reach the same stack buffer
    // under different tags, which would claim the accesses do not alias.
    for (BasicBlock &BB : F)
      for (Instruction &I : BB)
        I.setMetadata(LLVMContext::MD_tbaa, nullptr);
    F.removeFnAttr("target-cpu");
    F.removeFnAttr("target-features");
    F.removeFnAttr("tune-cpu");
    // A compute body is in the kernel tier's code, not the caller's.
    if (F.isDeclaration() && F.getName().starts_with(computeBodySymbol("")))
      F.setDSOLocal(false);
    if (F.isDeclaration() || Entries.count(F.getName().str()))
      continue;
    F.setLinkage(GlobalValue::InternalLinkage);
    F.setComdat(nullptr);
    if (callsOf(F) == 1) {
      F.removeFnAttr(Attribute::NoInline);
      F.addFnAttr(Attribute::AlwaysInline);
    }
  }
  for (Function &F : make_early_inc_range(Clone))
    if (F.isDeclaration() && F.use_empty())
      F.eraseFromParent();
  for (GlobalVariable &G : make_early_inc_range(Clone.globals()))
    if (G.use_empty())
      G.eraseFromParent();
}

} // namespace

std::shared_ptr<InlineKernels>
extractInlineKernels(Module &M, const std::vector<std::string> &Entries,
                     const std::vector<std::string> &Slots,
                     const std::map<std::string, uint64_t> &Absolute,
                     const InlineKernelLimits &Limits) {
  const std::set<std::string> SlotNames(Slots.begin(), Slots.end());
  std::set<const GlobalValue *> Keep;
  std::set<const Function *> Bodies;
  auto K = std::make_shared<InlineKernels>();
  for (const std::string &Name : Entries) {
    Function *E = M.getFunction("__tvm_ffi_" + Name);
    // The caller leaves the result None: the kernel must not write it.
    if (!E || E->isDeclaration() || E->arg_size() != 4 ||
        !E->getArg(3)->hasAttribute(Attribute::ReadNone))
      continue;
    std::optional<std::set<const GlobalValue *>> R =
        reachedBy(*E, SlotNames, Limits.MaxInstructions);
    Function *Body = nullptr;
    // (The body's symbol must be free in the module: it is looked up.)
    if (!R && !M.getFunction(computeBodySymbol(Name)) &&
        (Body = computeBodyOf(*E)))
      R = reachedBy(*E, SlotNames, Limits.MaxWrapperInstructions, Body);
    if (!R)
      continue;
    Keep.insert(R->begin(), R->end());
    K->Kernels.insert(Name);
    if (Body) {
      exportComputeBody(*Body, Name);
      Bodies.insert(Body);
      K->CallBodies.insert(Name);
    }
  }
  if (K->Kernels.empty())
    return nullptr;
  // Definitions of what they reach; the slots, the compute bodies called
  // (and the rest) declarations.
  ValueToValueMapTy VMap;
  std::unique_ptr<Module> Clone =
      CloneModule(M, VMap, [&](const GlobalValue *G) {
        return Keep.count(G) && !SlotNames.count(G->getName().str()) &&
               !Bodies.count(dyn_cast<Function>(G));
      });
  prepareClone(*Clone, K->Kernels);
  raw_string_ostream OS(K->Bitcode);
  WriteBitcodeToFile(*Clone, OS);
  OS.flush();
  const XXH128_hash_t H = XXH3_128bits(K->Bitcode.data(), K->Bitcode.size());
  K->Hash = fmt::format("{:016x}{:016x}", H.high64, H.low64);
  for (const Function &F : *Clone)
    if (F.isDeclaration())
      if (auto It = Absolute.find(F.getName().str()); It != Absolute.end())
        K->Symbols.insert(*It);
  return K;
}

Error linkInlineKernels(Module &Dst, const InlineKernels &K,
                        const std::set<std::string> &Names,
                        std::map<std::string, uint64_t> &Absolute) {
  Expected<std::unique_ptr<Module>> Src = parseBitcodeFile(
      MemoryBufferRef(K.Bitcode, "vmjit inline kernels"), Dst.getContext());
  if (!Src)
    return Src.takeError();
  if (Linker::linkModules(Dst, std::move(*Src), Linker::LinkOnlyNeeded))
    return createStringError(std::errc::invalid_argument,
                             "cannot link the kernels' IR into the unit");
  for (const std::string &Name : Names)
    if (Function *F = Dst.getFunction(inlineKernelSymbol(Name)))
      F->setLinkage(GlobalValue::InternalLinkage);
  for (const auto &[Name, Addr] : K.Symbols)
    Absolute[Name] = Addr;
  return Error::success();
}

} // namespace vmjit::jit
