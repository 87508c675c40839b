//===- blas.cpp - OpenBLAS, loaded at the first matrix product ------------===//

#include "blas.h"

#include "vmjit/runtime/error.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <fmt/format.h>
#include <mutex>
#include <string>

namespace vmjit::kernels {

namespace {

std::atomic<bool> Loaded{false};

/// The result of the one load attempt: the functions, or why not.
struct BlasLoad {
  BlasFunctions Fns{};
  std::string Failure;
};

template <typename T> T symbol(void *Handle, const char *Name) {
  return reinterpret_cast<T>(dlsym(Handle, Name));
}

BlasLoad load() {
  BlasLoad L;
  // RTLD_NODELETE: kernels may run until the end of the process; the
  // library (and its pool threads) must never be unmapped.
  void *H =
      dlopen(VMJIT_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!H) {
    const char *Why = dlerror();
    L.Failure = fmt::format("cannot load OpenBLAS ({}): {}",
                            VMJIT_OPENBLAS_SONAME, Why ? Why : "unknown");
    return L;
  }
  L.Fns.Sgemm = symbol<decltype(&cblas_sgemm)>(H, "cblas_sgemm");
  L.Fns.Dgemm = symbol<decltype(&cblas_dgemm)>(H, "cblas_dgemm");
  L.Fns.GetNumThreads = symbol<decltype(&openblas_get_num_threads)>(
      H, "openblas_get_num_threads");
  auto SetThreads = symbol<decltype(&openblas_set_num_threads)>(
      H, "openblas_set_num_threads");
  if (!L.Fns.Sgemm || !L.Fns.Dgemm || !L.Fns.GetNumThreads || !SetThreads) {
    L.Failure = fmt::format("{} lacks cblas_sgemm, cblas_dgemm or "
                            "openblas_{{get,set}}_num_threads",
                            VMJIT_OPENBLAS_SONAME);
    return L;
  }
  // Batch-1 drivers multiply small matrices, where waking pool threads
  // costs more than it saves (docs/kernels.md).
  if (!std::getenv("OPENBLAS_NUM_THREADS"))
    SetThreads(1);
  Loaded.store(true, std::memory_order_release);
  return L;
}

} // namespace

const BlasFunctions &blasFunctions(const char *Caller) {
  static const BlasLoad L = load();
  if (!L.Failure.empty())
    throwError("RuntimeError", fmt::format("{}: {}", Caller, L.Failure));
  return L.Fns;
}

bool blasLoaded() noexcept { return Loaded.load(std::memory_order_acquire); }

} // namespace vmjit::kernels
