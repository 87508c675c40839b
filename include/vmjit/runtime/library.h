//===- vmjit/runtime/library.h - Kernel libraries ----------------*- C++ -*-===//
//
// A kernel library is a shared object exporting safe-call functions: packed
// function NAME is the symbol `__vmjit_NAME` (or `__tvm_ffi_NAME`, the name
// tvm-ffi uses). Loading one gives its functions as packed Functions that
// keep the library mapped; their entries ignore `self`, so the JIT may call
// the symbols directly. The library itself may call the runtime's C API
// (VMJITErrorSetRaisedFromCStr, ...), which libvmjit_runtime exports.
// A library may also be a table of functions made in this process (the
// JIT's kernel tier, include/vmjit/jit/kernel_tier.h): the same lookups,
// served from the table.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_LIBRARY_H
#define VMJIT_RUNTIME_LIBRARY_H

#include "vmjit/runtime/function.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit {

class KernelLibrary : public std::enable_shared_from_this<KernelLibrary> {
public:
  /// Loads the shared object at `Path`. Throws an Error of kind
  /// "LibraryError" naming the path and the loader's reason if it cannot.
  VMJIT_DLL static std::shared_ptr<KernelLibrary> load(const std::string &Path);
  /// A library of functions made in-process: `Functions` maps a packed
  /// function NAME to its Function (what find() gives), `Symbols` other
  /// exported symbol names to addresses (what symbol() finds);
  /// `KeepAlive` owns what the symbols point into. `Name` stands for the
  /// path in messages. Not a dlopen'ed file: no libraryBin.
  VMJIT_DLL static std::shared_ptr<KernelLibrary>
  fromFunctions(std::string Name,
                std::map<std::string, Function, std::less<>> Functions,
                std::map<std::string, void *, std::less<>> Symbols,
                std::shared_ptr<void> KeepAlive);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

  const std::string &path() const noexcept { return Path; }
  /// The packed function NAME (symbol `__vmjit_NAME` or `__tvm_ffi_NAME`),
  /// or nullopt if the library does not export it.
  VMJIT_DLL std::optional<Function> find(std::string_view Name);
  /// The raw safe-call entry of NAME (one that ignores `self`), or null.
  VMJIT_DLL VMJITSafeCallType findEntry(std::string_view Name) const;
  /// Names of every exported packed function, sorted (read from the ELF
  /// dynamic symbol table of the file).
  VMJIT_DLL std::vector<std::string> functionNames() const;
  /// The module blob of a library TVM's `export_library` wrote (the
  /// `__tvm_ffi__library_bin` symbol, as large as its symbol table entry
  /// says), or an empty span if there is none.
  VMJIT_DLL std::span<const char> libraryBin() const;
  /// The address of the exported symbol `Name`, or null.
  VMJIT_DLL const void *symbol(const char *Name) const;
  /// For TVM-compiled kernels (`__TVMFFIEnvModLookupFromImports`): the
  /// Function NAME, from the registry or else this library, cached here
  /// for as long as the library lives (the pointer is borrowed). Null,
  /// with a raised error, if there is none.
  VMJIT_DLL VMJITObject *importHandle(const char *Name) noexcept;

private:
  KernelLibrary(std::string Path, void *Handle)
      : Path(std::move(Path)), Handle(Handle) {}
  std::string Path;
  void *Handle;
  /// fromFunctions: the table and what keeps its symbols alive.
  std::map<std::string, Function, std::less<>> Functions;
  std::map<std::string, void *, std::less<>> Symbols;
  std::shared_ptr<void> KeepAlive;
  std::mutex ImportMutex;
  std::map<std::string, Function, std::less<>> Imports;
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_LIBRARY_H
