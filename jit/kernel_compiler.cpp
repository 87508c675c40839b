//===- kernel_compiler.cpp - TVM's kernels compiled from their bitcode ----===//
//
// See kernel_compiler.h. What the module must look like (what TVM's LLVM
// back end writes): `__tvm_ffi_NAME` packed entries with the safe-call
// signature, internal compute bodies, context slots (global pointers named
// `__` and a host function's name, linkonce) that the loader fills, and
// undefined references only to TVM's C API functions vmjit serves
// (TVMFFIErrorSetRaisedFromCStrParts, ...), bound to vmjit's runtime.
//
//===----------------------------------------------------------------------===//

#include "kernel_compiler.h"
#include "kernel_entries.h"

#include "kernel_effects.h"
#include "select_arms.h"
#include "transpose_nests.h"

#include "vmjit/jit/host_info.h"
#include "vmjit/runtime/tvm_backend.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <xxhash.h>

using namespace llvm;

namespace vmjit::jit {
namespace {

constexpr StringRef kEntryPrefix = "__tvm_ffi_";

Error makeError(const Twine &Message) {
  return make_error<StringError>(Message, inconvertibleErrorCode());
}

/// Whether `F` has the safe-call signature `i32 (ptr, ptr, i32, ptr)`.
bool isSafeCall(const Function &F) {
  FunctionType *T = F.getFunctionType();
  return !T->isVarArg() && T->getReturnType()->isIntegerTy(32) &&
         T->getNumParams() == 4 && T->getParamType(0)->isPointerTy() &&
         T->getParamType(1)->isPointerTy() &&
         T->getParamType(2)->isIntegerTy(32) &&
         T->getParamType(3)->isPointerTy();
}

/// The value vmjit serves for context slot or C API function `Name` (the
/// slot's name: "__" and the function's), or null.
void *servedHostFunction(StringRef SlotName) {
  for (const tvm::ContextSymbol &C : tvm::contextSymbols())
    if (C.Name == std::string_view(SlotName.data(), SlotName.size()))
      return C.Value;
  return nullptr;
}

/// A short list of names for messages: the first few, then a count.
std::string nameList(const std::vector<std::string> &Names) {
  constexpr size_t kShown = 4;
  std::string S;
  for (size_t I = 0; I < Names.size() && I < kShown; ++I)
    S += (I ? ", " : "") + Names[I];
  if (Names.size() > kShown)
    S += fmt::format(" and {} more", Names.size() - kShown);
  return S;
}

/// Checks the module's entries against the library's functions; fills
/// `Entries` with the entries' names.
Error checkEntries(Module &M, const std::string &Path,
                   const std::vector<std::string> &LibraryNames,
                   std::vector<std::string> &Entries) {
  std::vector<std::string> BadSignature;
  for (Function &F : M) {
    if (F.isDeclaration() || F.hasLocalLinkage() ||
        !F.getName().starts_with(kEntryPrefix))
      continue;
    Entries.push_back(F.getName().drop_front(kEntryPrefix.size()).str());
    if (!isSafeCall(F))
      BadSignature.push_back(Entries.back());
  }
  std::sort(Entries.begin(), Entries.end());
  if (!BadSignature.empty())
    return makeError(fmt::format("{}: entries without the safe-call "
                                 "signature i32 (ptr, ptr, i32, ptr): {}",
                                 Path, nameList(BadSignature)));
  std::vector<std::string> Sorted = LibraryNames;
  std::sort(Sorted.begin(), Sorted.end());
  std::vector<std::string> OnlyBitcode, OnlyLibrary;
  std::set_difference(Entries.begin(), Entries.end(), Sorted.begin(),
                      Sorted.end(), std::back_inserter(OnlyBitcode));
  std::set_difference(Sorted.begin(), Sorted.end(), Entries.begin(),
                      Entries.end(), std::back_inserter(OnlyLibrary));
  if (OnlyBitcode.empty() && OnlyLibrary.empty())
    return Error::success();
  std::string Why;
  if (!OnlyLibrary.empty())
    Why += fmt::format("the library's {} not in the bitcode",
                       nameList(OnlyLibrary));
  if (!OnlyBitcode.empty())
    Why += fmt::format("{}the bitcode's {} not in the library",
                       Why.empty() ? "" : "; ", nameList(OnlyBitcode));
  return makeError(fmt::format(
      "{} does not match the kernel library ({} entries against {}): {}", Path,
      Entries.size(), Sorted.size(), Why));
}

/// TVM's target attributes (its `target=`'s CPU and features) replaced by
/// the host's on every function.
void retarget(Module &M) {
  const HostInfo &Host = hostInfo();
  for (Function &F : M) {
    F.removeFnAttr("target-cpu");
    F.removeFnAttr("target-features");
    F.removeFnAttr("tune-cpu");
    if (F.isDeclaration())
      continue;
    F.addFnAttr("target-cpu", Host.CPU);
    if (!Host.Features.empty())
      F.addFnAttr("target-features", Host.Features);
  }
}

/// Makes the context slots the module defines exported definitions (TVM
/// writes them linkonce: discardable, and not to be assumed null), binds
/// its undefined C API functions to vmjit's; fills `Slots` with the
/// slots' names and `Absolute` with the bindings.
Error bindHost(Module &M, const std::string &Path,
               std::vector<std::string> &Slots,
               std::map<std::string, uint64_t> &Absolute) {
  for (GlobalVariable &G : M.globals()) {
    StringRef Name = G.getName();
    const bool LibraryCtx = Name == StringRef(tvm::kLibraryCtxSymbol.data(),
                                              tvm::kLibraryCtxSymbol.size());
    if (!LibraryCtx &&
        !tvm::isContextSlotName(std::string_view(Name.data(), Name.size())))
      continue;
    if (G.isDeclaration())
      return makeError(fmt::format("{}: the context slot {} is declared, "
                                   "not defined",
                                   Path, Name.str()));
    if (!LibraryCtx && !servedHostFunction(Name))
      return makeError(fmt::format("{} needs the host function '{}', which "
                                   "vmjit does not provide",
                                   Path, Name.drop_front(2).str()));
    G.setLinkage(GlobalValue::ExternalLinkage);
    G.setVisibility(GlobalValue::DefaultVisibility);
    G.setComdat(nullptr);
    Slots.push_back(Name.str());
  }
  for (Function &F : M) {
    if (!F.isDeclaration() || F.isIntrinsic())
      continue;
    if (void *Host = servedHostFunction(("__" + F.getName()).str()))
      Absolute[F.getName().str()] = reinterpret_cast<uint64_t>(Host);
  }
  return Error::success();
}

/// A kernel module read and checked (readKernelModule).
struct KernelModule {
  std::unique_ptr<Module> M;
  /// The packed functions it defines (checked against the library's).
  std::vector<std::string> Entries;
  /// Its context slots, made exported definitions.
  std::vector<std::string> Slots;
  /// The C API functions it calls, bound to the runtime's.
  std::map<std::string, uint64_t> Absolute;
  /// XXH3-128 of the file's bytes.
  XXH128_hash_t Hash;
};

/// The bitcode file `Path` read into `Ctx` and checked: its entries against
/// `LibraryNames`, its context slots made exported definitions, its C API
/// calls bound, its target attributes the host's.
Expected<KernelModule>
readKernelModule(LLVMContext &Ctx, const std::string &Path,
                 const std::vector<std::string> &LibraryNames) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer = MemoryBuffer::getFile(Path);
  if (!Buffer)
    return makeError(
        fmt::format("cannot read {}: {}", Path, Buffer.getError().message()));
  KernelModule K;
  const StringRef Bytes = (*Buffer)->getBuffer();
  K.Hash = XXH3_128bits(Bytes.data(), Bytes.size());
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile((*Buffer)->getMemBufferRef(), Ctx);
  if (!M)
    return makeError(fmt::format("{} is not LLVM bitcode this LLVM reads: {}",
                                 Path, toString(M.takeError())));
  K.M = std::move(*M);
  if (Error Err = checkEntries(*K.M, Path, LibraryNames, K.Entries))
    return Err;
  if (Error Err = bindHost(*K.M, Path, K.Slots, K.Absolute))
    return Err;
  retarget(*K.M);
  K.M->setModuleIdentifier(Path);
  return K;
}

/// What compiled kernels depend on beyond the engine's options (its
/// fingerprint holds the CPU, its features, the optimization level, Polly
/// and the FP mode): the bitcode, and what this file does to it before the
/// pipeline (the entries added, the transposes rewritten, the selects'
/// math calls shared): the number after "tier" changes with that.
std::string kernelCacheKey(const XXH128_hash_t &Hash) {
  const HostInfo &Host = hostInfo();
  return fmt::format("vmjit kernel tier 6\nbitcode {:016x}{:016x}\ncpu {}\n"
                     "features {}\n",
                     Hash.high64, Hash.low64, Host.CPU, Host.Features);
}

} // namespace

