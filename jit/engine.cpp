//===- engine.cpp - LLVM ORC engine for JIT units -------------------------===//
//
// The ORC LLJIT behind vmjit::jit::Engine. Decisions:
//
// * One JITDylib per compiled unit ("vmjit.unit.N"). The unit's `Absolute`
//   bindings are defined in its own JITDylib, so two units can bind the
//   same external name to different addresses and define the same function
//   names; destroying the unit removes the whole JITDylib (its default
//   ResourceTracker with code and data). Each unit JITDylib links against
//   itself first, then against "vmjit.runtime".
// * Nothing of the process is implicitly visible: there is no process
//   symbols JITDylib and no DynamicLibrarySearchGenerator. "vmjit.runtime"
//   holds absolute symbols for the few functions LLVM's code generator may
//   call on its own (mem* and bcmp, 128-bit division, powi, half-precision
//   conversions, libm functions behind math intrinsics), with addresses
//   taken here, so it works in a statically linked binary without
//   -rdynamic.
// * The engine compiles modules itself (new-PM pipeline, then codegen with
//   a TargetMachine created per compile, so concurrent compiles share no
//   LLVM state other than the ExecutionSession) and hands the object file
//   to JITLink through the object layer: the same path for freshly
//   compiled and cached objects. LLJIT's IR layers are not used.
// * Object cache: see object_cache.h. The stored key is an engine
//   fingerprint (cache format, LLVM version, triple, CPU, features,
//   optimization level) followed by the caller's key; only objects that
//   linked successfully are stored. A cached object that fails to link is
//   recompiled from the module.
// * Perf support: LLVM's PerfSupportPlugin (jitdump, for `perf inject
//   --jit`) plus a perf map (/tmp/perf-<pid>.map) written by a small
//   plugin here. JITLoaderPerf keeps process-global state, so only the
//   first live engine with perf support writes the jitdump; every one
//   writes the perf map. Debugger support: the GDB JIT interface through
//   DebugObjectManagerPlugin, like LLJIT's enableDebuggerSupport but bound
//   to the registration function's address rather than found by dlsym.
//   Either option is checked by linking a probe object at creation. LLVM
//   19 cannot deregister code from GDB: a removed unit stays listed in the
//   GDB JIT interface (stale symbols if its addresses are reused).
// * Floating point is strict unless EngineOptions::FastMath: the target's
//   AllowFPOpFusion is Strict, so llvm.fmuladd is never fused into an FMA.
// * Polly (EngineOptions::Polly): the IR pipeline and code generation run
//   in libvmjit_polly.so (polly/polly_abi.h), loaded once from beside the
//   JIT library, on the module's bitcode; the object it returns links and
//   is cached like any other.
// * tryEmitObject runs the same steps (verification, the target, the
//   pipeline and codegen) and returns the object instead of linking it,
//   for the system linker (`vmjit compile --kernels`), cached under its
//   own key when the caller gives one.
// * Units keep the engine's state alive (shared_ptr), so destroying the
//   Engine before its units is safe.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/engine.h"
#include "codegen.h"

#include "object_cache.h"
#include "compile_pool.h"
#include "polly/polly_abi.h"
#include "vmjit/jit/host_info.h"
#include "vmjit/runtime/logging.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/JITLink/JITLink.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/DebugObjectManagerPlugin.h"
#include "llvm/ExecutionEngine/Orc/Debugging/PerfSupportPlugin.h"
#include "llvm/ExecutionEngine/Orc/EPCDebugObjectRegistrar.h"
#include "llvm/ExecutionEngine/Orc/EPCEHFrameRegistrar.h"
#include "llvm/ExecutionEngine/Orc/ExecutorProcessControl.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/JITLoaderGDB.h"
#include "llvm/ExecutionEngine/Orc/TargetProcess/JITLoaderPerf.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <strings.h>
#include <unistd.h>

// Functions from the compiler support library (libgcc / compiler-rt) that
// LLVM's code generator calls for operations without instructions. Declared
// only to take their addresses; the prototypes do not matter.
extern "C" {
void __udivti3();
void __divti3();
void __umodti3();
void __modti3();
void __powidf2();
void __powisf2();
void __extendhfsf2();
void __truncsfhf2();
void __truncdfhf2();
}

using namespace llvm;
using namespace llvm::orc;

namespace vmjit::jit {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point Start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - Start)
      .count();
}

Error makeError(const Twine &Message) {
  return make_error<StringError>(Message, inconvertibleErrorCode());
}

template <typename Fn> uint64_t addressOf(Fn *F) {
  return reinterpret_cast<uint64_t>(reinterpret_cast<void *>(F));
}

