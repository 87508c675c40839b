//===- tvm_backend.cpp - Host services for TVM-compiled kernels ------------===//
//
// The C functions TVM-compiled code calls, with the signatures TVM's LLVM
// codegen uses (TVM's c_backend_api.h and tvm-ffi's c_api.h /
// c_env_api.h), exported under TVM's own names: a library built as a
// system library, or with exec_mode="compiled", links against them
// directly. A kernel library reaches the same functions through its
// context slots, `__` followed by the name (contextSymbols(), one row per
// function).
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/tvm_backend.h"
#include "vmjit/runtime/any.h"
#include "vmjit/runtime/c_api.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"

#include <atomic>
#include <cstdlib>
#include <fmt/format.h>
#include <mutex>
#include <omp.h>
#include <string>

namespace {

/// TVM's TVMParallelGroupEnv.
struct ParallelGroupEnv {
  void *SyncHandle;
  int32_t NumTask;
};
using ParallelLambda = int (*)(int TaskId, ParallelGroupEnv *Env, void *Data);

constexpr int kCpuDevice = 1; // DLPack's kDLCPU
constexpr uint64_t kWorkspaceAlign = 64;

/// Workspaces as TVM's per-thread workspace pool keeps them: a kernel's
/// workspaces are freed on the thread that took them, mostly in reverse
/// order, and the next call of the kernel asks for the same sizes, so each
/// thread keeps its last few freed blocks (up to 1 MiB each) for the next
/// request of the same size: a warm kernel call allocates nothing. A block
/// starts kWorkspaceAlign bytes into its allocation, after its size.
class WorkspaceCache {
public:
  static constexpr int kSlots = 8;
  static constexpr uint64_t kMaxCachedBytes = uint64_t(1) << 20;

  void *take(uint64_t Size) noexcept {
    for (int I = Count - 1; I >= 0; --I)
      if (sizeOf(Blocks[I]) == Size) {
        void *P = Blocks[I];
        Blocks[I] = Blocks[--Count];
        return P;
      }
    char *Raw = static_cast<char *>(
        std::aligned_alloc(kWorkspaceAlign, Size + kWorkspaceAlign));
    if (!Raw)
      return nullptr;
    *reinterpret_cast<uint64_t *>(Raw) = Size;
    return Raw + kWorkspaceAlign;
  }
  void give(void *P) noexcept {
    if (Count < kSlots && sizeOf(P) <= kMaxCachedBytes) {
      Blocks[Count++] = P;
      return;
    }
    release(P);
  }
  ~WorkspaceCache() {
    while (Count > 0)
      release(Blocks[--Count]);
  }

private:
  static uint64_t sizeOf(void *P) noexcept {
    return *reinterpret_cast<uint64_t *>(static_cast<char *>(P) -
                                         kWorkspaceAlign);
  }
  static void release(void *P) noexcept {
    std::free(static_cast<char *>(P) - kWorkspaceAlign);
  }
  void *Blocks[kSlots];
  int Count = 0;
};
thread_local WorkspaceCache Workspaces;

} // namespace

