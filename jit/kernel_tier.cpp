//===- kernel_tier.cpp - The kernel tier's public edge --------------------===//
//
// loadKernelTier: an engine of its own (O3, Polly, strict FP unless fast
// math, the caller's cache), kernel_compiler.h's compile, the context
// slots filled, and the entries wrapped as a KernelLibrary that keeps the
// compiled unit (and through it the engine's state) alive. The only place
// the kernel tier's llvm::Errors become messages.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/kernel_tier.h"

#include "kernel_compiler.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/logging.h"

#include <filesystem>
#include <fmt/format.h>
#include <system_error>

namespace vmjit::jit {

namespace {

/// An error's message cut to one readable line: a failed link lists every
/// symbol of the unit before saying what was missing, at the end.
std::string shortened(std::string Message) {
  constexpr size_t kMax = 400;
  if (Message.size() <= kMax)
    return Message;
  return Message.substr(0, kMax / 2) + " ... " +
         Message.substr(Message.size() - kMax / 2);
}

} // namespace

std::string KernelTierResult::note() const {
  if (!Library)
    return "";
  return fmt::format("kernels: {} of {} from vmjit's code ({}; {} in {:.1f} "
                     "ms)",
                     Kernels.size(), Kernels.size(), Library->path(),
                     CacheHit ? "from the object cache" : "compiled",
                     CompileMs);
}

KernelTierResult loadKernelTier(const std::string &BitcodePath,
                                const KernelLibrary &Tvm,
                                const KernelTierOptions &Opts) {
  std::error_code EC;
  if (!std::filesystem::is_regular_file(BitcodePath, EC))
    throwError("JITError",
               fmt::format("kernel bitcode {}: no such file", BitcodePath));
  KernelTierResult R;
  EngineOptions EO;
  EO.OptLevel = Opts.OptLevel;
  EO.Polly = Opts.Polly;
  EO.FastMath = Opts.FastMath;
  EO.CacheDir = Opts.CacheDir;
  llvm::Expected<std::unique_ptr<Engine>> E = Engine::tryCreate(EO);
  if (!E) {
    R.Warning = fmt::format("{}: TVM's kernels are used: {}", BitcodePath,
                            shortened(llvm::toString(E.takeError())));
    return R;
  }
  llvm::Expected<CompiledKernels> K =
      compileKernels(**E, BitcodePath, Tvm.functionNames());
  if (!K) {
    R.Warning = fmt::format("TVM's kernels are used: {}",
                            shortened(llvm::toString(K.takeError())));
    return R;
  }
  std::map<std::string, VMJITSafeCallType, std::less<>> Entries;
  for (const auto &[Name, Addr] : K->Entries) {
    Entries[Name] = reinterpret_cast<VMJITSafeCallType>(Addr);
    R.Kernels.push_back(Name);
  }
  std::map<std::string, void *, std::less<>> Symbols;
  for (const auto &[Name, Addr] : K->Slots)
    Symbols[Name] = reinterpret_cast<void *>(Addr);
  R.CacheHit = K->Unit->stats().CacheHit;
  R.CompileMs = K->TotalMs;
  std::shared_ptr<CompiledUnit> Unit = std::move(K->Unit);
  R.Library = KernelLibrary::fromEntries(BitcodePath, std::move(Entries),
                                         std::move(Symbols), Unit);
  fillKernelSlots(*K, R.Library.get());
  logger().debug("kernel tier: {} kernels of {} {} in {:.1f} ms",
                 R.Kernels.size(), BitcodePath,
                 R.CacheHit ? "loaded from the cache" : "compiled",
                 R.CompileMs);
  return R;
}

std::string kernelBitcodeBeside(const std::string &Path) {
  std::filesystem::path Bc(Path);
  Bc.replace_extension(".bc");
  std::error_code EC;
  if (Bc == std::filesystem::path(Path) ||
      !std::filesystem::is_regular_file(Bc, EC))
    return "";
  return Bc.string();
}

} // namespace vmjit::jit