/// The functions LLVM may emit calls to without the module declaring them
/// as bound externals: the allow-list of process symbols visible to units.
std::vector<std::pair<const char *, uint64_t>> runtimeSymbols() {
  using D1 = double (*)(double);
  using D2 = double (*)(double, double);
  using D3 = double (*)(double, double, double);
  using F1 = float (*)(float);
  using F2 = float (*)(float, float);
  using F3 = float (*)(float, float, float);
  using DI = double (*)(double, int);
  using FI = float (*)(float, int);
  using DS = void (*)(double, double *, double *);
  using FS = void (*)(float, float *, float *);
  return {
      // Memory intrinsics and what memcmp() == 0 becomes.
      {"memcpy", addressOf(&::memcpy)},
      {"memmove", addressOf(&::memmove)},
      {"memset", addressOf(&::memset)},
      {"memcmp", addressOf(&::memcmp)},
      {"bcmp", addressOf(&::bcmp)},
      // i128 division and remainder, llvm.powi, f16 conversions.
      {"__udivti3", addressOf(&__udivti3)},
      {"__divti3", addressOf(&__divti3)},
      {"__umodti3", addressOf(&__umodti3)},
      {"__modti3", addressOf(&__modti3)},
      {"__powidf2", addressOf(&__powidf2)},
      {"__powisf2", addressOf(&__powisf2)},
      {"__extendhfsf2", addressOf(&__extendhfsf2)},
      {"__truncsfhf2", addressOf(&__truncsfhf2)},
      {"__truncdfhf2", addressOf(&__truncdfhf2)},
      // frem and the math intrinsics that lower to libm calls.
      {"fmod", addressOf(static_cast<D2>(&::fmod))},
      {"fmodf", addressOf(static_cast<F2>(&::fmodf))},
      {"exp", addressOf(static_cast<D1>(&::exp))},
      {"expf", addressOf(static_cast<F1>(&::expf))},
      {"exp2", addressOf(static_cast<D1>(&::exp2))},
      {"exp2f", addressOf(static_cast<F1>(&::exp2f))},
      {"log", addressOf(static_cast<D1>(&::log))},
      {"logf", addressOf(static_cast<F1>(&::logf))},
      {"log2", addressOf(static_cast<D1>(&::log2))},
      {"log2f", addressOf(static_cast<F1>(&::log2f))},
      {"log10", addressOf(static_cast<D1>(&::log10))},
      {"log10f", addressOf(static_cast<F1>(&::log10f))},
      {"pow", addressOf(static_cast<D2>(&::pow))},
      {"powf", addressOf(static_cast<F2>(&::powf))},
      {"sin", addressOf(static_cast<D1>(&::sin))},
      {"sinf", addressOf(static_cast<F1>(&::sinf))},
      {"cos", addressOf(static_cast<D1>(&::cos))},
      {"cosf", addressOf(static_cast<F1>(&::cosf))},
      {"tan", addressOf(static_cast<D1>(&::tan))},
      {"tanf", addressOf(static_cast<F1>(&::tanf))},
      {"fma", addressOf(static_cast<D3>(&::fma))},
      {"fmaf", addressOf(static_cast<F3>(&::fmaf))},
      {"floor", addressOf(static_cast<D1>(&::floor))},
      {"floorf", addressOf(static_cast<F1>(&::floorf))},
      {"ceil", addressOf(static_cast<D1>(&::ceil))},
      {"ceilf", addressOf(static_cast<F1>(&::ceilf))},
      {"trunc", addressOf(static_cast<D1>(&::trunc))},
      {"truncf", addressOf(static_cast<F1>(&::truncf))},
      {"round", addressOf(static_cast<D1>(&::round))},
      {"roundf", addressOf(static_cast<F1>(&::roundf))},
      {"roundeven", addressOf(static_cast<D1>(&::roundeven))},
      {"roundevenf", addressOf(static_cast<F1>(&::roundevenf))},
      {"rint", addressOf(static_cast<D1>(&::rint))},
      {"rintf", addressOf(static_cast<F1>(&::rintf))},
      {"nearbyint", addressOf(static_cast<D1>(&::nearbyint))},
      {"nearbyintf", addressOf(static_cast<F1>(&::nearbyintf))},
      {"fmin", addressOf(static_cast<D2>(&::fmin))},
      {"fminf", addressOf(static_cast<F2>(&::fminf))},
      {"fmax", addressOf(static_cast<D2>(&::fmax))},
      {"fmaxf", addressOf(static_cast<F2>(&::fmaxf))},
      {"ldexp", addressOf(static_cast<DI>(&::ldexp))},
      {"ldexpf", addressOf(static_cast<FI>(&::ldexpf))},
      // What LLVM makes of sin and cos of one value, and of pow(10, x)
      // (TVM's kernels: llm's rotary embedding).
      {"sincos", addressOf(static_cast<DS>(&::sincos))},
      {"sincosf", addressOf(static_cast<FS>(&::sincosf))},
      {"exp10", addressOf(static_cast<D1>(&::exp10))},
      {"exp10f", addressOf(static_cast<F1>(&::exp10f))},
  };
}

/// Where ORC session errors of the current thread's compile() go. The
/// ExecutionSession dispatches in place (on the thread that looks symbols
/// up), so the JITLink errors of a unit's link (e.g. "Symbols not found")
/// are reported on the compiling thread; they are appended to its error
/// message instead of going to the log.
thread_local std::string *SessionErrorSink = nullptr;

void reportSessionError(Error Err) {
  std::string Message = toString(std::move(Err));
  if (SessionErrorSink) {
    if (!SessionErrorSink->empty())
      *SessionErrorSink += "; ";
    *SessionErrorSink += Message;
    return;
  }
  logger().warn("JIT session error: {}", Message);
}

