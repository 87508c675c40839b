//===- library.cpp - Loading kernel libraries ------------------------------===//

#include "vmjit/runtime/library.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/logging.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/tvm_backend.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <set>
#include <string_view>

namespace vmjit {
namespace {

constexpr std::string_view kPrefixes[] = {"__vmjit_", "__tvm_ffi_"};

struct DynamicSymbol {
  std::string Name;
  unsigned Type; ///< STT_FUNC, STT_OBJECT, ...
  uint64_t Size;
};

/// The defined symbols of the ELF image `File` into `Names`; nothing on
/// any malformation.
void readSymbolTable(std::string_view File, std::vector<DynamicSymbol> &Names) {
  auto Fits = [&](uint64_t Off, uint64_t Size) {
    return Off <= File.size() && Size <= File.size() - Off;
  };
  if (!Fits(0, sizeof(Elf64_Ehdr)) ||
      File.compare(0, SELFMAG, ELFMAG, SELFMAG) != 0 ||
      File[EI_CLASS] != ELFCLASS64)
    return;
  Elf64_Ehdr Eh;
  std::memcpy(&Eh, File.data(), sizeof(Eh));
  if (Eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !Fits(Eh.e_shoff, uint64_t(Eh.e_shnum) * sizeof(Elf64_Shdr)))
    return;
  auto Section = [&](unsigned I) {
    Elf64_Shdr Sh;
    std::memcpy(&Sh, File.data() + Eh.e_shoff + I * sizeof(Elf64_Shdr),
                sizeof(Sh));
    return Sh;
  };
  for (unsigned I = 0; I < Eh.e_shnum; ++I) {
    Elf64_Shdr Sym = Section(I);
    if (Sym.sh_type != SHT_DYNSYM || Sym.sh_entsize != sizeof(Elf64_Sym) ||
        Sym.sh_link >= Eh.e_shnum || !Fits(Sym.sh_offset, Sym.sh_size))
      continue;
    Elf64_Shdr Str = Section(Sym.sh_link);
    if (!Fits(Str.sh_offset, Str.sh_size))
      continue;
    std::string_view Strings(File.data() + Str.sh_offset, Str.sh_size);
    for (uint64_t Off = 0; Off + sizeof(Elf64_Sym) <= Sym.sh_size;
         Off += sizeof(Elf64_Sym)) {
      Elf64_Sym S;
      std::memcpy(&S, File.data() + Sym.sh_offset + Off, sizeof(S));
      if (S.st_shndx == SHN_UNDEF || S.st_name >= Strings.size())
        continue;
      std::string_view Name = Strings.substr(S.st_name);
      Name = Name.substr(0, Name.find('\0'));
      Names.push_back({std::string(Name),
                       static_cast<unsigned>(ELF64_ST_TYPE(S.st_info)),
                       S.st_size});
    }
  }
}

/// Reads the defined symbols in the ELF dynamic symbol table of `Path`.
/// Any malformation gives an empty list: the symbols can still be found
/// one by one with dlsym.
std::vector<DynamicSymbol> readDynamicSymbols(const std::string &Path) {
  // Mapped, not read: a model library can hold a gigabyte of weights.
  std::vector<DynamicSymbol> Names;
  int Fd = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return Names;
  struct stat St;
  void *Map = MAP_FAILED;
  if (::fstat(Fd, &St) == 0 && St.st_size > 0)
    Map = ::mmap(nullptr, static_cast<size_t>(St.st_size), PROT_READ,
                 MAP_PRIVATE, Fd, 0);
  ::close(Fd);
  if (Map == MAP_FAILED)
    return Names;
  std::string_view File(static_cast<const char *>(Map),
                        static_cast<size_t>(St.st_size));
  readSymbolTable(File, Names);
  ::munmap(Map, File.size());
  return Names;
}

/// Why the ELF file at `Path` cannot be mapped whole, or "" (also for what
/// is not a 64-bit ELF file: dlopen then says what is wrong). glibc's
/// loader maps each loadable segment and clears its tail past the file
/// data; a segment whose data runs past the end of a truncated file makes
/// it fault (SIGBUS) instead of failing.
std::string truncatedElf(const std::string &Path) {
  int Fd = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return "";
  std::string Why;
  struct stat St;
  Elf64_Ehdr Eh;
  if (::fstat(Fd, &St) == 0 &&
      ::pread(Fd, &Eh, sizeof Eh, 0) == static_cast<ssize_t>(sizeof Eh) &&
      std::memcmp(Eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      Eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      Eh.e_phentsize == sizeof(Elf64_Phdr)) {
    const uint64_t Size = static_cast<uint64_t>(St.st_size);
    for (unsigned I = 0; I < Eh.e_phnum && Why.empty(); ++I) {
      Elf64_Phdr Ph;
      const uint64_t At = Eh.e_phoff + uint64_t(I) * sizeof Ph;
      if (::pread(Fd, &Ph, sizeof Ph, static_cast<off_t>(At)) !=
          static_cast<ssize_t>(sizeof Ph)) {
        Why = fmt::format("its program headers run past its end ({} bytes)",
                          Size);
      } else if (Ph.p_type == PT_LOAD &&
                 (Ph.p_offset > Size || Ph.p_filesz > Size - Ph.p_offset)) {
        Why = fmt::format("it is truncated: segment {} ends at byte {}, the "
                          "file has {}",
                          I, Ph.p_offset + Ph.p_filesz, Size);
      }
    }
  }
  ::close(Fd);
  return Why;
}

/// tvm-ffi's error cell, right after an Error object's 24-byte header.
struct ForeignErrorCell {
  VMJITByteArray Kind, Message;
};
constexpr int32_t kForeignErrorType = 67; // tvm-ffi's kTVMFFIError

using MoveFromRaisedFn = void (*)(void **);
using DecRefFn = int (*)(void *);

/// Takes the error a tvm-ffi runtime in the process holds for this thread
/// (a kernel built with tvm-ffi raises through its own libtvm_ffi.so).
std::optional<Error> takeForeignError(MoveFromRaisedFn Move, DecRefFn DecRef) {
  void *Obj = nullptr;
  Move(&Obj);
  if (!Obj)
    return std::nullopt;
  int32_t Type;
  std::memcpy(&Type, static_cast<char *>(Obj) + 8, sizeof(Type));
  std::optional<Error> E;
  if (Type == kForeignErrorType) {
    ForeignErrorCell Cell;
    std::memcpy(&Cell, static_cast<char *>(Obj) + 24, sizeof(Cell));
    E = Error(std::string(Cell.Kind.data, Cell.Kind.size),
              std::string(Cell.Message.data, Cell.Message.size));
  }
  DecRef(Obj);
  return E;
}

/// Fills the context slots `Lib` defines (tvm_backend.h); a slot vmjit
/// does not serve is a LibraryError.
void fillContextSlots(KernelLibrary &Lib, void *Handle,
                      const std::vector<DynamicSymbol> &Symbols) {
  for (const DynamicSymbol &S : Symbols) {
    if (S.Type != STT_OBJECT || !tvm::isContextSlotName(S.Name))
      continue;
    void **Slot = static_cast<void **>(::dlsym(Handle, S.Name.c_str()));
    if (!Slot)
      continue;
    if (S.Name == tvm::kLibraryCtxSymbol) {
      *Slot = &Lib;
      continue;
    }
    bool Served = false;
    for (const tvm::ContextSymbol &C : tvm::contextSymbols())
      if (C.Name == S.Name) {
        *Slot = C.Value;
        Served = true;
      }
    if (!Served)
      throwError("LibraryError",
                 fmt::format("kernel library '{}' needs the host function "
                             "'{}', which vmjit does not provide",
                             Lib.path(), S.Name.substr(2)));
  }
}

/// Kernel libraries find the C API (VMJITErrorSetRaisedFromCStr, ...) by
/// name in the process's global scope. A host that loaded this runtime
/// RTLD_LOCAL (Python does, for the extension that needs it) hides it
/// there: promote it to global, once, before the first library loads.
void makeRuntimeGlobal() {
  static const bool Done = [] {
    Dl_info Info;
    if (::dladdr(reinterpret_cast<void *>(&VMJITErrorSetRaisedFromCStr),
                 &Info) &&
        Info.dli_fname)
      ::dlopen(Info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    return true;
  }();
  (void)Done;
}

} // namespace

std::shared_ptr<KernelLibrary> KernelLibrary::load(const std::string &Path) {
  makeRuntimeGlobal();
  if (std::string Why = truncatedElf(Path); !Why.empty())
    throwError("LibraryError",
               fmt::format("cannot load kernel library '{}': {}", Path, Why));
  // RTLD_LOCAL: two libraries may export the same kernel names.
  void *Handle = ::dlopen(Path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!Handle) {
    const char *Why = ::dlerror();
    throwError("LibraryError",
               fmt::format("cannot load kernel library '{}': {}", Path,
                           Why ? Why : "unknown reason"));
  }
  logger().debug("loaded kernel library {}", Path);
  std::shared_ptr<KernelLibrary> Lib(new KernelLibrary(Path, Handle));
  fillContextSlots(*Lib, Handle, readDynamicSymbols(Path));
  // A library built with tvm-ffi raises its errors in libtvm_ffi.so.
  auto Move = reinterpret_cast<MoveFromRaisedFn>(
      ::dlsym(Handle, "TVMFFIErrorMoveFromRaised"));
  auto DecRef =
      reinterpret_cast<DecRefFn>(::dlsym(Handle, "TVMFFIObjectDecRef"));
  static std::mutex SeenMutex;
  static std::set<MoveFromRaisedFn> Seen;
  std::lock_guard Lock(SeenMutex);
  if (Move && DecRef && Seen.insert(Move).second) {
    // That runtime stays mapped for the rest of the process: the source
    // outlives this library.
    Dl_info Info;
    if (::dladdr(reinterpret_cast<void *>(Move), &Info) && Info.dli_fname)
      ::dlopen(Info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    addForeignErrorSource(
        [Move, DecRef] { return takeForeignError(Move, DecRef); });
  }
  return Lib;
}

std::shared_ptr<KernelLibrary> KernelLibrary::fromFunctions(
    std::string Name, std::map<std::string, Function, std::less<>> Functions,
    std::map<std::string, void *, std::less<>> Symbols,
    std::shared_ptr<void> KeepAlive) {
  std::shared_ptr<KernelLibrary> Lib(
      new KernelLibrary(std::move(Name), nullptr));
  Lib->Functions = std::move(Functions);
  Lib->Symbols = std::move(Symbols);
  Lib->KeepAlive = std::move(KeepAlive);
  return Lib;
}

std::span<const char> KernelLibrary::libraryBin() const {
  if (!Handle)
    return {};
  const char *Bin = static_cast<const char *>(
      ::dlsym(Handle, std::string(tvm::kLibraryBinSymbol).c_str()));
  if (!Bin)
    return {};
  uint64_t Size = 0;
  for (const DynamicSymbol &S : readDynamicSymbols(Path))
    if (S.Name == tvm::kLibraryBinSymbol)
      Size = S.Size;
  if (Size == 0)
    throwError("FormatError",
               fmt::format("{}: the symbol {} has no size in the dynamic "
                           "symbol table",
                           Path, tvm::kLibraryBinSymbol));
  return {Bin, Size};
}

const void *KernelLibrary::symbol(const char *Name) const {
  if (!Handle) {
    auto It = Symbols.find(std::string_view(Name));
    return It == Symbols.end() ? nullptr : It->second;
  }
  return ::dlsym(Handle, Name);
}

VMJITObject *KernelLibrary::importHandle(const char *Name) noexcept {
  try {
    std::lock_guard Lock(ImportMutex);
    auto It = Imports.find(Name);
    if (It == Imports.end()) {
      // TVM's order: the library's imports (a CPU library TVM exports has
      // none vmjit could run), then the global registry. Past TVM, a
      // function only the library itself exports, held without a
      // reference to the library (which owns this cache).
      std::optional<Function> F = Registry::global().find(Name);
      if (F)
        if (std::optional<Function> V = tvmAbiVariant(*F))
          F = std::move(V);
      if (!F && !Handle)
        if (auto It = Functions.find(std::string_view(Name));
            It != Functions.end())
          F = It->second;
      if (!F)
        if (VMJITSafeCallType Entry = findEntry(Name))
          F = Function::fromSafeCall(Entry, Name);
      if (!F)
        throwError("LinkError",
                   fmt::format("kernel library '{}' looked up function '{}', "
                               "which is not in the library or the registry",
                               Path, Name));
      It = Imports.emplace(Name, std::move(*F)).first;
    }
    return reinterpret_cast<VMJITObject *>(It->second.get());
  } catch (...) {
    detail::raiseCurrentException();
    return nullptr;
  }
}

KernelLibrary::~KernelLibrary() {
  if (Handle)
    ::dlclose(Handle);
}

VMJITSafeCallType KernelLibrary::findEntry(std::string_view Name) const {
  if (!Handle) {
    auto It = Functions.find(Name);
    return It == Functions.end() || !It->second.get()->isFreeEntry()
               ? nullptr
               : It->second.get()->entry();
  }
  for (std::string_view Prefix : kPrefixes) {
    std::string Symbol = std::string(Prefix) + std::string(Name);
    if (void *Addr = ::dlsym(Handle, Symbol.c_str()))
      return reinterpret_cast<VMJITSafeCallType>(Addr);
  }
  return nullptr;
}

std::optional<Function> KernelLibrary::find(std::string_view Name) {
  if (!Handle) {
    auto It = Functions.find(Name);
    if (It == Functions.end())
      return std::nullopt;
    return It->second;
  }
  VMJITSafeCallType Entry = findEntry(Name);
  if (!Entry)
    return std::nullopt;
  return Function::fromSafeCall(Entry, std::string(Name), shared_from_this());
}

std::vector<std::string> KernelLibrary::functionNames() const {
  std::vector<std::string> Names;
  if (!Handle) {
    for (const auto &[Name, F] : Functions)
      Names.push_back(Name);
    return Names;
  }
  for (const DynamicSymbol &S : readDynamicSymbols(Path)) {
    if (S.Type != STT_FUNC)
      continue;
    const std::string &Symbol = S.Name;
    for (std::string_view Prefix : kPrefixes) {
      if (Symbol.size() > Prefix.size() &&
          std::string_view(Symbol).substr(0, Prefix.size()) == Prefix) {
        Names.push_back(Symbol.substr(Prefix.size()));
        break;
      }
    }
  }
  std::sort(Names.begin(), Names.end());
  Names.erase(std::unique(Names.begin(), Names.end()), Names.end());
  return Names;
}

} // namespace vmjit
