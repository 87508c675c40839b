//===- aot.cpp - Ahead-of-time compilation into a shared library ----------===//
//
// Lowers every bytecode function with pool bindings, optimizes the module
// with the engine's pipeline, turns the declarations it calls (the native
// helpers) into loads from an import table, adds the executable and the
// manifest (vm/aot_library.h), emits position-independent code for a
// generic CPU and links it into a shared library with the system linker;
// with --kernels, beside it the object of TVM's kernels compiled for this
// CPU as the kernel tier compiles them (kernel_compiler.h), and libm,
// which they may call.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/aot.h"
#include "call_size.h"
#include "codegen.h"
#include "kernel_compiler.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/jit/engine.h"
#include "vmjit/jit/host_info.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/jit/lowering.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/aot_library.h"
#include "vmjit/vm/kernel_effects_json.h"
#include "vmjit/vm/native_helpers.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

using namespace llvm;

namespace vmjit::jit {

namespace {

/// The linker writes OUT + this, renamed to OUT when complete.
constexpr const char *kTmpSuffix = ".vmjit-tmp";

llvm::Error makeError(const std::string &Message) {
  return make_error<StringError>(Message, inconvertibleErrorCode());
}

/// Removes a file when it goes out of scope.
struct TempFile {
  SmallString<128> Path;
  ~TempFile() {
    if (!Path.empty())
      sys::fs::remove(Path);
  }
};

/// Replaces every use of the VM's helpers (vm/native_helpers.h) that `M`
/// declares with a load from a slot of the import table `@vmjit.imports`;
/// returns their names in slot order. Other declarations (C library
/// functions that codegen or the pipeline may call) stay undefined symbols
/// for the system's loader, which finds them in the process.
Expected<std::vector<std::string>> importDeclarations(Module &M) {
  std::vector<llvm::Function *> Decls;
  for (llvm::Function &F : M.functions())
    if (F.isDeclaration() && !F.use_empty() &&
        vm::nativeHelperAddress(F.getName()))
      Decls.push_back(&F);
  for (GlobalVariable &G : M.globals())
    if (G.isDeclaration())
      return makeError(fmt::format("the code refers to the external global "
                                   "'{}', which a library cannot import",
                                   G.getName().str()));
  LLVMContext &C = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(C);
  ArrayType *TableTy = ArrayType::get(Ptr, Decls.size());
  auto *Table = new GlobalVariable(M, TableTy, /*isConstant=*/false,
                                   GlobalValue::InternalLinkage,
                                   ConstantAggregateZero::get(TableTy),
                                   "vmjit.imports");
  std::vector<std::string> Names;
  for (size_t I = 0; I < Decls.size(); ++I) {
    llvm::Function *F = Decls[I];
    Names.push_back(F->getName().str());
    for (Use &U : make_early_inc_range(F->uses())) {
      auto *Inst = dyn_cast<Instruction>(U.getUser());
      if (!Inst || isa<PHINode>(Inst))
        return makeError(fmt::format("'{}' is used other than by an "
                                     "instruction",
                                     Names.back()));
      IRBuilder<> B(Inst);
      Value *Slot = B.CreateConstInBoundsGEP2_64(TableTy, Table, 0, I);
      U.set(B.CreateAlignedLoad(Ptr, Slot, Align(8), Names.back()));
    }
    F->eraseFromParent();
  }
  return Names;
}

/// A private constant global holding `Init`.
GlobalVariable *privateConstant(Module &M, Constant *Init, const char *Name,
                                unsigned AlignBytes = 8) {
  auto *G = new GlobalVariable(M, Init->getType(), /*isConstant=*/true,
                               GlobalValue::PrivateLinkage, Init, Name);
  G->setAlignment(Align(AlignBytes));
  return G;
}

Constant *cString(Module &M, StringRef S, const char *Name) {
  return privateConstant(
      M, ConstantDataArray::getString(M.getContext(), S, /*AddNull=*/true),
      Name, 1);
}

/// The manifest's fields of compiled kernels (version 3; Effects, JSON
/// text, version 4; "" without kernels).
struct RecordedKernels {
  bool Present = false;
  std::string Bitcode, CPU, Features, Effects;
};

/// Adds the executable, the tables and the exported manifest.
llvm::Error addManifest(Module &M, const vm::Executable &Exe,
                        const std::map<int64_t, std::string> &Symbols,
                        const std::vector<std::string> &Imports,
                        const std::vector<uint32_t> &Inlined,
                        const std::string &KernelLibraries,
                        const RecordedKernels &Compiled) {
  LLVMContext &C = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(C);
  Type *I32 = Type::getInt32Ty(C), *I64 = Type::getInt64Ty(C);

  const std::string Program = vm::serializeExecutable(Exe);
  // 64-byte alignment, as in the file: tensor data stays aligned.
  Constant *ProgramG = privateConstant(
      M,
      ConstantDataArray::get(
          C, ArrayRef<uint8_t>(
                 reinterpret_cast<const uint8_t *>(Program.data()),
                 Program.size())),
      "vmjit.program", 64);

  std::vector<Constant *> Fns;
  for (size_t K = 0; K < Exe.functions().size(); ++K) {
    auto It = Symbols.find(static_cast<int64_t>(K));
    llvm::Function *F = It == Symbols.end() ? nullptr : M.getFunction(It->second);
    if (It != Symbols.end() && !F)
      return makeError("a lowered function is missing from the module");
    Fns.push_back(F ? static_cast<Constant *>(F)
                    : ConstantPointerNull::get(Ptr));
  }
  Constant *FnTable = privateConstant(
      M, ConstantArray::get(ArrayType::get(Ptr, Fns.size()), Fns),
      "vmjit.functions");

  std::vector<Constant *> Names;
  for (const std::string &N : Imports)
    Names.push_back(cString(M, N, "vmjit.import.name"));
  Constant *NameTable = privateConstant(
      M, ConstantArray::get(ArrayType::get(Ptr, Names.size()), Names),
      "vmjit.import.names");
  Constant *ImportTable = M.getGlobalVariable("vmjit.imports", true);
  Constant *InlinedG = privateConstant(
      M, ConstantDataArray::get(C, ArrayRef<uint32_t>(Inlined)),
      "vmjit.inlined", 4);
  Constant *Producer = cString(
      M,
      fmt::format("vmjit {}, LLVM {}, {}", VMJIT_VERSION,
                  hostInfo().LLVMVersion, M.getTargetTriple()),
      "vmjit.producer");

  Constant *Kernels = cString(M, KernelLibraries, "vmjit.kernel.libraries");
  auto OrNull = [&](const std::string &S, const char *Name) -> Constant * {
    if (!Compiled.Present)
      return ConstantPointerNull::get(Ptr);
    return cString(M, S, Name);
  };

  StructType *ManifestTy =
      StructType::get(C, {I64, I32, I32, I32, I32, I64, Ptr, Ptr, Ptr, Ptr, Ptr,
                          Ptr, Ptr, Ptr, Ptr, Ptr, Ptr});
  // The layout the loader reads (vm::AotManifest).
  const StructLayout *L = M.getDataLayout().getStructLayout(ManifestTy);
  const size_t Expected[] = {offsetof(vm::AotManifest, Magic),
                             offsetof(vm::AotManifest, Version),
                             offsetof(vm::AotManifest, NumFunctions),
                             offsetof(vm::AotManifest, NumImports),
                             offsetof(vm::AotManifest, NumInlined),
                             offsetof(vm::AotManifest, ProgramSize),
                             offsetof(vm::AotManifest, Program),
                             offsetof(vm::AotManifest, Functions),
                             offsetof(vm::AotManifest, Imports),
                             offsetof(vm::AotManifest, ImportNames),
                             offsetof(vm::AotManifest, Inlined),
                             offsetof(vm::AotManifest, Producer),
                             offsetof(vm::AotManifest, KernelLibraries),
                             offsetof(vm::AotManifest, KernelBitcode),
                             offsetof(vm::AotManifest, KernelCPU),
                             offsetof(vm::AotManifest, KernelFeatures),
                             offsetof(vm::AotManifest, KernelEffects)};
  for (unsigned I = 0; I < std::size(Expected); ++I)
    if (L->getElementOffset(I) != Expected[I])
      return makeError("the target's layout of the manifest differs from "
                       "vm::AotManifest");
  Constant *Manifest = ConstantStruct::get(
      ManifestTy,
      {ConstantInt::get(I64, vm::kAotMagic),
       ConstantInt::get(I32, vm::kAotVersion),
       ConstantInt::get(I32, Fns.size()), ConstantInt::get(I32, Imports.size()),
       ConstantInt::get(I32, Inlined.size()),
       ConstantInt::get(I64, Program.size()), ProgramG, FnTable, ImportTable,
       NameTable, InlinedG, Producer, Kernels,
       OrNull(Compiled.Bitcode, "vmjit.kernel.bitcode"),
       OrNull(Compiled.CPU, "vmjit.kernel.cpu"),
       OrNull(Compiled.Features, "vmjit.kernel.features"),
       Compiled.Effects.empty()
           ? ConstantPointerNull::get(Ptr)
           : cString(M, Compiled.Effects, "vmjit.kernel.effects")});
  auto *G = new GlobalVariable(M, ManifestTy, /*isConstant=*/true,
                               GlobalValue::ExternalLinkage, Manifest,
                               vm::kAotManifestSymbol);
  G->setAlignment(Align(8));
  return llvm::Error::success();
}

/// The manifest's KernelLibraries: each path relative to the output's
/// directory where it can be (both on one file system tree), else
/// absolute; one a line.
std::string recordedKernels(const std::vector<std::string> &Libs,
                            const std::string &OutPath) {
  namespace fs = std::filesystem;
  const fs::path OutDir = fs::absolute(OutPath).parent_path();
  std::string Out;
  for (const std::string &L : Libs) {
    const fs::path Abs = fs::absolute(L).lexically_normal();
    fs::path Rel = Abs.lexically_relative(OutDir);
    Out += (Rel.empty() ? Abs : Rel).string();
    Out += '\n';
  }
  return Out;
}

/// The kernels of Opts.KernelBitcode compiled for this CPU as the kernel
/// tier compiles them (its engine options), or why not in R.KernelWarning.
std::optional<KernelObject> compileKernelsFor(const AotOptions &Opts,
                                              AotResult &R) {
  const KernelTierOptions Tier;
  EngineOptions EO;
  EO.OptLevel = Tier.OptLevel;
  EO.Polly = Tier.Polly;
  EO.FastMath = Tier.FastMath;
  EO.CacheDir = Opts.CacheDir;
  Expected<std::unique_ptr<Engine>> E = Engine::tryCreate(EO);
  if (!E) {
    R.KernelWarning = fmt::format("{}: TVM's kernels are used: {}",
                                  Opts.KernelBitcode, toString(E.takeError()));
    return std::nullopt;
  }
  Expected<KernelObject> K =
      compileKernelObject(**E, Opts.KernelBitcode, Opts.KernelFunctions);
  if (!K) {
    R.KernelWarning =
        fmt::format("TVM's kernels are used: {}", toString(K.takeError()));
    return std::nullopt;
  }
  R.Kernels = K->Entries;
  R.KernelCompileMs = K->TotalMs;
  R.KernelCPU = K->CPU;
  R.KernelFeatures = K->Features;
  R.KernelCacheHit = K->CacheHit;
  R.KernelTransposes = K->Transposes;
  return std::move(*K);
}

/// The file of the C math library this process uses (the kernels' calls
/// of expf and the like bind to it), or "".
std::string mathLibrary() {
  Dl_info Info;
  float (*Exp)(float) = ::expf;
  if (::dladdr(reinterpret_cast<void *>(Exp), &Info) && Info.dli_fname)
    return Info.dli_fname;
  return "";
}

/// Position-independent code for a generic CPU of the host's architecture.
Expected<std::unique_ptr<TargetMachine>> aotTargetMachine(int OptLevel) {
  auto JTMB = orc::JITTargetMachineBuilder::detectHost();
  if (!JTMB)
    return JTMB.takeError();
  if (JTMB->getTargetTriple().getArch() == Triple::x86_64) {
    JTMB->setCPU("x86-64");
    JTMB->getFeatures() = SubtargetFeatures();
  }
  JTMB->setRelocationModel(Reloc::PIC_);
  JTMB->setCodeModel(CodeModel::Small);
  JTMB->setCodeGenOptLevel(codeGenOptLevel(OptLevel));
  return JTMB->createTargetMachine();
}

/// The linker: the option, $VMJIT_LINKER, else the first on PATH.
Expected<std::string> findLinker(const std::string &Given) {
  std::string Name = Given;
  if (Name.empty())
    if (const char *Env = std::getenv("VMJIT_LINKER"); Env && *Env)
      Name = Env;
  std::vector<std::string> Candidates =
      Name.empty() ? std::vector<std::string>{"ld.lld-19", "ld.lld", "ld"}
                   : std::vector<std::string>{Name};
  for (const std::string &C : Candidates)
    if (ErrorOr<std::string> P = sys::findProgramByName(C))
      return *P;
  return makeError(
      Name.empty() ? "no linker found (ld.lld or ld on PATH; Debian: "
                     "binutils or lld-19); set VMJIT_LINKER"
                   : fmt::format("the linker '{}' was not found", Name));
}

/// Links `Inputs` (objects, then shared libraries it needs) into the
/// shared library `Out`.
llvm::Error link(const std::string &Linker, ArrayRef<std::string> Inputs,
                 StringRef Out) {
  TempFile Log;
  if (std::error_code EC =
          sys::fs::createTemporaryFile("vmjit-link", "log", Log.Path))
    return makeError("cannot create a temporary file: " + EC.message());
  std::vector<StringRef> Args = {Linker,
                                 "-shared",
                                 "--hash-style=gnu",
                                 "-z",
                                 "noexecstack",
                                 "-z",
                                 "relro",
                                 "-z",
                                 "now",
                                 "-o",
                                 Out};
  Args.insert(Args.end(), Inputs.begin(), Inputs.end());
  std::optional<StringRef> Redirects[] = {StringRef(""), Log.Path.str(),
                                          Log.Path.str()};
  std::string Message;
  int Rc = sys::ExecuteAndWait(Linker, Args, std::nullopt, Redirects,
                               /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                               &Message);
  if (Rc == 0)
    return llvm::Error::success();
  auto Text = MemoryBuffer::getFile(Log.Path);
  std::string Output = Text ? (*Text)->getBuffer().trim().str() : "";
  return makeError(fmt::format("linking with {} failed ({}){}{}", Linker,
                               Rc < 0 ? Message : "exit " + std::to_string(Rc),
                               Output.empty() ? "" : ": ", Output));
}

/// Writes `Object` to the temporary file `Obj`.
llvm::Error writeObject(StringRef Object, TempFile &Obj) {
  if (std::error_code EC =
          sys::fs::createTemporaryFile("vmjit-aot", "o", Obj.Path))
    return makeError("cannot create a temporary file: " + EC.message());
  std::error_code EC;
  raw_fd_ostream OS(Obj.Path, EC);
  if (EC)
    return makeError("cannot write " + Obj.Path.str().str() + ": " +
                     EC.message());
  OS.write(Object.data(), Object.size());
  return llvm::Error::success();
}

/// Links `Objects` (and the shared libraries `Needed`) into the library
/// `OutPath`: under a temporary name beside it, renamed when complete (an
/// IOError-coded error if that fails).
llvm::Error writeLibrary(ArrayRef<StringRef> Objects,
                         ArrayRef<std::string> Needed,
                         const std::string &Linker,
                         const std::string &OutPath) {
  std::vector<TempFile> Objs(Objects.size());
  std::vector<std::string> Inputs;
  for (size_t I = 0; I < Objects.size(); ++I) {
    if (llvm::Error E = writeObject(Objects[I], Objs[I]))
      return E;
    Inputs.push_back(Objs[I].Path.str().str());
  }
  Inputs.insert(Inputs.end(), Needed.begin(), Needed.end());
  TempFile Tmp;
  Tmp.Path = OutPath + kTmpSuffix;
  if (llvm::Error E = link(Linker, Inputs, Tmp.Path))
    return E;
  std::error_code EC;
  std::filesystem::rename(Tmp.Path.c_str(), OutPath, EC);
  if (EC)
    return make_error<StringError>(
        fmt::format("cannot write '{}': {}", OutPath, EC.message()),
        std::make_error_code(std::errc::io_error));
  Tmp.Path.clear();
  return llvm::Error::success();
}

Expected<AotResult> compile(const vm::Executable &Exe,
                            const std::string &OutPath, const AotOptions &Opts) {
  using Clock = std::chrono::steady_clock;
  auto Start = Clock::now();
  AotResult R;
  BoundCallees Bound = bindCallees(Exe, Opts.InlineBuiltins);
  const std::vector<CalleeBinding> &Callees = Bound.Callees;
  const std::vector<uint32_t> &Inlined = Bound.Inlined;
  std::vector<int64_t> Funcs;
  for (size_t K = 0; K < Exe.functions().size(); ++K)
    if (Exe.functions()[K].Kind == vm::FunctionKind::Bytecode)
      Funcs.push_back(static_cast<int64_t>(K));
  for (int64_t K : Funcs)
    if (!argumentsFitNativeStack(Exe, Exe.function(K)))
      return makeError(fmt::format(
          "function '{}' makes a call of {} arguments, more than native code "
          "keeps on the stack ({} KiB, {} arguments); `vmjit run` runs it on "
          "the interpreter",
          Exe.function(K).Name, callSize(Exe, Exe.function(K)).MaxArgs,
          kMaxNativeArgBytes / 1024, kMaxNativeArgBytes / 16));
  R.Functions = Funcs.size();
  LoweringOptions LO;
  LO.InlineBuiltins = Opts.InlineBuiltins;
  LO.OwnedArguments = true;
  Expected<LoweredModule> LM = lowerFunctions(Exe, Funcs, Callees, LO);
  if (!LM)
    return LM.takeError();
  if (!LM->Absolute.empty())
    return makeError("ahead-of-time code was bound to addresses");

  EngineOptions EO;
  EO.OptLevel = Opts.OptLevel;
  Expected<std::unique_ptr<Engine>> Eng = Engine::tryCreate(EO);
  if (!Eng)
    return Eng.takeError();
  Module &M = *LM->Module;
  (*Eng)->optimize(M); // also sets the triple and data layout
  auto Imports = importDeclarations(M);
  if (!Imports)
    return Imports.takeError();
  for (llvm::Function &F : M.functions())
    if (!F.isDeclaration()) {
      F.setLinkage(GlobalValue::InternalLinkage);
      F.setDSOLocal(true);
    }
  std::optional<KernelObject> Kernels;
  RecordedKernels Recorded;
  if (!Opts.KernelBitcode.empty())
    Kernels = compileKernelsFor(Opts, R);
  if (Kernels) {
    Recorded = {true,
                std::filesystem::absolute(Opts.KernelBitcode)
                    .lexically_normal()
                    .string(),
                Kernels->CPU, Kernels->Features,
                vm::kernelEffectsJson(Kernels->Effects)};
  }
  if (llvm::Error E =
          addManifest(M, Exe, LM->Symbols, *Imports, Inlined,
                      recordedKernels(Opts.KernelLibraries, OutPath), Recorded))
    return E;
  std::string VerifyText;
  raw_string_ostream VerifyOS(VerifyText);
  if (verifyModule(M, &VerifyOS))
    return makeError("invalid module: " + VerifyText);

  auto TM = aotTargetMachine(Opts.OptLevel);
  if (!TM)
    return TM.takeError();
  auto Object = emitObjectFile(M, **TM);
  if (!Object)
    return Object.takeError();
  std::vector<StringRef> Objects = {StringRef(Object->data(), Object->size())};
  std::vector<std::string> Needed;
  if (Kernels) {
    Objects.push_back(Kernels->Object);
    if (std::string Libm = mathLibrary(); !Libm.empty())
      Needed.push_back(Libm);
  }
  R.ObjectBytes = 0;
  for (StringRef O : Objects)
    R.ObjectBytes += O.size();
  auto Compiled = Clock::now();
  R.CompileMs =
      std::chrono::duration<double, std::milli>(Compiled - Start).count();

  auto Linker = findLinker(Opts.Linker);
  if (!Linker)
    return Linker.takeError();
  R.Linker = *Linker;
  if (llvm::Error E = writeLibrary(Objects, Needed, *Linker, OutPath))
    return E;
  R.LinkMs = std::chrono::duration<double, std::milli>(Clock::now() - Compiled)
                 .count();
  return R;
}

} // namespace

AotResult compileAheadOfTime(const vm::Executable &Exe,
                             const std::string &OutPath,
                             const AotOptions &Opts) {
  // The output's directory is checked first: a typing mistake costs no
  // compile.
  std::filesystem::path Dir = std::filesystem::path(OutPath).parent_path();
  std::error_code DirEC;
  if (!Dir.empty() && !std::filesystem::is_directory(Dir, DirEC))
    throwError("IOError", fmt::format("cannot write '{}': no directory '{}'",
                                      OutPath, Dir.string()));
  // The file the linker will write (then renamed to OutPath): made and
  // removed here, so that a place nothing can be written costs no compile.
  const std::string Tmp = OutPath + kTmpSuffix;
  int Fd = ::open(Tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (Fd < 0)
    throwError("IOError", fmt::format("cannot write '{}': {}", OutPath,
                                      std::strerror(errno)));
  ::close(Fd);
  ::unlink(Tmp.c_str());
  Expected<AotResult> R = compile(Exe, OutPath, Opts);
  if (!R) {
    std::string Kind = "JITError";
    std::string Message;
    handleAllErrors(R.takeError(), [&](const StringError &E) {
      if (E.convertToErrorCode() == std::errc::io_error)
        Kind = "IOError";
      Message = E.getMessage();
    }, [&](const ErrorInfoBase &E) { Message = E.message(); });
    throwError(Kind, Message);
  }
  return *R;
}

} // namespace vmjit::jit