/// Writes /tmp/perf-<pid>.map entries ("start size name") for the
/// functions of every linked object, the format `perf report` reads for
/// JIT code without `perf inject`.
class PerfMapPlugin final : public ObjectLinkingLayer::Plugin {
public:
  static Expected<std::unique_ptr<PerfMapPlugin>> create() {
    std::string Path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
    std::FILE *F = std::fopen(Path.c_str(), "a");
    if (!F)
      return makeError("cannot open " + Path + ": " + std::strerror(errno));
    return std::unique_ptr<PerfMapPlugin>(new PerfMapPlugin(F));
  }
  ~PerfMapPlugin() override { std::fclose(File); }

  void modifyPassConfig(MaterializationResponsibility &MR,
                        jitlink::LinkGraph &G,
                        jitlink::PassConfiguration &Config) override {
    Config.PostFixupPasses.push_back([this](jitlink::LinkGraph &G) {
      std::lock_guard<std::mutex> Lock(Mutex);
      for (jitlink::Symbol *Sym : G.defined_symbols())
        if (Sym->hasName() && Sym->isCallable())
          std::fprintf(File, "%llx %llx %s\n",
                       static_cast<unsigned long long>(
                           Sym->getAddress().getValue()),
                       static_cast<unsigned long long>(Sym->getSize()),
                       Sym->getName().str().c_str());
      std::fflush(File);
      return Error::success();
    });
  }
  Error notifyFailed(MaterializationResponsibility &MR) override {
    return Error::success();
  }
  Error notifyRemovingResources(JITDylib &JD, ResourceKey K) override {
    return Error::success();
  }
  void notifyTransferringResources(JITDylib &JD, ResourceKey DstKey,
                                   ResourceKey SrcKey) override {}

private:
  explicit PerfMapPlugin(std::FILE *F) : File(F) {}
  std::FILE *File;
  std::mutex Mutex;
};

/// JITLoaderPerf has one process-wide dump file: one engine at a time.
std::atomic<bool> PerfSupportInUse{false};

/// The directory JITLoaderPerf will write the jitdump into; creating it
/// up front turns the usual failure (no writable home) into an error
/// here, because PerfSupportPlugin ignores a failed start and every later
/// link would fail.
Error checkJitDumpDirectory() {
  SmallString<128> Path;
  if (const char *Dir = std::getenv("JITDUMPDIR"))
    Path = Dir;
  else if (!sys::path::home_directory(Path))
    Path = ".";
  sys::path::append(Path, ".debug", "jit");
  if (std::error_code EC = sys::fs::create_directories(Path))
    return makeError("perf support: cannot create " + Path + ": " +
                     EC.message());
  if (std::error_code EC = sys::fs::access(Path, sys::fs::AccessMode::Write))
    return makeError("perf support: cannot write to " + Path + ": " +
                     EC.message());
  return Error::success();
}

struct PollyEntries {
  VmjitPollyCompileFn Compile = nullptr;
  VmjitPollyFreeFn Free = nullptr;
  std::string Error;
};

/// libvmjit_polly.so, loaded once (and never unloaded: it holds the shared
/// libLLVM) from the directory of the module holding this code, or from
/// $VMJIT_POLLY_LIBRARY.
const PollyEntries &pollyEntries() {
  static const PollyEntries Entries = [] {
    PollyEntries E;
    std::string Path;
    if (const char *Env = std::getenv("VMJIT_POLLY_LIBRARY"); Env && *Env) {
      Path = Env;
    } else {
      Dl_info Info;
      if (!::dladdr(reinterpret_cast<void *>(&pollyEntries), &Info) ||
          !Info.dli_fname) {
        E.Error = "cannot tell where the JIT library is";
        return E;
      }
      Path = (std::filesystem::path(Info.dli_fname).parent_path() /
              "libvmjit_polly.so")
                 .string();
    }
    void *Handle = ::dlopen(Path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!Handle) {
      const char *Why = ::dlerror();
      E.Error = "cannot load " + Path + ": " + (Why ? Why : "unknown reason");
      return E;
    }
    E.Compile = reinterpret_cast<VmjitPollyCompileFn>(
        ::dlsym(Handle, "vmjitPollyCompile"));
    E.Free =
        reinterpret_cast<VmjitPollyFreeFn>(::dlsym(Handle, "vmjitPollyFree"));
    if (!E.Compile || !E.Free)
      E.Error = Path + " lacks vmjitPollyCompile / vmjitPollyFree";
    // The shared libLLVM's statics, made by this dlopen, are destroyed at
    // exit before the handlers registered earlier run: stop the compile
    // threads before them too (for programs that do not stop them first).
    std::atexit(shutdownCompilePool);
    return E;
  }();
  return Entries;
}

/// Gives every floating-point operation of `M` the fast-math flags of
/// EngineOptions::FastMath (reassociation and contraction).
void addFastMathFlags(Module &M) {
  for (Function &F : M)
    for (Instruction &I : instructions(F))
      if (isa<FPMathOperator>(&I)) {
        I.setHasAllowReassoc(true);
        I.setHasAllowContract(true);
      }
}

/// Everything units share with the engine; kept alive by both.
struct EngineState {
  EngineOptions Opts;
  std::unique_ptr<LLJIT> J;
  JITDylib *Runtime = nullptr;
  /// Copied for every compile to create that compile's TargetMachine.
  std::optional<JITTargetMachineBuilder> JTMB;
  std::unique_ptr<ObjectCache> Cache;
  /// Prefix of every stored cache key: what the object code depends on
  /// besides the caller's key.
  std::string Fingerprint;
  std::atomic<uint64_t> NextUnit{0};
  bool OwnsPerfSupport = false;
  /// libvmjit_polly.so's entry points, with EngineOptions::Polly.
  VmjitPollyCompileFn PollyCompile = nullptr;
  VmjitPollyFreeFn PollyFree = nullptr;