Expected<KernelObject>
compileKernelObject(Engine &E, const std::string &Path,
                    const std::vector<std::string> &LibraryNames) {
  auto Start = std::chrono::steady_clock::now();
  LLVMContext Ctx;
  Expected<KernelModule> M = readKernelModule(Ctx, Path, LibraryNames);
  if (!M)
    return M.takeError();
  KernelObject K;
  // Analyzed before the engine's pipeline changes the module.
  K.Effects = analyzeKernelEffects(*M->M, M->Entries);
  K.Entries = std::move(M->Entries);
  K.Transposes = rewriteTransposeNests(*M->M);
  shareSelectedCalls(*M->M);
  Expected<std::string> Object =
      E.tryEmitObject(*M->M, kernelCacheKey(M->Hash), &K.CacheHit);
  if (!Object)
    return Object.takeError();
  K.Object = std::move(*Object);
  K.CPU = hostInfo().CPU;
  K.Features = hostInfo().Features;
  K.TotalMs = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - Start)
                  .count();
  return K;
}

Expected<CompiledKernels>
compileKernels(Engine &E, const std::string &Path,
               const std::vector<std::string> &LibraryNames,
               const std::atomic<bool> *Cancel) {
  auto Start = std::chrono::steady_clock::now();
  auto Ctx = std::make_unique<LLVMContext>();
  Expected<KernelModule> M = readKernelModule(*Ctx, Path, LibraryNames);
  if (!M)
    return M.takeError();
  const std::vector<std::string> &Entries = M->Entries;
  const std::vector<std::string> &Slots = M->Slots;
  const XXH128_hash_t Hash = M->Hash;

  // Analyzed before anything changes the module, as compileKernelObject.
  std::map<std::string, KernelEffects> Effects =
      analyzeKernelEffects(*M->M, Entries);
  const unsigned Transposes = rewriteTransposeNests(*M->M);
  shareSelectedCalls(*M->M);
  std::shared_ptr<InlineKernels> Inline =
      extractInlineKernels(*M->M, Entries, Slots, M->Absolute);
  addAlignedEntries(*M->M, Entries, M->Absolute);
  std::vector<std::string> Exports = Slots;
  for (const std::string &Name : Entries)
    Exports.push_back(alignedEntrySymbol(Name));
  if (Inline)
    for (const std::string &Name : Inline->CallBodies)
      Exports.push_back(computeBodySymbol(Name));
  const std::string CacheKey = kernelCacheKey(Hash);
  Expected<std::unique_ptr<CompiledUnit>> Unit =
      E.tryCompile(std::move(Ctx), std::move(M->M), M->Absolute, Exports,
                   CacheKey, Cancel);
  if (!Unit)
    return Unit.takeError();

  CompiledKernels K;
  for (const std::string &Name : Entries)
    K.Entries[Name] = (*Unit)->address(alignedEntrySymbol(Name));
  for (const std::string &Name : Slots)
    K.Slots[Name] = (*Unit)->address(Name);
  if (Inline) {
    Inline->Symbols.insert(K.Slots.begin(), K.Slots.end());
    for (const std::string &Name : Inline->CallBodies)
      Inline->Symbols[computeBodySymbol(Name)] =
          (*Unit)->address(computeBodySymbol(Name));
  }
  K.Inline = std::move(Inline);
  K.Effects = std::move(Effects);
  K.Unit = std::move(*Unit);
  K.Transposes = Transposes;
  K.TotalMs = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - Start)
                  .count();
  return K;
}

Expected<std::map<std::string, KernelEffects>>
kernelEffectsOfFile(const std::string &Path,
                    const std::vector<std::string> &LibraryNames,
                    std::map<std::string, std::string> *Reasons) {
  LLVMContext Ctx;
  Expected<KernelModule> M = readKernelModule(Ctx, Path, LibraryNames);
  if (!M)
    return M.takeError();
  return analyzeKernelEffects(*M->M, M->Entries, Reasons);
}

void fillKernelSlots(const CompiledKernels &K, void *LibraryCtx) {
  for (const auto &[Name, Addr] : K.Slots) {
    void **Slot = reinterpret_cast<void **>(Addr);
    if (!Slot)
      continue;
    if (Name == tvm::kLibraryCtxSymbol)
      *Slot = LibraryCtx;
    else if (void *Host = servedHostFunction(Name))
      *Slot = Host;
  }
}

} // namespace vmjit::jit
