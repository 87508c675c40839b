//===- vmjit/jit/host_info.h - The machine the JIT compiles for -*- C++ -*-===//
//
// What the JIT knows about its host: LLVM version, target triple, CPU name
// and features, and which build of the JIT it is. Printed by `vmjit
// --version`; part of every object-cache key (code for one CPU, or made by
// another build of vmjit, must not be loaded). Declared without LLVM
// headers so that tools can include it cheaply.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_HOST_INFO_H
#define VMJIT_JIT_HOST_INFO_H

#include <string>

namespace vmjit::jit {

struct HostInfo {
  std::string LLVMVersion; ///< e.g. "19.1.7"
  std::string Triple;      ///< e.g. "x86_64-pc-linux-gnu"
  std::string CPU;         ///< e.g. "skylake-avx512"
  std::string Features;    ///< "+avx2,+fma,..." sorted, comma-separated
};

/// Describes the host (computed once, then cached).
const HostInfo &hostInfo();

/// Which build of vmjit's JIT this is: the ELF build ID of the library (or
/// executable) holding it, in hex (else its file's path, size and time).
/// Part of every object-cache key, so that no build loads code another
/// made.
const std::string &jitBuildIdentity();

} // namespace vmjit::jit

#endif // VMJIT_JIT_HOST_INFO_H