  ~EngineState() {
    J.reset(); // Ends the session: plugins (perf End) run first.
    if (OwnsPerfSupport)
      PerfSupportInUse.store(false);
  }

  Expected<std::unique_ptr<TargetMachine>> createTargetMachine() const {
    JITTargetMachineBuilder Builder = *JTMB;
    return Builder.createTargetMachine();
  }

  /// Gives `M` the engine's target triple and data layout.
  void prepareModule(Module &M, const TargetMachine &TM) const {
    M.setTargetTriple(TM.getTargetTriple().str());
    M.setDataLayout(TM.createDataLayout());
  }

  /// The IR pipeline: buildPerModuleDefaultPipeline(O<level>); none at O0.
  /// Once `Cancel` is set, the passes still to come are skipped.
  void runIRPipeline(Module &M, TargetMachine &TM,
                     const std::atomic<bool> *Cancel = nullptr) const {
    if (Opts.OptLevel == 0)
      return;
    LoopAnalysisManager LAM;
    FunctionAnalysisManager FAM;
    CGSCCAnalysisManager CGAM;
    ModuleAnalysisManager MAM;
    // As clang and opt do: the vectorizers from O2 on.
    PipelineTuningOptions Tuning;
    Tuning.LoopVectorization = Opts.OptLevel >= 2;
    Tuning.SLPVectorization = Opts.OptLevel >= 2;
    PassInstrumentationCallbacks PIC;
    if (Cancel)
      PIC.registerShouldRunOptionalPassCallback([Cancel](StringRef, Any) {
        return !Cancel->load(std::memory_order_relaxed);
      });
    PassBuilder PB(&TM, Tuning, std::nullopt, &PIC);
    PB.registerModuleAnalyses(MAM);
    PB.registerCGSCCAnalyses(CGAM);
    PB.registerFunctionAnalyses(FAM);
    PB.registerLoopAnalyses(LAM);
    PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
    ModulePassManager MPM;
    if (Opts.Pipeline.empty()) {
      MPM = PB.buildPerModuleDefaultPipeline(irOptLevel(Opts.OptLevel));
    } else if (Error E = PB.parsePassPipeline(MPM, Opts.Pipeline)) {
      // Checked when the engine is created; an unparsable pipeline never
      // gets here.
      consumeError(std::move(E));
      MPM = PB.buildPerModuleDefaultPipeline(irOptLevel(Opts.OptLevel));
    }
    MPM.run(M, MAM);
  }

  /// Adds `Object` to a new unit JITDylib with `Absolute` bound in it,
  /// links it (by looking the exports up) and returns the JITDylib and the
  /// export addresses. On failure the JITDylib is removed again.
  Expected<JITDylib *> link(std::unique_ptr<MemoryBuffer> Object,
                            const SymbolMap &Absolute,
                            const std::vector<std::string> &Exports,
                            std::map<std::string, uint64_t> &Addresses) {
    ExecutionSession &ES = J->getExecutionSession();
    JITDylib &JD = ES.createBareJITDylib(
        "vmjit.unit." + std::to_string(NextUnit.fetch_add(1)));
    JD.setLinkOrder({{Runtime, JITDylibLookupFlags::MatchExportedSymbolsOnly}});

    std::string SessionErrors;
    std::string *SavedSink = SessionErrorSink;
    SessionErrorSink = &SessionErrors;
    Error Err = [&]() -> Error {
      if (!Absolute.empty())
        if (Error E = JD.define(absoluteSymbols(Absolute)))
          return E;
      if (Error E = J->getObjLinkingLayer().add(JD, std::move(Object)))
        return E;
      // Linking happens here, on the first lookup of the object's symbols
      // (so with no exports, nothing is linked).
      std::map<std::string, SymbolStringPtr> Wanted;
      for (const std::string &Name : Exports)
        Wanted.try_emplace(Name, J->mangleAndIntern(Name));
      SymbolLookupSet Names;
      for (const auto &[Name, Mangled] : Wanted)
        Names.add(Mangled);
      Expected<SymbolMap> Found = ES.lookup(
          {{&JD, JITDylibLookupFlags::MatchAllSymbols}}, std::move(Names));
      if (!Found)
        return Found.takeError();
      for (const auto &[Name, Mangled] : Wanted)
        Addresses[Name] = Found->lookup(Mangled).getAddress().getValue();
      return Error::success();
    }();
    SessionErrorSink = SavedSink;

    if (!Err)
      return &JD;
    std::string Message = toString(std::move(Err));
    if (!SessionErrors.empty())
      Message += " (" + SessionErrors + ")";
    if (Error E = ES.removeJITDylib(JD))
      logger().warn("JIT: cannot remove a failed unit: {}",
                    toString(std::move(E)));
    return makeError(Message);
  }
};

class Unit final : public CompiledUnit {
public:
  Unit(std::shared_ptr<EngineState> State, JITDylib &JD,
       std::map<std::string, uint64_t> Addresses, CompileStats Stats)
      : State(std::move(State)), JD(&JD), Addresses(std::move(Addresses)),
        Stats(Stats) {}

