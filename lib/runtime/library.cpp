//===- library.cpp - Loading kernel libraries ------------------------------===//

#include "vmjit/runtime/library.h"
#include "vmjit/runtime/logging.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <fstream>
#include <string_view>

namespace vmjit {
namespace {

constexpr std::string_view kPrefixes[] = {"__vmjit_", "__tvm_ffi_"};

/// Reads the names of the defined global functions in the ELF dynamic
/// symbol table of `Path`. Any malformation gives an empty list: the
/// symbols can still be found one by one with dlsym.
std::vector<std::string> readDynamicSymbols(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  std::string File((std::istreambuf_iterator<char>(In)),
                   std::istreambuf_iterator<char>());
  std::vector<std::string> Names;
  auto Fits = [&](uint64_t Off, uint64_t Size) {
    return Off <= File.size() && Size <= File.size() - Off;
  };
  if (!Fits(0, sizeof(Elf64_Ehdr)) ||
      File.compare(0, SELFMAG, ELFMAG, SELFMAG) != 0 ||
      File[EI_CLASS] != ELFCLASS64)
    return Names;
  Elf64_Ehdr Eh;
  std::memcpy(&Eh, File.data(), sizeof(Eh));
  if (Eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !Fits(Eh.e_shoff, uint64_t(Eh.e_shnum) * sizeof(Elf64_Shdr)))
    return Names;
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
      if (S.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(S.st_info) != STT_FUNC ||
          S.st_name >= Strings.size())
        continue;
      std::string_view Name = Strings.substr(S.st_name);
      Name = Name.substr(0, Name.find('\0'));
      Names.emplace_back(Name);
    }
  }
  return Names;
}

} // namespace

std::shared_ptr<KernelLibrary> KernelLibrary::load(const std::string &Path) {
  // RTLD_LOCAL: two libraries may export the same kernel names.
  void *Handle = ::dlopen(Path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!Handle) {
    const char *Why = ::dlerror();
    throwError("LibraryError",
               fmt::format("cannot load kernel library '{}': {}", Path,
                           Why ? Why : "unknown reason"));
  }
  logger().debug("loaded kernel library {}", Path);
  return std::shared_ptr<KernelLibrary>(new KernelLibrary(Path, Handle));
}

KernelLibrary::~KernelLibrary() {
  if (Handle)
    ::dlclose(Handle);
}

VMJITSafeCallType KernelLibrary::findEntry(std::string_view Name) const {
  for (std::string_view Prefix : kPrefixes) {
    std::string Symbol = std::string(Prefix) + std::string(Name);
    if (void *Addr = ::dlsym(Handle, Symbol.c_str()))
      return reinterpret_cast<VMJITSafeCallType>(Addr);
  }
  return nullptr;
}

std::optional<Function> KernelLibrary::find(std::string_view Name) {
  VMJITSafeCallType Entry = findEntry(Name);
  if (!Entry)
    return std::nullopt;
  return Function::fromSafeCall(Entry, std::string(Name), shared_from_this());
}

std::vector<std::string> KernelLibrary::functionNames() const {
  std::vector<std::string> Names;
  for (const std::string &Symbol : readDynamicSymbols(Path)) {
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
