//===- vmjit/runtime/tvm_backend.h - Host services for TVM kernels -*- C++ -*-===//
//
// A kernel library compiled by Apache TVM calls its host through writable
// pointer slots ("context symbols") that the loader fills after dlopen:
// `__tvm_ffi__library_ctx` (the library's own context, handed back to
// `__TVMFFIEnvModLookupFromImports`), `__TVMFFIFunctionCall`,
// `__TVMFFIErrorSetRaisedFromCStr`, `__TVMBackendAllocWorkspace`, the
// parallel launcher, ... The runtime also exports each of these functions
// under TVM's own name (TVMFFIFunctionCall, TVMBackendAllocWorkspace, ...,
// and the TVMBackendAnyList* functions of TVM's compiled mode), for code
// that links against them directly. VMJIT_TVM_BACKEND_FUNCTIONS names them
// once; contextSymbols() is the table of their slots, read by
// KernelLibrary::load. Parallel loops run on OpenMP's thread team
// (TVM_NUM_THREADS, else OMP_NUM_THREADS, else every core).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_TVM_BACKEND_H
#define VMJIT_RUNTIME_TVM_BACKEND_H

#include <span>
#include <string_view>

/// Every C function of TVM's runtime API that vmjit serves: exported
/// under this name, and written into a library's slot `__NAME`.
#define VMJIT_TVM_BACKEND_FUNCTIONS(X)                                         \
  X(TVMFFIFunctionCall)                                                        \
  X(TVMFFIEnvModLookupFromImports)                                             \
  X(TVMFFIHandleInitOnce)                                                      \
  X(TVMFFIErrorSetRaisedFromCStr)                                              \
  X(TVMFFIErrorSetRaisedFromCStrParts)                                         \
  X(TVMBackendGetFuncFromEnv)                                                  \
  X(TVMBackendAllocWorkspace)                                                  \
  X(TVMBackendFreeWorkspace)                                                   \
  X(TVMBackendParallelLaunch)                                                  \
  X(TVMBackendParallelBarrier)                                                 \
  X(TVMBackendAnyListSetPackedArg)                                             \
  X(TVMBackendAnyListResetItem)                                                \
  X(TVMBackendAnyListMoveFromPackedReturn)

namespace vmjit::tvm {

/// A slot a TVM-compiled library may define, and what the loader stores
/// in it. The library context slot (`kLibraryCtxSymbol`) is not in the
/// table: it gets the loading library's own address.
struct ContextSymbol {
  std::string_view Name;
  void *Value;
};

/// Every context slot vmjit serves (`__` and a name of
/// VMJIT_TVM_BACKEND_FUNCTIONS), one row each.
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