  ~Unit() override {
    if (Error E = State->J->getExecutionSession().removeJITDylib(*JD))
      logger().warn("JIT: cannot remove a unit: {}", toString(std::move(E)));
  }

  uint64_t address(const std::string &Symbol) const override {
    auto It = Addresses.find(Symbol);
    return It == Addresses.end() ? 0 : It->second;
  }

  const CompileStats &stats() const override { return Stats; }

private:
  std::shared_ptr<EngineState> State;
  JITDylib *JD;
  std::map<std::string, uint64_t> Addresses;
  CompileStats Stats;
};

class EngineImpl final : public Engine {
public:
  static Expected<std::unique_ptr<Engine>> create(const EngineOptions &Opts);

  Expected<std::unique_ptr<CompiledUnit>>
  tryCompile(std::unique_ptr<LLVMContext> Ctx, std::unique_ptr<Module> M,
             const std::map<std::string, uint64_t> &Absolute,
             const std::vector<std::string> &Exports,
             const std::string &CacheKey,
             const std::atomic<bool> *Cancel) override;

  void optimize(Module &M) override;

  Expected<std::string> tryEmitObject(Module &M, const std::string &CacheKey,
                                      bool *CacheHit) override;

  const EngineOptions &options() const override { return State->Opts; }

private:
  explicit EngineImpl(std::shared_ptr<EngineState> State)
      : State(std::move(State)) {}

  /// The IR pipeline with Polly and code generation of `M`, by
  /// libvmjit_polly.so.
  /// Once `Cancel` is set, the passes still to come are skipped and the
  /// compile is abandoned before code generation.
  Expected<SmallVector<char, 0>> pollyCompile(Module &M, TargetMachine &TM,
                                              double &OptimizeMs,
                                              const std::atomic<bool> *Cancel);

  /// Verifies `M` and gives it the target machine's triple and data
  /// layout (and the fast-math flags of EngineOptions::FastMath).
  Expected<std::unique_ptr<TargetMachine>> prepare(Module &M);

  /// The IR pipeline and code generation of the prepared `M` (in
  /// libvmjit_polly.so with Polly): its object file; the pipeline's time
  /// in Stats.OptimizeMs.
  Expected<SmallVector<char, 0>> emitObject(Module &M, TargetMachine &TM,
                                            CompileStats &Stats,
                                            const std::atomic<bool> *Cancel);

  Expected<std::unique_ptr<CompiledUnit>>
  compileUnit(Module &M, const std::map<std::string, uint64_t> &Absolute,
              const std::vector<std::string> &Exports,
              const std::string &CacheKey, const std::atomic<bool> *Cancel);

  /// Links a tiny object through every plugin, so that a broken perf or
  /// debugger set-up fails Engine::create rather than every compile.
  Error probe();

  std::shared_ptr<EngineState> State;
};

/// The LLJIT of an engine: JITLink with EH frames registered, no process
/// symbols, no platform.
Expected<std::unique_ptr<LLJIT>> buildLLJIT(JITTargetMachineBuilder JTMB) {
  return LLJITBuilder()
      .setJITTargetMachineBuilder(std::move(JTMB))
      // No "<Process Symbols>" JITDylib: units see only what is bound.
      .setLinkProcessSymbolsByDefault(false)
      // No ORC runtime and no generic IR platform (it would rewrite
      // modules for static initializers, which units do not have).
      .setPlatformSetUp(setUpInactivePlatform)
      .setObjectLinkingLayerCreator(
          [](ExecutionSession &ES,
             const Triple &) -> Expected<std::unique_ptr<ObjectLayer>> {
            auto Layer = std::make_unique<ObjectLinkingLayer>(ES);
            auto EHFrames = EPCEHFrameRegistrar::Create(ES);
            if (!EHFrames)
              return EHFrames.takeError();
            Layer->addPlugin(std::make_unique<EHFrameRegistrationPlugin>(
                ES, std::move(*EHFrames)));
            return Layer;
          })
      .create();
}

