//===- kernel_tier.cpp - The kernel tier's public edge --------------------===//
//
// KernelTier: one slot per kernel (kernel_slot.h) served by an in-process
// KernelLibrary, and a compile job (on the compile pool, or inline): an
// engine of its own (O3, Polly, strict FP unless fast math, the caller's
// cache), kernel_compiler.h's compile, the context slots filled, and the
// compiled entries published to the slots. The only place the kernel
// tier's llvm::Errors become messages.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/kernel_tier.h"

#include "compile_pool.h"
#include "kernel_compiler.h"
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/logging.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>
#include <unordered_map>

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

constexpr const char *kAbandoned =
    "the kernel compile was abandoned (the process is ending)";

} // namespace

struct KernelTier::Shared {
  std::string Bitcode;
  KernelTierOptions Opts;
  /// The kernels, sorted, and their slots (KernelSlotObj).
  std::vector<std::string> Names;
  std::vector<Function> Slots;
  /// The library serving the slots (which owns this state): what the
  /// compiled code looks functions up in (`__tvm_ffi__library_ctx`), so
  /// that TVM's compiled-mode drivers find the slots too.
  KernelLibrary *Ctx = nullptr;

  mutable std::mutex Mutex;
  mutable std::condition_variable Done;
  KernelTierState State = KernelTierState::Compiling;
  std::string Warning;
  double CompileMs = 0;
  bool CacheHit = false;
  unsigned Transposes = 0;
  /// Ready: the compiled code's context slots.
  std::map<std::string, uint64_t, std::less<>> ContextSlots;
  /// KernelTier::effects, computed once.
  std::once_flag EffectsOnce;
  std::map<std::string, KernelEffects> Effects;

  KernelSlotObj &slot(size_t I) const {
    return *static_cast<KernelSlotObj *>(Slots[I].get());
  }
  /// Ends the compile (once; later calls do nothing).
  void finish(KernelTierState S, std::string Why = {}, double Ms = 0,
              bool Hit = false) {
    std::lock_guard Lock(Mutex);
    if (State != KernelTierState::Compiling)
      return;
    State = S;
    Warning = std::move(Why);
    CompileMs = Ms;
    CacheHit = Hit;
    Done.notify_all();
  }
  void compile(const std::atomic<bool> *Cancel);
  /// KernelTier::effects.
  const std::map<std::string, KernelEffects> &effects();
};

void KernelTier::Shared::compile(const std::atomic<bool> *Cancel) {
  EngineOptions EO;
  EO.OptLevel = Opts.OptLevel;
  EO.Polly = Opts.Polly;
  EO.FastMath = Opts.FastMath;
  EO.CacheDir = Opts.CacheDir;
  EO.PerfSupport = Opts.PerfSupport;
  llvm::Expected<std::unique_ptr<Engine>> E = Engine::tryCreate(EO);
  if (!E)
    return finish(KernelTierState::Failed,
                  fmt::format("{}: TVM's kernels are used: {}", Bitcode,
                              shortened(llvm::toString(E.takeError()))));
  llvm::Expected<CompiledKernels> K =
      compileKernels(**E, Bitcode, Names, Cancel);
  if (!K) {
    std::string Why;
    llvm::handleAllErrors(
        K.takeError(), [&](const CompileAbandoned &) { Why = kAbandoned; },
        [&](const llvm::ErrorInfoBase &EI) {
          Why = "TVM's kernels are used: " + shortened(EI.message());
        });
    return finish(KernelTierState::Failed, Why);
  }
  fillKernelSlots(*K, Ctx);
  const bool Hit = K->Unit->stats().CacheHit;
  std::shared_ptr<CompiledUnit> Unit = std::move(K->Unit);
  // The effects of the same bitcode go with each entry (tier 2 reads
  // them): the compile's own analysis, unless effects() came first.
  std::call_once(EffectsOnce, [&] { Effects = std::move(K->Effects); });
  const std::map<std::string, KernelEffects> &Proven = Effects;
  for (size_t I = 0; I < Names.size(); ++I) {
    auto It = K->Entries.find(Names[I]);
    if (It == K->Entries.end())
      continue;
    auto E = Proven.find(Names[I]);
    std::shared_ptr<const void> Inline;
    if (K->Inline && K->Inline->Kernels.count(Names[I]))
      Inline = K->Inline;
    slot(I).publish(reinterpret_cast<VMJITSafeCallType>(It->second), Unit,
                    E == Proven.end() ? std::nullopt
                                      : std::optional<KernelEffects>(E->second),
                    std::move(Inline));
  }
  logger().debug("kernel tier: {} kernels of {} {} in {:.1f} ms", Names.size(),
                 Bitcode, Hit ? "loaded from the cache" : "compiled",
                 K->TotalMs);
  {
    std::lock_guard Lock(Mutex);
    ContextSlots.insert(K->Slots.begin(), K->Slots.end());
    Transposes = K->Transposes;
  }
  // Code compiled meanwhile is compiled again with the kernels bound, its
  // compiles queued before the tier is Ready (what waits for the tier
  // then finds them with the manager's drain).
  try {
    rebindPublishedKernels();
  } catch (const std::exception &Ex) {
    logger().warn("kernel tier: code compiled before {}'s kernels were "
                  "ready keeps calling them as it did: {}",
                  Bitcode, Ex.what());
  }
  finish(KernelTierState::Ready, "", K->TotalMs, Hit);
}

