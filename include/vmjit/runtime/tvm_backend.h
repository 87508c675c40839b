//===- vmjit/runtime/tvm_backend.h - Host services for TVM kernels -*- C++ -*-===//
//
// A kernel library compiled by Apache TVM calls its host through writable
// pointer slots ("context symbols") that the loader fills after dlopen:
// `__tvm_ffi__library_ctx` (the library's own context, handed back to
// `__TVMFFIEnvModLookupFromImports`), `__TVMFFIFunctionCall`,
// `__TVMFFIErrorSetRaisedFromCStr`, `__TVMBackendAllocWorkspace`, the
// parallel launcher, ... contextSymbols() is the one table of them, read
// by KernelLibrary::load. Parallel loops run on OpenMP's thread team
// (TVM_NUM_THREADS, else OMP_NUM_THREADS, else every core).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_TVM_BACKEND_H
#define VMJIT_RUNTIME_TVM_BACKEND_H

#include <span>
#include <string_view>

namespace vmjit::tvm {

/// A slot a TVM-compiled library may define, and what the loader stores
/// in it. The library context slot (`kLibraryCtxSymbol`) is not in the
/// table: it gets the loading library's own address.
struct ContextSymbol {
  std::string_view Name;
  void *Value;
};

/// Every context slot vmjit serves, one row each.
std::span<const ContextSymbol> contextSymbols() noexcept;

inline constexpr std::string_view kLibraryCtxSymbol = "__tvm_ffi__library_ctx";
/// The embedded module blob of an exported library (`export_library`).
inline constexpr std::string_view kLibraryBinSymbol = "__tvm_ffi__library_bin";

/// Whether `Name`, a data symbol a library defines, looks like a context
/// slot (TVM names them "__" followed by the C API's name).
bool isContextSlotName(std::string_view Name) noexcept;

/// The number of threads a parallel launch with no task count uses.
int parallelThreads() noexcept;

} // namespace vmjit::tvm

#endif // VMJIT_RUNTIME_TVM_BACKEND_H