extern "C" {

VMJIT_DLL int TVMFFIFunctionCall(void *Func, VMJITAny *Args, int32_t NumArgs,
                                 VMJITAny *Result) {
  return VMJITFunctionCall(static_cast<VMJITObject *>(Func), Args, NumArgs,
                           Result);
}

/// `Ctx` is the KernelLibrary that holds the calling code.
VMJIT_DLL int TVMFFIEnvModLookupFromImports(void *Ctx, const char *Name,
                                            void **Out) {
  if (!Ctx) {
    VMJITErrorSetRaisedFromCStr("RuntimeError",
                                "a kernel looked up a function before its "
                                "library context was set");
    return -1;
  }
  VMJITObject *F = static_cast<vmjit::KernelLibrary *>(Ctx)->importHandle(Name);
  if (!F)
    return -1;
  *Out = F;
  return 0;
}

VMJIT_DLL int TVMFFIHandleInitOnce(void **Handle,
                                   int (*Init)(void **Result)) {
  if (__atomic_load_n(Handle, __ATOMIC_ACQUIRE))
    return 0;
  static std::mutex Mutex;
  std::lock_guard Lock(Mutex);
  if (*Handle)
    return 0;
  void *Result = nullptr;
  if (int Rc = Init(&Result))
    return Rc;
  if (!Result) {
    VMJITErrorSetRaisedFromCStr("RuntimeError",
                                "an init-once function stored a null handle");
    return -1;
  }
  __atomic_store_n(Handle, Result, __ATOMIC_RELEASE);
  return 0;
}

VMJIT_DLL void *TVMBackendAllocWorkspace(int DeviceType, int DeviceId,
                                         uint64_t Bytes, int, int) {
  if (DeviceType != kCpuDevice) {
    VMJITErrorSetRaisedFromCStr(
        "RuntimeError",
        fmt::format("workspace requested on device {}:{}: vmjit runs CPU "
                    "kernels only",
                    DeviceType, DeviceId)
            .c_str());
    return nullptr;
  }
  // (A request near 2^64 bytes fails rather than wrapping around.)
  uint64_t Size = Bytes > (UINT64_MAX >> 1)
                      ? 0
                      : (std::max<uint64_t>(Bytes, 1) + kWorkspaceAlign - 1) /
                            kWorkspaceAlign * kWorkspaceAlign;
  void *P = Size ? Workspaces.take(Size) : nullptr;
  if (!P)
    VMJITErrorSetRaisedFromCStr(
        "MemoryError",
        fmt::format("cannot allocate a workspace of {} bytes", Bytes).c_str());
  return P;
}

VMJIT_DLL int TVMBackendFreeWorkspace(int, int, void *P) {
  if (P)
    Workspaces.give(P);
  return 0;
}

VMJIT_DLL int TVMBackendParallelLaunch(ParallelLambda Fn, void *Data,
                                       int NumTask) {
  int Threads = vmjit::tvm::parallelThreads();
  int N = NumTask <= 0 ? Threads : std::min(NumTask, Threads);
  // Inside another parallel region (a kernel launched from a parallel
  // loop), this thread runs the whole loop as one task.
  if (omp_in_parallel() || N <= 1) {
    ParallelGroupEnv Env{nullptr, 1};
    return Fn(0, &Env, Data);
  }
  ParallelGroupEnv Env{nullptr, N};
  std::atomic<VMJITObject *> FirstError{nullptr};
  std::atomic<bool> Failed{false};
#pragma omp parallel num_threads(N)
  {
    int Id = omp_get_thread_num();
    if (omp_get_num_threads() != N) {
      // A smaller team than asked for: the master runs every task (no
      // barrier can then be waited on by a missing thread).
#pragma omp master
      {
        ParallelGroupEnv One{nullptr, 1};
        if (Fn(0, &One, Data) != 0)
          Failed = true;
      }
    } else if (Fn(Id, &Env, Data) != 0) {
      VMJITObject *E = nullptr;
      VMJITErrorMoveFromRaised(&E);
      VMJITObject *Null = nullptr;
      if (E && !FirstError.compare_exchange_strong(Null, E))
        VMJITObjectDecRef(E);
      Failed = true;
    }
  }
  if (VMJITObject *E = FirstError.load()) {
    VMJITErrorSetRaised(E);
    VMJITObjectDecRef(E);
  }
  return Failed ? -1 : 0;
}

VMJIT_DLL int TVMBackendParallelBarrier(int, ParallelGroupEnv *) {
#pragma omp barrier
  return 0;
}

VMJIT_DLL int TVMBackendGetFuncFromEnv(void *Ctx, const char *Name,
                                       void **Out) {
  return TVMFFIEnvModLookupFromImports(Ctx, Name, Out);
}

VMJIT_DLL void TVMFFIErrorSetRaisedFromCStr(const char *Kind,
                                            const char *Message) {
  VMJITErrorSetRaisedFromCStr(Kind, Message);
}

VMJIT_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char *Kind,
                                                 const char **Parts,
                                                 int32_t NumParts) {
  std::string Message;
  for (int32_t I = 0; I < NumParts; ++I)
    if (Parts[I])
      Message += Parts[I];
  VMJITErrorSetRaisedFromCStr(Kind, Message.c_str());
}

// TVM's AnyLists (compiled mode's registers, constants and functions):
// arrays of owned values. The argument stack of a call holds borrowed
// views; its return slot an owned value.

/// args[Offset] = list[Index], borrowed.
VMJIT_DLL int TVMBackendAnyListSetPackedArg(void *List, int Index,
                                            VMJITAny *Args, int Offset) {
  Args[Offset] = static_cast<const VMJITAny *>(List)[Index];
  return 0;
}

/// list[Index] = None, releasing the old value.
VMJIT_DLL int TVMBackendAnyListResetItem(void *List, int Index) {
  VMJITAny &Slot = static_cast<VMJITAny *>(List)[Index];
  VMJITAny Old = Slot;
  vmjit::detail::setNone(Slot);
  vmjit::detail::releaseValue(Old);
  return 0;
}

/// list[Index] = the owned value in args[Offset] (moved; the old value is
/// released).
VMJIT_DLL int TVMBackendAnyListMoveFromPackedReturn(void *List, int Index,
                                                    VMJITAny *Args,
                                                    int Offset) {
  VMJITAny &Slot = static_cast<VMJITAny *>(List)[Index];
  VMJITAny Old = Slot;
  Slot = Args[Offset];
  vmjit::detail::setNone(Args[Offset]);
  vmjit::detail::releaseValue(Old);
  return 0;
}

} // extern "C"

namespace vmjit::tvm {
namespace {

#define VMJIT_TVM_ROW(Name) {"__" #Name, reinterpret_cast<void *>(&Name)},
const ContextSymbol kContextSymbols[] = {VMJIT_TVM_BACKEND_FUNCTIONS(VMJIT_TVM_ROW)};
#undef VMJIT_TVM_ROW

} // namespace

std::span<const ContextSymbol> contextSymbols() noexcept {
  return kContextSymbols;
}

bool isContextSlotName(std::string_view Name) noexcept {
  return Name.starts_with("__TVM") || Name == kLibraryCtxSymbol;
}

int parallelThreads() noexcept {
  static const int Threads = [] {
    if (const char *Env = std::getenv("TVM_NUM_THREADS"))
      if (int N = std::atoi(Env); N > 0)
        return N;
    return std::max(1, omp_get_max_threads());
  }();
  return Threads;
}

} // namespace vmjit::tvm
