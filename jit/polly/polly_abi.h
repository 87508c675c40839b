//===- polly_abi.h - The C interface of the Polly back end ------*- C++ -*-===//
//
// libvmjit_polly.so optimizes a module with LLVM's O3 pipeline with Polly
// registered in it and generates its object code. Debian ships Polly only
// inside the shared libLLVM, while libvmjit_jit.so links its own LLVM
// statically (fast start-up): a pass of one copy of LLVM cannot run in the
// other's pass manager, so the Polly pipeline lives in this separate
// module, linked against the shared libLLVM and loaded by the engine only
// when an engine asks for Polly (EngineOptions::Polly). What crosses is
// plain memory: bitcode in, an ELF object out; no LLVM type.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_POLLY_POLLY_ABI_H
#define VMJIT_JIT_POLLY_POLLY_ABI_H

#include <cstddef>
#include <cstdint>

extern "C" {

/// Bumped whenever a field changes.
#define VMJIT_POLLY_ABI_VERSION 2

/// One module to optimize and compile, for the host.
struct VmjitPollyRequest {
  uint32_t Version; ///< VMJIT_POLLY_ABI_VERSION
  const char *Bitcode;
  size_t BitcodeSize;
  const char *Triple;   ///< the engine's target triple
  const char *CPU;      ///< host CPU name
  const char *Features; ///< host features, "+avx2,..."
  int OptLevel;         ///< IR pipeline level, 1..3
  int CodegenOptLevel;  ///< 0..3
  /// 0: llvm.fmuladd is never fused (FPOpFusion::Strict); 1: fused.
  int FuseFMA;
  /// Optional: asked between passes; once it returns nonzero, the passes
  /// still to come are skipped and the compile ends with
  /// VMJIT_POLLY_ABANDONED, before code generation.
  int (*Cancelled)(void *Ctx);
  void *CancelCtx;
};

/// The return code of a compile abandoned through Cancelled.
#define VMJIT_POLLY_ABANDONED 2

/// What a compile produced: the object file or an error message, both
/// allocated by the module and released with vmjitPollyFree.
struct VmjitPollyResult {
  char *Object;
  size_t ObjectSize;
  char *Error;
  double OptimizeMs; ///< time of the IR pipeline
};

/// Compiles `Req` into `Res`; returns 0 on success, else nonzero with
/// Res->Error set. Thread-safe.
typedef int (*VmjitPollyCompileFn)(const VmjitPollyRequest *Req,
                                   VmjitPollyResult *Res);
/// Releases a buffer of a VmjitPollyResult.
typedef void (*VmjitPollyFreeFn)(void *Ptr);
}

#endif // VMJIT_JIT_POLLY_POLLY_ABI_H
