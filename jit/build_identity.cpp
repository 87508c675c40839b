//===- build_identity.cpp - Which build of vmjit's JIT this is ------------===//
//
// The ELF build ID (NT_GNU_BUILD_ID) of the shared object or executable
// that holds this code, found with dl_iterate_phdr: it changes whenever the
// JIT's code (the lowering, the layouts it reads, the helpers it calls)
// does, so object-cache keys that contain it never load code another build
// made. Without a build ID: the file's path, size and modification time.
//
//===----------------------------------------------------------------------===//

#include "vmjit/jit/host_info.h"

#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/stat.h>

namespace vmjit::jit {
namespace {

struct Search {
  uintptr_t Address = 0;
  bool Found = false;
  std::string Id;
};

/// The GNU build ID among the notes of `P` (hex), or empty.
std::string buildIdIn(const dl_phdr_info &Info, const ElfW(Phdr) & P) {
  const char *Note = reinterpret_cast<const char *>(Info.dlpi_addr + P.p_vaddr);
  const char *End = Note + P.p_memsz;
  auto align4 = [](size_t N) { return (N + 3) & ~size_t(3); };
  while (Note + sizeof(ElfW(Nhdr)) <= End) {
    const auto *N = reinterpret_cast<const ElfW(Nhdr) *>(Note);
    const char *Name = Note + sizeof(ElfW(Nhdr));
    const char *Desc = Name + align4(N->n_namesz);
    if (Desc + N->n_descsz > End)
      break;
    if (N->n_type == NT_GNU_BUILD_ID && N->n_namesz == 4 &&
        std::memcmp(Name, "GNU", 4) == 0) {
      std::string Hex;
      for (uint32_t I = 0; I < N->n_descsz; ++I)
        Hex += fmt::format("{:02x}", static_cast<unsigned char>(Desc[I]));
      return Hex;
    }
    Note = Desc + align4(N->n_descsz);
  }
  return {};
}

int visit(dl_phdr_info *Info, size_t, void *Data) {
  auto *S = static_cast<Search *>(Data);
  bool Holds = false;
  for (int I = 0; I < Info->dlpi_phnum && !Holds; ++I) {
    const ElfW(Phdr) &P = Info->dlpi_phdr[I];
    uintptr_t Start = Info->dlpi_addr + P.p_vaddr;
    Holds = P.p_type == PT_LOAD && S->Address >= Start &&
            S->Address < Start + P.p_memsz;
  }
  if (!Holds)
    return 0;
  S->Found = true;
  for (int I = 0; I < Info->dlpi_phnum && S->Id.empty(); ++I)
    if (Info->dlpi_phdr[I].p_type == PT_NOTE)
      S->Id = buildIdIn(*Info, Info->dlpi_phdr[I]);
  return 1;
}

std::string computeBuildIdentity() {
  Search S;
  S.Address = reinterpret_cast<uintptr_t>(&jitBuildIdentity);
  dl_iterate_phdr(visit, &S);
  if (!S.Id.empty())
    return S.Id;
  Dl_info Info{};
  struct stat St {};
  if (dladdr(reinterpret_cast<void *>(&jitBuildIdentity), &Info) &&
      Info.dli_fname && ::stat(Info.dli_fname, &St) == 0)
    return fmt::format("file {} {} {}", Info.dli_fname, St.st_size,
                       St.st_mtim.tv_sec * 1000000000LL + St.st_mtim.tv_nsec);
  return "unknown build";
}

} // namespace

const std::string &jitBuildIdentity() {
  static const std::string Id = computeBuildIdentity();
  return Id;
}

} // namespace vmjit::jit