namespace {

/// A compile job's guard: a job the pool drops unrun (the process is
/// ending) still ends its tier, so that nothing waits for it forever.
struct JobGuard {
  explicit JobGuard(std::shared_ptr<KernelTier::Shared> S) : S(std::move(S)) {}
  JobGuard(const JobGuard &) = delete;
  JobGuard &operator=(const JobGuard &) = delete;
  ~JobGuard() { S->finish(KernelTierState::Failed, kAbandoned); }
  std::shared_ptr<KernelTier::Shared> S;
};

/// The tiers alive in the process, by file, library and options (never
/// destroyed: a tier may die during the process's exit).
struct TierRegistry {
  std::mutex Mutex;
  std::unordered_map<std::string, std::weak_ptr<KernelTier>> Tiers;
};
TierRegistry &registry() {
  static auto *R = new TierRegistry();
  return *R;
}

/// The registry key of a tier: the file as it is now, the library, the
/// options.
std::string tierKey(const std::string &Path, const KernelLibrary &Tvm,
                    const KernelTierOptions &O) {
  std::error_code EC;
  const std::filesystem::path Canonical =
      std::filesystem::weakly_canonical(Path, EC);
  const auto Size = std::filesystem::file_size(Path, EC);
  const auto Time = std::filesystem::last_write_time(Path, EC);
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}{}{}{}", Canonical.string(), Size,
                     Time.time_since_epoch().count(), Tvm.path(), O.CacheDir,
                     O.FastMath, O.Polly, O.OptLevel, O.PerfSupport);
}

} // namespace

std::shared_ptr<KernelTier>
KernelTier::start(const std::string &BitcodePath,
                  std::shared_ptr<KernelLibrary> Tvm,
                  const KernelTierOptions &Opts) {
  std::error_code EC;
  if (!std::filesystem::is_regular_file(BitcodePath, EC))
    throwError("JITError",
               fmt::format("kernel bitcode {}: no such file", BitcodePath));
  const std::string Key = tierKey(BitcodePath, *Tvm, Opts);
  TierRegistry &R = registry();
  std::unique_lock Lock(R.Mutex);
  if (std::shared_ptr<KernelTier> Alive = R.Tiers[Key].lock()) {
    Lock.unlock();
    if (!Opts.Background)
      Alive->wait();
    return Alive;
  }
  auto S = std::make_shared<Shared>();
  S->Bitcode = BitcodePath;
  S->Opts = Opts;
  std::map<std::string, Function, std::less<>> Functions;
  for (const std::string &Name : Tvm->functionNames()) {
    std::optional<Function> F = Tvm->find(Name);
    if (!F || !F->get()->isFreeEntry())
      continue;
    Function Slot(
        ObjectPtr<Object>(makeObject<KernelSlotObj>(
            Name, std::move(*F), KernelSlotObj::Entry::AlignmentChecking)));
    S->Names.push_back(Name);
    S->Slots.push_back(Slot);
    Functions.emplace(Name, std::move(Slot));
  }
  std::shared_ptr<KernelTier> T(new KernelTier());
  T->Core = S;
  T->Library = KernelLibrary::fromFunctions(BitcodePath, std::move(Functions),
                                            {}, S);
  S->Ctx = T->Library.get();
  R.Tiers[Key] = T;
  Lock.unlock();
  if (!Opts.Background) {
    S->compile(nullptr);
  } else {
    // Also where no tier manager is made (the interpreter only).
    shutdownCompilePoolAtExit();
    auto Guard = std::make_shared<JobGuard>(S);
    submitCompile(
        S.get(),
        [Guard](const CancelFlag &Cancel) { Guard->S->compile(&Cancel); },
        CompileLane::Long);
  }
  return T;
}

