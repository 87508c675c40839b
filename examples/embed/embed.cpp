//===- embed.cpp - The in-process C++ API in five minutes ------------------===//
//
// A tour of what a host program does with vmjit: load a program, pass
// tensors in through DLPack without copying, enable the JIT, call
// functions, take a tensor result out through DLPack, read per-function
// statistics, handle an error.
//
//   embed                      the tour, on the program below
//   embed PROGRAM [INT...]     load PROGRAM (any format `vmjit run` reads),
//                              call main with the integers, print the value
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"
#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/tier_manager.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace vmjit;

namespace {

/// square_add(x, y) = x * x + y elementwise; total(x, y) sums it.
constexpr const char *kProgram = R"(
.func square_add(x, y)
  %s = call tensor.mul(%x, %x)
  %r = call tensor.add(%s, %y)
  ret %r
.end

.func total(x, y)
  %r = call square_add(%x, %y)
  %t = call tensor.sum(%r)
  %v = call tensor.item(%t)
  ret %v
.end
)";

/// A float32 vector the host owns, handed to vmjit as a DLPack tensor: no
/// copy; vmjit calls the deleter when its last reference goes.
struct HostBuffer {
  std::vector<float> Data;
  int64_t Shape[1];
  DLManagedTensor Managed{};

  static DLManagedTensor *make(std::vector<float> Values) {
    auto *B = new HostBuffer{std::move(Values), {0}};
    B->Shape[0] = static_cast<int64_t>(B->Data.size());
    DLTensor &T = B->Managed.dl_tensor;
    T.data = B->Data.data();
    T.device = {kDLCPU, 0};
    T.ndim = 1;
    T.dtype = {kDLFloat, 32, 1};
    T.shape = B->Shape;
    B->Managed.manager_ctx = B;
    B->Managed.deleter = [](DLManagedTensor *M) {
      std::printf("  (host buffer of %zu floats released)\n",
                  static_cast<HostBuffer *>(M->manager_ctx)->Data.size());
      delete static_cast<HostBuffer *>(M->manager_ctx);
    };
    return &B->Managed;
  }
};

/// A value as text: scalars, strings, and tensors of up to 8 elements.
std::string show(const Any &V) {
  if (auto I = V.as<int64_t>())
    return std::to_string(*I);
  if (auto D = V.as<double>())
    return std::to_string(*D);
  if (auto S = V.as<std::string>())
    return '"' + *S + '"';
  if (auto T = V.as<Tensor>(); T && T->dtype().code == kDLFloat &&
                               T->dtype().bits == 32 && T->numel() <= 8) {
    std::string Out = "[";
    for (int64_t I = 0; I < T->numel(); ++I)
      Out += (I ? ", " : "") + std::to_string(T->data<float>()[I]);
    return Out + "]";
  }
  return std::string("<") + std::string(V.typeName()) + ">";
}

/// embed PROGRAM [INT...]: any program, its main called with integers.
int runProgram(int Argc, char **Argv) {
  vm::OpenedProgram Prog = vm::openProgram(Argv[1]);
  vm::VMOptions Opts;
  Opts.Libraries = Prog.Libraries; // a TVM model library's own kernels
  auto VM = vm::VirtualMachine::create(Prog.Exe, std::move(Opts));
  std::vector<Any> Args;
  for (int I = 2; I < Argc; ++I)
    Args.emplace_back(static_cast<int64_t>(std::atoll(Argv[I])));
  std::vector<AnyView> Views(Args.begin(), Args.end());
  std::printf("%s: main = %s\n", Argv[1], show(VM->invoke("main", Views)).c_str());
  return 0;
}

int tour() {
  // 1. Load: vmasm text here; vm::openProgram(path) reads any file format.
  std::shared_ptr<vm::Executable> Exe = vm::assemble(kProgram, "tour.vmasm");
  auto VM = vm::VirtualMachine::create(Exe);

  // 2. The JIT: tiered mode moves a function to native code after 2 calls
  //    (baseline tier), and to LLVM-optimized code once hot.
#ifdef VMJIT_HAVE_JIT
  jit::JITOptions JO;
  JO.Mode = vm::ExecMode::Tiered;
  JO.Threshold = 100;
  jit::enableJIT(*VM, JO);
  std::printf("JIT: tiered\n");
#else
  std::printf("JIT: not in this build (the interpreter runs everything)\n");
#endif

  // 3. Tensors in through DLPack, without copies.
  Tensor X = Tensor::fromDLPack(HostBuffer::make({1, 2, 3, 4}));
  Tensor Y = Tensor::fromDLPack(HostBuffer::make({0.5f, 0.5f, 0.5f, 0.5f}));

  // 4. Calls: C++ values convert to and from Any.
  double Sum = 0;
  for (int I = 0; I < 1000; ++I)
    Sum = VM->call("total", X, Y).cast<double>();
  std::printf("total(x, y) = %g, 1000 calls\n", Sum);

  // 5. A tensor result out through DLPack: the host reads vmjit's memory.
  Tensor R = VM->call("square_add", X, Y).cast<Tensor>();
  DLManagedTensor *Out = R.toDLPack();
  const auto *P = static_cast<const float *>(Out->dl_tensor.data);
  std::printf("square_add(x, y) = [%g, %g, %g, %g] (read through DLPack)\n",
              P[0], P[1], P[2], P[3]);
  Out->deleter(Out);

  // 6. Statistics: calls per function and where they run now.
#ifdef VMJIT_HAVE_JIT
  jit::TierManager *TM = jit::tierManagerOf(*VM);
  TM->drain(); // background tier-2 compiles
#endif
  for (const char *Name : {"total", "square_add"}) {
    int64_t K = VM->functionIndex(Name);
    std::string Tier = VM->isNative(K) ? "native" : "interpreter";
#ifdef VMJIT_HAVE_JIT
    jit::FunctionJITStats S = TM->stats(K);
    if (S.Compiled)
      Tier = VM->isNative(K) ? "optimized" : "optimized (next call)";
    else if (S.Baseline)
      Tier = "baseline";
#endif
    std::printf("  %-10s %5llu calls, %s\n", Name,
                static_cast<unsigned long long>(VM->callCount(K)),
                Tier.c_str());
  }

  // 7. Errors carry the VM frames and leave the VM usable.
  try {
    VM->call("total", X, std::string("not a tensor"));
  } catch (const Error &E) {
    std::printf("error: %s\n", E.format().c_str());
  }
  return 0;
}

} // namespace

int main(int Argc, char **Argv) {
  try {
    return Argc > 1 ? runProgram(Argc, Argv) : tour();
  } catch (const Error &E) {
    std::fprintf(stderr, "embed: %s\n", E.format().c_str());
    return 1;
  }
}
