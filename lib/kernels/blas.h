//===- blas.h - OpenBLAS, loaded at the first matrix product ----*- C++ -*-===//
//
// Internal to lib/kernels. OpenBLAS (the pthread build Debian installs by
// default) starts its thread pool when it is loaded, and each pool thread
// spins in sched_yield for about 0.1 s before it sleeps: in a process
// linked against it, a program that never multiplies a matrix still had a
// second busy thread. vmjit therefore does not link OpenBLAS; it loads it
// with dlopen at the first GEMM, so a process that never calls matmul has
// no BLAS thread at all.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_KERNELS_BLAS_H
#define VMJIT_LIB_KERNELS_BLAS_H

#include <cblas.h>

namespace vmjit::kernels {

/// The OpenBLAS entry points matmul uses.
struct BlasFunctions {
  decltype(&cblas_sgemm) Sgemm;
  decltype(&cblas_dgemm) Dgemm;
  decltype(&openblas_get_num_threads) GetNumThreads;
};

/// OpenBLAS, loaded on the first call (thread-safe) and set to one thread
/// unless OPENBLAS_NUM_THREADS is set. Throws Error("RuntimeError") naming
/// the library when it cannot be loaded; `Caller` prefixes the message.
const BlasFunctions &blasFunctions(const char *Caller);

/// Whether OpenBLAS has been loaded by blasFunctions (for tests).
bool blasLoaded() noexcept;

} // namespace vmjit::kernels

#endif // VMJIT_LIB_KERNELS_BLAS_H
