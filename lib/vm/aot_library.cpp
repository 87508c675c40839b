//===- aot_library.cpp - Loading ahead-of-time compiled libraries ---------===//
//
// Reads a `vmjit compile` library's manifest (every field checked before
// use), fills its import table, loads its executable, and attaches its
// code to VMs through a TierController of fixed slots.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/aot_library.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/cpu_features.h"
#include "vmjit/vm/kernel_effects_json.h"
#include "vmjit/vm/native_helpers.h"
#include "vmjit/vm/special_builtins.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

namespace vmjit::vm {

namespace {

[[noreturn]] void bad(const std::string &Name, std::string_view What) {
  throwError("FormatError",
             fmt::format("{}: ahead-of-time manifest: {}", Name, What));
}

/// Fills the library's import table (once per process: every load of the
/// same library maps the same table, and the values never change).
void fillImports(const AotManifest &M, const std::string &Name) {
  static std::mutex Lock;
  std::lock_guard<std::mutex> G(Lock);
  for (uint32_t I = 0; I < M.NumImports; ++I) {
    const char *Import = M.ImportNames[I];
    void *Address = Import ? nativeHelperAddress(Import) : nullptr;
    if (!Address)
      throwError("LibraryError",
                 fmt::format("{}: the code needs the native helper '{}', "
                             "which this vmjit does not have (written by "
                             "another version: {})",
                             Name, Import ? Import : "(null)",
                             M.Producer ? M.Producer : "unknown"));
    M.Imports[I] = Address;
  }
}

/// The joined list of `Names`: "a, b and c".
std::string joined(const std::vector<std::string> &Names) {
  std::string S;
  for (size_t I = 0; I < Names.size(); ++I)
    S += (I == 0 ? "" : I + 1 == Names.size() ? " and " : ", ") + Names[I];
  return S;
}

/// Refuses compiled kernels (version 3) that need CPU features this CPU
/// lacks: they would die of an illegal instruction.
void checkKernelCpu(const AotManifest &M, const std::string &Name) {
  if (!M.KernelFeatures)
    return;
  const std::vector<std::string> Missing = missingCpuFeatures(M.KernelFeatures);
  if (Missing.empty())
    return;
  throwError("LibraryError",
             fmt::format("{}: its kernels were compiled by vmjit compile "
                         "--kernels for a CPU ({}) with {}, which this CPU "
                         "lacks; compile it again on this machine, or "
                         "without --kernels",
                         Name, M.KernelCPU ? M.KernelCPU : "unknown",
                         joined(Missing)));
}

/// A TierController whose slots hold the library's code from the start.
class AotTier final : public TierController {
public:
  explicit AotTier(std::shared_ptr<const AotCode> Code, size_t N)
      : Code(std::move(Code)), Slots(N) {
    for (size_t I = 0; I < N; ++I)
      Slots[I].store(this->Code->code(static_cast<int64_t>(I)),
                     std::memory_order_relaxed);
  }
  const std::atomic<NativeFn> *codeSlot(int64_t Func) const noexcept override {
    return &Slots[static_cast<size_t>(Func)];
  }
  int64_t threshold() const noexcept override { return 0; }
  void requestCompile(VirtualMachine &, int64_t) override {}
  TierStats tierStats(int64_t Func) const override {
    TierStats S;
    S.Compiled = Code->code(Func) != nullptr;
    S.AheadOfTime = S.Compiled;
    return S;
  }
  bool countsEveryCall(int64_t Func) const noexcept override {
    return !Code->inlines(Func) ||
           countedWhenInlined(Code->executable()->function(Func).Name);
  }

private:
  std::shared_ptr<const AotCode> Code;
  std::vector<std::atomic<NativeFn>> Slots;
};

} // namespace

std::shared_ptr<AotCode> AotCode::open(std::shared_ptr<KernelLibrary> Lib,
                                       const std::string &Name,
                                       const LoadOptions &Opts) {
  const auto *M =
      static_cast<const AotManifest *>(Lib->symbol(kAotManifestSymbol));
  if (!M)
    return nullptr;
  if (M->Magic != kAotMagic)
    bad(Name, "wrong magic");
  if (M->Version < 1 || M->Version > kAotVersion)
    bad(Name, fmt::format("version {}, but this vmjit reads versions 1 to {}",
                          M->Version, kAotVersion));
  if (!M->Program || !M->Functions || (M->NumImports && !M->Imports) ||
      (M->NumImports && !M->ImportNames) || (M->NumInlined && !M->Inlined))
    bad(Name, "a null table");
  if (M->Version >= 3) {
    if ((M->KernelCPU == nullptr) != (M->KernelFeatures == nullptr))
      bad(Name, "kernels without their CPU or features");
    checkKernelCpu(*M, Name);
  }
  fillImports(*M, Name);
  std::shared_ptr<AotCode> Code(new AotCode);
  if (M->Version >= 3 && M->KernelCPU) {
    Code->KernelCPU = *M->KernelCPU ? M->KernelCPU : "unknown";
    Code->KernelBitcode = M->KernelBitcode ? M->KernelBitcode : "";
  }
  if (M->Version >= 4 && M->KernelEffects) {
    std::string Why;
    auto Effects = parseKernelEffectsJson(M->KernelEffects, Why);
    if (!Effects)
      bad(Name, Why);
    Code->KernelEffectsRecorded = std::move(*Effects);
  }
  Code->Producer = M->Producer ? M->Producer : "";
  if (M->Version >= 2 && M->KernelLibraries) {
    std::string_view List = M->KernelLibraries;
    while (!List.empty()) {
      const size_t End = std::min(List.find('\n'), List.size());
      if (End > 0)
        Code->KernelLibraries.emplace_back(List.substr(0, End));
      List.remove_prefix(std::min(End + 1, List.size()));
    }
  }
  Code->Exe = loadExecutableFromBytes(
      {M->Program, static_cast<size_t>(M->ProgramSize)}, Name, Opts);
  if (Code->Exe->functions().size() != M->NumFunctions)
    bad(Name, fmt::format("{} functions, but its executable has {}",
                          M->NumFunctions, Code->Exe->functions().size()));
  for (uint32_t I = 0; I < M->NumFunctions; ++I) {
    const bool IsBytecode =
        Code->Exe->function(I).Kind == FunctionKind::Bytecode;
    if (IsBytecode != (M->Functions[I] != nullptr))
      bad(Name, fmt::format("function {} ('{}') {} native code", I,
                            Code->Exe->function(I).Name,
                            IsBytecode ? "has no" : "is not bytecode but has"));
  }
  for (uint32_t I = 0; I < M->NumInlined; ++I)
    if (M->Inlined[I] >= M->NumFunctions ||
        Code->Exe->function(M->Inlined[I]).Kind == FunctionKind::Bytecode)
      bad(Name, fmt::format("inlined entry {} is not a packed function",
                            M->Inlined[I]));
  Code->Lib = std::move(Lib);
  Code->Manifest = M;
  return Code;
}

NativeFn AotCode::code(int64_t Func) const noexcept {
  return Manifest->Functions[Func];
}

bool AotCode::inlines(int64_t Func) const noexcept {
  for (uint32_t I = 0; I < Manifest->NumInlined; ++I)
    if (Manifest->Inlined[I] == Func)
      return true;
  return false;
}

std::string AotCode::attach(VirtualMachine &VM) const {
  if (&VM.executable() != Exe.get())
    return "the VM runs another executable";
  for (uint32_t I = 0; I < Manifest->NumInlined; ++I) {
    const int64_t K = Manifest->Inlined[I];
    const std::string &Callee = Exe->function(K).Name;
    std::optional<Function> Std = standardFunction(Callee);
    if (!Std || Std->get() != VM.poolEntry(K))
      return fmt::format("the code inlines the standard '{}', but this VM "
                         "calls another function of that name",
                         Callee);
  }
  VM.setTierController(
      std::make_shared<AotTier>(shared_from_this(), Exe->functions().size()));
  for (size_t I = 0; I < Exe->functions().size(); ++I)
    VM.adoptNativeCode(static_cast<int64_t>(I));
  return {};
}

bool modeRunsAotCode(ExecMode Mode) noexcept {
  return Mode == ExecMode::Compiled || Mode == ExecMode::Tiered;
}

} // namespace vmjit::vm