/// The perf (jitdump, perf map) and GDB plugins the options ask for.
Error addProfilerPlugins(EngineState &State, ExecutionSession &ES,
                         ObjectLinkingLayer &Linker) {
  const EngineOptions &Opts = State.Opts;
  if (State.OwnsPerfSupport) {
    // PerfSupportPlugin finds JITLoaderPerf's entry points by lookup in a
    // JITDylib; this one is private to the engine.
    JITDylib &Support = ES.createBareJITDylib("vmjit.perf");
    SymbolMap PerfSyms;
    auto Flags = JITSymbolFlags::Exported | JITSymbolFlags::Callable;
    PerfSyms[ES.intern("llvm_orc_registerJITLoaderPerfStart")] = {
        ExecutorAddr::fromPtr(&llvm_orc_registerJITLoaderPerfStart), Flags};
    PerfSyms[ES.intern("llvm_orc_registerJITLoaderPerfEnd")] = {
        ExecutorAddr::fromPtr(&llvm_orc_registerJITLoaderPerfEnd), Flags};
    PerfSyms[ES.intern("llvm_orc_registerJITLoaderPerfImpl")] = {
        ExecutorAddr::fromPtr(&llvm_orc_registerJITLoaderPerfImpl), Flags};
    if (Error E = Support.define(absoluteSymbols(std::move(PerfSyms))))
      return E;
    // No unwind records: LLVM prints a line to stderr for each one, and
    // JIT frames keep frame pointers ("frame-pointer"="all"), which is
    // how `perf record -g` unwinds them.
    auto Perf = PerfSupportPlugin::Create(ES.getExecutorProcessControl(),
                                          Support, /*EmitDebugInfo=*/true,
                                          /*EmitUnwindInfo=*/false);
    if (!Perf)
      return Perf.takeError();
    Linker.addPlugin(std::move(*Perf));
  }
  if (Opts.PerfSupport) {
    auto Map = PerfMapPlugin::create();
    if (!Map)
      return Map.takeError();
    Linker.addPlugin(std::move(*Map));
  }

  if (Opts.DebuggerSupport) {
    // What enableDebuggerSupport does for ELF, minus the dlsym of the
    // registration function (not exported from a static binary).
    auto Registrar = std::make_unique<EPCDebugObjectRegistrar>(
        ES, ExecutorAddr::fromPtr(&llvm_orc_registerJITLoaderGDBWrapper));
    Linker.addPlugin(std::make_unique<DebugObjectManagerPlugin>(
        ES, std::move(Registrar), /*RequireDebugSections=*/false,
        /*AutoRegisterCode=*/true));
  }

  return Error::success();
}

Expected<std::unique_ptr<Engine>>
EngineImpl::create(const EngineOptions &Opts) {
  if (Opts.OptLevel < 0 || Opts.OptLevel > 3)
    return makeError("JIT optimization level must be 0..3, not " +
                     Twine(Opts.OptLevel));

  static std::once_flag InitTarget;
  std::call_once(InitTarget, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    InitializeNativeTargetAsmParser();
  });

  auto State = std::make_shared<EngineState>();
  State->Opts = Opts;

  auto JTMB = JITTargetMachineBuilder::detectHost();
  if (!JTMB)
    return JTMB.takeError();
  // What LLJIT itself configures for JITLink: small code model, PIC (calls
  // to externals go through JITLink-made stubs, data through its GOT).
  JTMB->setCodeGenOptLevel(codeGenOptLevel(
      Opts.CodegenOptLevel >= 0 ? Opts.CodegenOptLevel : Opts.OptLevel));
  JTMB->setRelocationModel(Reloc::PIC_);
  JTMB->setCodeModel(CodeModel::Small);
  JTMB->getOptions().AllowFPOpFusion =
      Opts.FastMath ? FPOpFusion::Fast : FPOpFusion::Strict;
  if (!JTMB->getTargetTriple().isOSBinFormatELF() &&
      (Opts.PerfSupport || Opts.DebuggerSupport))
    return makeError("perf and debugger support need an ELF host");
  State->JTMB = *JTMB;
  if (Opts.Polly && Opts.OptLevel > 0) {
    const PollyEntries &P = pollyEntries();
    if (!P.Compile)
      return makeError("Polly is not available: " + P.Error);
    State->PollyCompile = P.Compile;
    State->PollyFree = P.Free;
  }

  // The jitdump holds process-global state: the first engine with perf
  // support writes it; every such engine writes the perf map.
  if (Opts.PerfSupport && !PerfSupportInUse.exchange(true)) {
    State->OwnsPerfSupport = true;
    if (Error E = checkJitDumpDirectory())
      return E;
  }

  auto J = buildLLJIT(*JTMB);
  if (!J)
    return J.takeError();
  State->J = std::move(*J);
  ExecutionSession &ES = State->J->getExecutionSession();
  ES.setErrorReporter(reportSessionError);
  auto &Linker = cast<ObjectLinkingLayer>(State->J->getObjLinkingLayer());

  // The allow-list of process symbols.
  SymbolMap RuntimeSyms;
  for (const auto &[Name, Addr] : runtimeSymbols())
    RuntimeSyms[State->J->mangleAndIntern(Name)] = {
        ExecutorAddr(Addr), JITSymbolFlags::Exported | JITSymbolFlags::Callable};
  State->Runtime = &ES.createBareJITDylib("vmjit.runtime");
  if (Error E = State->Runtime->define(absoluteSymbols(std::move(RuntimeSyms))))
    return E;

  if (Error E = addProfilerPlugins(*State, ES, Linker))
    return E;

  const HostInfo &Host = hostInfo();
  State->Fingerprint =
      "vmjit object cache 1\nllvm " LLVM_VERSION_STRING "\ntriple " +
      JTMB->getTargetTriple().str() + "\ncpu " + Host.CPU + "\nfeatures " +
      Host.Features + "\nopt " + std::to_string(Opts.OptLevel) +
      (State->PollyCompile ? "\npolly" : "") + "\nfp " +
      (Opts.FastMath ? "fast" : "strict") + "\nkey\n";
  if (!Opts.CacheDir.empty())
    State->Cache = std::make_unique<ObjectCache>(Opts.CacheDir);

  std::unique_ptr<EngineImpl> Engine(new EngineImpl(std::move(State)));
  if (Opts.PerfSupport || Opts.DebuggerSupport)
    if (Error E = Engine->probe())
      return E;
  return std::unique_ptr<vmjit::jit::Engine>(std::move(Engine));
}