KernelTier::~KernelTier() {
  // Abandons a compile nobody can see the end of: a queued job is dropped,
  // a running one stops at its next IR pass, in the background (it holds
  // the tier's shared state itself; code generation, once begun, may take
  // seconds, which the destructor does not wait for). The library's
  // slots, which VMs may still hold, keep TVM's code.
  abandonCompiles(Core.get());
  TierRegistry &R = registry();
  std::lock_guard Lock(R.Mutex);
  for (auto It = R.Tiers.begin(); It != R.Tiers.end();)
    It = It->second.expired() ? R.Tiers.erase(It) : std::next(It);
}

KernelTierStatus KernelTier::status() const {
  KernelTierStatus St;
  {
    std::lock_guard Lock(Core->Mutex);
    St.State = Core->State;
    St.Warning = Core->Warning;
    St.CompileMs = Core->CompileMs;
    St.CacheHit = Core->CacheHit;
    St.Transposes = Core->Transposes;
  }
  St.Bitcode = Core->Bitcode;
  St.Kernels = Core->Names;
  for (size_t I = 0; I < Core->Slots.size(); ++I) {
    St.TvmCalls += Core->slot(I).tvmCalls();
    St.AlignedCopies += Core->slot(I).alignedCopies();
  }
  return St;
}

KernelTierStatus KernelTier::wait() const {
  {
    std::unique_lock Lock(Core->Mutex);
    Core->Done.wait(Lock, [&] {
      return Core->State != KernelTierState::Compiling;
    });
  }
  return status();
}

namespace {

/// The effects of the kernels `Names` in bitcode file `BitcodePath`, or
/// none when it does not fit them.
std::map<std::string, KernelEffects>
effectsOf(const std::string &BitcodePath,
          const std::vector<std::string> &Names) {
  auto Start = std::chrono::steady_clock::now();
  llvm::Expected<std::map<std::string, KernelEffects>> E =
      kernelEffectsOfFile(BitcodePath, Names);
  if (!E) {
    logger().debug("no kernel effects: {}",
                   shortened(llvm::toString(E.takeError())));
    return {};
  }
  logger().debug("effects of {} kernels of {} in {:.1f} ms", E->size(),
                 BitcodePath,
                 std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - Start)
                     .count());
  return std::move(*E);
}

} // namespace

std::map<std::string, KernelEffects>
kernelEffects(const std::string &BitcodePath, const KernelLibrary &Tvm) {
  return effectsOf(BitcodePath, Tvm.functionNames());
}

const std::map<std::string, KernelEffects> &KernelTier::Shared::effects() {
  std::call_once(EffectsOnce, [&] { Effects = effectsOf(Bitcode, Names); });
  return Effects;
}

const std::map<std::string, KernelEffects> &KernelTier::effects() const {
  return Core->effects();
}

const void *KernelTier::compiledSymbol(std::string_view Name) const {
  std::lock_guard Lock(Core->Mutex);
  auto It = Core->ContextSlots.find(Name);
  return It == Core->ContextSlots.end()
             ? nullptr
             : reinterpret_cast<const void *>(It->second);
}

std::string KernelTierStatus::note() const {
  switch (State) {
  case KernelTierState::Compiling:
    return fmt::format("kernels: TVM's code; vmjit's are compiling ({})",
                       Bitcode);
  case KernelTierState::Failed:
    return fmt::format("kernels: TVM's code ({})", Warning);
  case KernelTierState::Ready:
    break;
  }
  std::string Note = fmt::format(
      "kernels: {} of {} from vmjit's code ({}; {} in {:.1f} ms", Kernels.size(),
      Kernels.size(), Bitcode,
      CacheHit ? "from the object cache" : "compiled", CompileMs);
  if (Transposes)
    Note += fmt::format("; {} transpose{} blocked", Transposes,
                        Transposes == 1 ? "" : "s");
  if (TvmCalls)
    Note += fmt::format("; {} call{} ran TVM's code", TvmCalls,
                        TvmCalls == 1 ? "" : "s");
  if (AlignedCopies)
    Note += fmt::format("; {} call{} copied unaligned tensors", AlignedCopies,
                        AlignedCopies == 1 ? "" : "s");
  return Note + ")";
}

std::string KernelTierStatus::json() const {
  static constexpr const char *kStates[] = {"compiling", "ready", "failed"};
  nlohmann::ordered_json J;
  J["state"] = kStates[static_cast<int>(State)];
  J["bitcode"] = Bitcode;
  J["kernels"] = Kernels.size();
  if (State == KernelTierState::Ready) {
    J["compile_ms"] = CompileMs;
    J["cache_hit"] = CacheHit;
    J["transposes"] = Transposes;
  }
  if (State == KernelTierState::Failed)
    J["warning"] = Warning;
  J["tvm_calls"] = TvmCalls;
  J["aligned_copies"] = AlignedCopies;
  return J.dump();
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
