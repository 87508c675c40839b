//===- polly_backend.cpp - O3 with Polly, in the shared libLLVM -----------===//
//
// The module behind polly_abi.h: parses the bitcode, runs the default O3
// pipeline with Polly registered in it (Polly's own switches, set once:
// -polly, and the strip-mine vectorizer, which prepares loops for LLVM's
// loop vectorizer) and emits an ELF object for the host as the engine
// would (PIC, small code model), with the FP contract the request gives.
// Linked against the shared libLLVM, which contains Polly.
//
//===----------------------------------------------------------------------===//

#include "polly_abi.h"

#include "../codegen.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

// Polly's entry point for the new pass manager (defined in the shared
// libLLVM; Debian installs no Polly headers).
llvm::PassPluginLibraryInfo getPollyPluginInfo();

using namespace llvm;

namespace {

char *copyString(const std::string &S) {
  char *P = static_cast<char *>(std::malloc(S.size() + 1));
  if (P)
    std::memcpy(P, S.c_str(), S.size() + 1);
  return P;
}

int fail(VmjitPollyResult *Res, const std::string &Message) {
  Res->Error = copyString(Message);
  return 1;
}

/// Targets and Polly's switches, once per process.
void initializeOnce() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    const char *Args[] = {"vmjit", "-polly", "-polly-vectorizer=stripmine"};
    cl::ParseCommandLineOptions(3, Args, "vmjit Polly back end\n");
  });
}

int compile(const VmjitPollyRequest *Req, VmjitPollyResult *Res) {
  initializeOnce();
  LLVMContext Ctx;
  auto Buffer = MemoryBuffer::getMemBuffer(
      StringRef(Req->Bitcode, Req->BitcodeSize), "vmjit.polly",
      /*RequiresNullTerminator=*/false);
  Expected<std::unique_ptr<Module>> M = parseBitcodeFile(*Buffer, Ctx);
  if (!M)
    return fail(Res, "cannot read the module: " + toString(M.takeError()));

  std::string Why;
  const Target *T = TargetRegistry::lookupTarget(Req->Triple, Why);
  if (!T)
    return fail(Res, Why);
  TargetOptions Options;
  Options.AllowFPOpFusion =
      Req->FuseFMA ? FPOpFusion::Fast : FPOpFusion::Strict;
  std::unique_ptr<TargetMachine> TM(T->createTargetMachine(
      Req->Triple, Req->CPU, Req->Features, Options, Reloc::PIC_,
      CodeModel::Small, vmjit::jit::codeGenOptLevel(Req->CodegenOptLevel)));
  if (!TM)
    return fail(Res, "cannot create a target machine for " +
                         std::string(Req->Triple));
  (*M)->setTargetTriple(Req->Triple);
  (*M)->setDataLayout(TM->createDataLayout());

  auto Start = std::chrono::steady_clock::now();
  {
    LoopAnalysisManager LAM;
    FunctionAnalysisManager FAM;
    CGSCCAnalysisManager CGAM;
    ModuleAnalysisManager MAM;
    PipelineTuningOptions Tuning;
    Tuning.LoopVectorization = Req->OptLevel >= 2;
    Tuning.SLPVectorization = Req->OptLevel >= 2;
    PassInstrumentationCallbacks PIC;
    if (Req->Cancelled)
      PIC.registerShouldRunOptionalPassCallback([Req](StringRef, Any) {
        return Req->Cancelled(Req->CancelCtx) == 0;
      });
    PassBuilder PB(TM.get(), Tuning, std::nullopt, &PIC);
    getPollyPluginInfo().RegisterPassBuilderCallbacks(PB);
    PB.registerModuleAnalyses(MAM);
    PB.registerCGSCCAnalyses(CGAM);
    PB.registerFunctionAnalyses(FAM);
    PB.registerLoopAnalyses(LAM);
    PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
    ModulePassManager MPM =
        PB.buildPerModuleDefaultPipeline(vmjit::jit::irOptLevel(Req->OptLevel));
    MPM.run(**M, MAM);
  }
  Res->OptimizeMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - Start)
                        .count();
  // Code generation cannot be stopped once it runs: the last check.
  if (Req->Cancelled && Req->Cancelled(Req->CancelCtx) != 0) {
    fail(Res, "abandoned");
    return VMJIT_POLLY_ABANDONED;
  }

  Expected<SmallVector<char, 0>> Object = vmjit::jit::emitObjectFile(**M, *TM);
  if (!Object)
    return fail(Res, toString(Object.takeError()));
  Res->Object = static_cast<char *>(std::malloc(Object->size()));
  if (!Res->Object)
    return fail(Res, "out of memory");
  std::memcpy(Res->Object, Object->data(), Object->size());
  Res->ObjectSize = Object->size();
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int
vmjitPollyCompile(const VmjitPollyRequest *Req, VmjitPollyResult *Res) {
  Res->Object = nullptr;
  Res->ObjectSize = 0;
  Res->Error = nullptr;
  Res->OptimizeMs = 0;
  if (!Req || Req->Version != VMJIT_POLLY_ABI_VERSION)
    return fail(Res, "libvmjit_polly: request of another version");
  try {
    return compile(Req, Res);
  } catch (...) {
    return fail(Res, "libvmjit_polly: unexpected exception");
  }
}

extern "C" __attribute__((visibility("default"))) void
vmjitPollyFree(void *Ptr) {
  std::free(Ptr);
}