Error EngineImpl::probe() {
  LLVMContext Ctx;
  Module M("vmjit.probe", Ctx);
  Function *F = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false),
                                 Function::ExternalLinkage, "vmjit.probe", M);
  ReturnInst::Create(Ctx, BasicBlock::Create(Ctx, "entry", F));
  auto TM = State->createTargetMachine();
  if (!TM)
    return TM.takeError();
  State->prepareModule(M, **TM);
  auto Object = emitObjectFile(M, **TM);
  if (!Object)
    return Object.takeError();
  // The probe's JITDylib stays until the session ends: its code is never
  // unmapped, so no perf map entry or GDB registration (which LLVM 19
  // cannot take back) ever describes memory that later holds other code.
  std::map<std::string, uint64_t> Addresses;
  auto JD = State->link(MemoryBuffer::getMemBufferCopy(
                            StringRef(Object->data(), Object->size()),
                            "vmjit.probe"),
                        SymbolMap(), {"vmjit.probe"}, Addresses);
  if (!JD)
    return makeError("JIT engine self-test failed: " +
                     toString(JD.takeError()));
  return Error::success();
}

Expected<SmallVector<char, 0>>
EngineImpl::pollyCompile(Module &M, TargetMachine &TM, double &OptimizeMs,
                         const std::atomic<bool> *Cancel) {
  SmallVector<char, 0> Bitcode;
  {
    raw_svector_ostream OS(Bitcode);
    WriteBitcodeToFile(M, OS);
  }
  const std::string Triple = TM.getTargetTriple().str();
  const std::string CPU = TM.getTargetCPU().str();
  const std::string Features = TM.getTargetFeatureString().str();
  const EngineOptions &Opts = State->Opts;
  VmjitPollyRequest Req{};
  Req.Version = VMJIT_POLLY_ABI_VERSION;
  Req.Bitcode = Bitcode.data();
  Req.BitcodeSize = Bitcode.size();
  Req.Triple = Triple.c_str();
  Req.CPU = CPU.c_str();
  Req.Features = Features.c_str();
  Req.OptLevel = Opts.OptLevel;
  Req.CodegenOptLevel =
      Opts.CodegenOptLevel >= 0 ? Opts.CodegenOptLevel : Opts.OptLevel;
  Req.FuseFMA = Opts.FastMath ? 1 : 0;
  if (Cancel) {
    Req.Cancelled = [](void *Ctx) {
      return static_cast<const std::atomic<bool> *>(Ctx)->load(
                 std::memory_order_relaxed)
                 ? 1
                 : 0;
    };
    Req.CancelCtx = const_cast<std::atomic<bool> *>(Cancel);
  }
  VmjitPollyResult Res{};
  const int Rc = State->PollyCompile(&Req, &Res);
  OptimizeMs = Res.OptimizeMs;
  std::string Error = Res.Error ? Res.Error : "";
  SmallVector<char, 0> Object;
  if (Rc == 0 && Res.Object)
    Object.assign(Res.Object, Res.Object + Res.ObjectSize);
  State->PollyFree(Res.Object);
  State->PollyFree(Res.Error);
  if (Rc == VMJIT_POLLY_ABANDONED)
    return make_error<CompileAbandoned>();
  if (Rc != 0)
    return makeError("Polly compile of " + M.getModuleIdentifier() + ": " +
                     Error);
  return Object;
}

Expected<std::unique_ptr<TargetMachine>> EngineImpl::prepare(Module &M) {
  std::string VerifierMessages;
  raw_string_ostream VerifierOS(VerifierMessages);
  if (verifyModule(M, &VerifierOS))
    return makeError("invalid module " + M.getModuleIdentifier() + ": " +
                     StringRef(VerifierMessages).rtrim());
  auto TM = State->createTargetMachine();
  if (!TM)
    return TM.takeError();
  State->prepareModule(M, **TM);
  if (State->Opts.FastMath)
    addFastMathFlags(M);
  return TM;
}

Expected<SmallVector<char, 0>>
EngineImpl::emitObject(Module &M, TargetMachine &TM, CompileStats &Stats,
                       const std::atomic<bool> *Cancel) {
  auto Abandoned = [Cancel] {
    return Cancel && Cancel->load(std::memory_order_relaxed);
  };
  if (Abandoned())
    return make_error<CompileAbandoned>();
  Expected<SmallVector<char, 0>> Object = SmallVector<char, 0>();
  if (State->PollyCompile) {
    // Optimization and code generation in libvmjit_polly.so.
    Object = pollyCompile(M, TM, Stats.OptimizeMs, Cancel);
  } else {
    auto Start = Clock::now();
    State->runIRPipeline(M, TM, Cancel);
    Stats.OptimizeMs = msSince(Start);
    // Code generation cannot be stopped once it runs: the last check.
    if (Abandoned())
      return make_error<CompileAbandoned>();
    Object = emitObjectFile(M, TM);
  }
  if (Object && Abandoned())
    return make_error<CompileAbandoned>();
  return Object;
}

Expected<std::string> EngineImpl::tryEmitObject(Module &M,
                                                const std::string &CacheKey,
                                                bool *CacheHit) {
  // Not the key of a linked unit's object: a relocatable one is its own.
  const bool UseCache = State->Cache && !CacheKey.empty();
  const std::string FullKey =
      State->Fingerprint + "relocatable object\n" + CacheKey;
  if (CacheHit)
    *CacheHit = false;
  if (UseCache)
    if (std::optional<std::string> Cached = State->Cache->load(FullKey)) {
      if (CacheHit)
        *CacheHit = true;
      return std::move(*Cached);
    }
  auto TM = prepare(M);
  if (!TM)
    return TM.takeError();
  CompileStats Stats;
  Expected<SmallVector<char, 0>> Object =
      emitObject(M, **TM, Stats, /*Cancel=*/nullptr);
  if (!Object)
    return Object.takeError();
  std::string Bytes(Object->data(), Object->size());
  if (UseCache)
    State->Cache->store(FullKey, Bytes);
  return Bytes;
}

Expected<std::unique_ptr<CompiledUnit>> EngineImpl::compileUnit(
    Module &M, const std::map<std::string, uint64_t> &Absolute,
    const std::vector<std::string> &Exports, const std::string &CacheKey,
    const std::atomic<bool> *Cancel) {
  // The bindings: functions the module declares are Callable, everything
  // else (data, names the module does not mention) plain Exported.
  SymbolMap Bindings;
  for (const auto &[Name, Addr] : Absolute) {
    JITSymbolFlags Flags = JITSymbolFlags::Exported;
    if (!isa_and_nonnull<GlobalVariable>(M.getNamedValue(Name)))
      Flags |= JITSymbolFlags::Callable;
    Bindings[State->J->mangleAndIntern(Name)] = {ExecutorAddr(Addr), Flags};
  }
  std::string UnitName = M.getModuleIdentifier();

  const bool UseCache = State->Cache && !CacheKey.empty();
  std::string FullKey;
  if (UseCache) {
    FullKey = State->Fingerprint + CacheKey;
    if (std::optional<std::string> Cached = State->Cache->load(FullKey)) {
      CompileStats Stats;
      Stats.CacheHit = true;
      Stats.ObjectBytes = Cached->size();
      auto Start = Clock::now();
      std::map<std::string, uint64_t> Addresses;
      auto JD = State->link(MemoryBuffer::getMemBufferCopy(
                                *Cached, State->Cache->pathFor(FullKey)),
                            Bindings, Exports, Addresses);
      Stats.CodegenMs = msSince(Start);
      if (JD)
        return std::make_unique<Unit>(State, **JD, std::move(Addresses),
                                      Stats);
      logger().warn("JIT: cached object for {} does not link ({}); "
                    "recompiling",
                    UnitName, toString(JD.takeError()));
    }
  }

  auto TM = prepare(M);
  if (!TM)
    return TM.takeError();
  CompileStats Stats;
  auto Start = Clock::now();
  Expected<SmallVector<char, 0>> Object = emitObject(M, **TM, Stats, Cancel);
  if (!Object)
    return Object.takeError();
  // The module's time splits into its IR pipeline and the rest.
  Start += std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(Stats.OptimizeMs));
  Stats.ObjectBytes = Object->size();
  std::map<std::string, uint64_t> Addresses;
  auto JD = State->link(
      MemoryBuffer::getMemBufferCopy(StringRef(Object->data(), Object->size()),
                                     UnitName),
      Bindings, Exports, Addresses);
  Stats.CodegenMs = msSince(Start);
  if (!JD)
    return JD.takeError();
  logger().debug("JIT unit {}: IR passes {:.1f} ms, code generation and link "
                 "{:.1f} ms",
                 UnitName, Stats.OptimizeMs, Stats.CodegenMs);
  if (UseCache)
    State->Cache->store(FullKey,
                        std::string_view(Object->data(), Object->size()));
  return std::make_unique<Unit>(State, **JD, std::move(Addresses), Stats);
}

Expected<std::unique_ptr<CompiledUnit>> EngineImpl::tryCompile(
    std::unique_ptr<LLVMContext> Ctx, std::unique_ptr<Module> M,
    const std::map<std::string, uint64_t> &Absolute,
    const std::vector<std::string> &Exports, const std::string &CacheKey,
    const std::atomic<bool> *Cancel) {
  if (!Ctx || !M)
    return makeError("JIT compile: no module");
  if (&M->getContext() != Ctx.get())
    return makeError(
        "JIT compile: the module does not live in the given context");
  auto Unit = compileUnit(*M, Absolute, Exports, CacheKey, Cancel);
  M.reset(); // Before its context.
  Ctx.reset();
  if (!Unit)
    return Unit.takeError();
  return std::unique_ptr<CompiledUnit>(std::move(*Unit));
}

void EngineImpl::optimize(Module &M) {
  auto TM = State->createTargetMachine();
  if (!TM) {
    logger().warn("JIT: cannot optimize: {}", toString(TM.takeError()));
    return;
  }
  State->prepareModule(M, **TM);
  State->runIRPipeline(M, **TM);
}

} // namespace

Expected<std::unique_ptr<Engine>> Engine::tryCreate(const EngineOptions &Opts) {
  return EngineImpl::create(Opts);
}

char CompileAbandoned::ID = 0;

void CompileAbandoned::log(raw_ostream &OS) const { OS << "compile abandoned"; }

std::error_code CompileAbandoned::convertToErrorCode() const {
  return std::make_error_code(std::errc::operation_canceled);
}

} // namespace vmjit::jit
