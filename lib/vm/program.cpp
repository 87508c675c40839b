//===- program.cpp - Loading a program from a file -------------------------===//

#include "vmjit/vm/program.h"
#include "vmjit/files/file_io.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/kernel_slot.h"
#include "vmjit/runtime/library.h"
#include "vmjit/runtime/tvm_backend.h"
#include "vmjit/text/assembler.h"
#include "vmjit/text/disassembler.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sys/mman.h>
#include <unistd.h>

namespace vmjit::vm {
namespace {

/// Bytes read to detect a format.
constexpr size_t kHeadBytes = 4096;

/// No NUL byte, and the first line that is neither blank nor a comment
/// starts (after indentation) with a directive ('.' and a letter).
bool looksLikeVmasm(std::string_view Head) {
  if (Head.find('\0') != std::string_view::npos)
    return false;
  size_t I = 0;
  while (I < Head.size()) {
    size_t End = Head.find('\n', I);
    std::string_view Line =
        Head.substr(I, End == std::string_view::npos ? std::string_view::npos
                                                     : End - I);
    size_t J = Line.find_first_not_of(" \t\r\f\v");
    if (J != std::string_view::npos && Line[J] != ';' && Line[J] != '#') {
      char Next = J + 1 < Line.size() ? Line[J + 1] : '\0';
      return Line[J] == '.' && ((Next >= 'a' && Next <= 'z') ||
                                (Next >= 'A' && Next <= 'Z') || Next == '_');
    }
    if (End == std::string_view::npos)
      break;
    I = End + 1;
  }
  return false;
}

} // namespace

namespace {

/// One row per format: its short name (`vmjit stats`) and how messages
/// describe it.
struct FormatRow {
  ProgramFormat Format;
  std::string_view Name;
  std::string_view Description;
};
constexpr FormatRow kFormats[] = {
    {ProgramFormat::Vmasm, "vmasm", "vmasm text"},
    {ProgramFormat::Binary, "binary", "a vmjit binary executable"},
    {ProgramFormat::Tvm, "tvm", "a TVM VMExecutable file"},
    {ProgramFormat::Library, "library", "a shared library"},
    {ProgramFormat::Unknown, "unknown", "content vmjit does not recognise"},
};

const FormatRow &formatRow(ProgramFormat F) noexcept {
  for (const FormatRow &R : kFormats)
    if (R.Format == F)
      return R;
  return kFormats[std::size(kFormats) - 1];
}

} // namespace

std::string_view programFormatName(ProgramFormat F) noexcept {
  return formatRow(F).Name;
}

std::string_view describeProgramFormat(ProgramFormat F) noexcept {
  return formatRow(F).Description;
}

bool isVmasmPath(const std::string &Path) {
  static constexpr std::string_view Ext = ".vmasm";
  if (Path.size() <= Ext.size())
    return false;
  std::string_view Tail = std::string_view(Path).substr(Path.size() - Ext.size());
  return std::equal(Tail.begin(), Tail.end(), Ext.begin(), [](char A, char B) {
    return std::tolower(static_cast<unsigned char>(A)) == B;
  });
}

ProgramFormat detectProgramFormat(std::span<const char> Head,
                                  const std::string &Path) {
  if (hasBinaryMagic(Head))
    return ProgramFormat::Binary;
  if (hasTvmMagic(Head))
    return ProgramFormat::Tvm;
  if (Head.size() >= 4 && std::string_view(Head.data(), 4) == "\x7f" "ELF")
    return ProgramFormat::Library;
  if (looksLikeVmasm(std::string_view(Head.data(), Head.size())) ||
      isVmasmPath(Path))
    return ProgramFormat::Vmasm;
  return ProgramFormat::Unknown;
}

ProgramFormat detectProgramFormat(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    throwError("IOError",
               fmt::format("cannot open '{}': {}", Path, std::strerror(errno)));
  std::string Head(kHeadBytes, '\0');
  In.read(Head.data(), static_cast<std::streamsize>(Head.size()));
  if (In.bad())
    throwError("IOError", fmt::format("cannot read '{}'", Path));
  Head.resize(static_cast<size_t>(In.gcount()));
  return detectProgramFormat(Head, Path);
}

namespace {

/// Reads the fields of a library blob, each read bounds-checked.
class BlobReader {
public:
  BlobReader(std::span<const char> Data, const std::string &Name)
      : Data(Data), Name(Name) {}
  uint64_t u64(const char *Field) {
    need(8, Field);
    uint64_t V;
    std::memcpy(&V, Data.data() + Pos, 8);
    Pos += 8;
    return V;
  }
  std::span<const char> bytes(const char *Field) {
    uint64_t N = u64(Field);
    need(N, Field);
    std::span<const char> S = Data.subspan(Pos, N);
    Pos += N;
    return S;
  }
  std::vector<uint64_t> u64s(const char *Field) {
    uint64_t N = u64(Field);
    need(N > (Data.size() - Pos) / 8 ? UINT64_MAX : N * 8, Field);
    std::vector<uint64_t> V(N);
    if (N != 0) // memcpy to an empty vector's null data() is undefined.
      std::memcpy(V.data(), Data.data() + Pos, N * 8);
    Pos += N * 8;
    return V;
  }
  [[noreturn]] void fail(const std::string &What) const {
    throwError("FormatError", fmt::format("{}: library blob offset {}: {}",
                                          Name, Pos, What));
  }

private:
  void need(uint64_t N, const char *Field) const {
    if (N > Data.size() - Pos)
      fail(fmt::format("{} runs past the end of the blob ({} bytes)", Field,
                       Data.size()));
  }
  std::span<const char> Data;
  const std::string &Name;
  size_t Pos = 0;
};

constexpr std::string_view kVMExecutableKind = "relax.VMExecutable";

} // namespace

std::shared_ptr<Executable> loadLibraryBin(std::span<const char> Bin,
                                           const std::string &Name,
                                           const LoadOptions &Opts) {
  uint64_t N = 0;
  if (Bin.size() < 8)
    throwError("FormatError",
               fmt::format("{}: library blob offset 0: blob size runs past "
                           "the end of the symbol ({} bytes)",
                           Name, Bin.size()));
  std::memcpy(&N, Bin.data(), 8);
  if (N > Bin.size() - 8)
    throwError("FormatError",
               fmt::format("{}: library blob offset 0: blob size {} is past "
                           "the symbol's {} bytes",
                           Name, N, Bin.size()));
  BlobReader R(Bin.subspan(8, N), Name);
  std::vector<uint64_t> RowPtr = R.u64s("import tree row pointers");
  std::vector<uint64_t> Children = R.u64s("import tree child indices");
  if (RowPtr.empty())
    R.fail("the import tree has no modules");
  if (RowPtr.front() != 0 || RowPtr.back() != Children.size() ||
      !std::is_sorted(RowPtr.begin(), RowPtr.end()))
    R.fail("the import tree's row pointers are not a valid CSR index");
  for (uint64_t C : Children)
    if (C >= RowPtr.size() - 1)
      R.fail(fmt::format("the import tree names module {}, of {}", C,
                         RowPtr.size() - 1));
  std::span<const char> Exe;
  bool Found = false;
  for (size_t M = 0; M + 1 < RowPtr.size(); ++M) {
    std::span<const char> KindBytes = R.bytes("module kind");
    std::string Kind(KindBytes.begin(), KindBytes.end());
    if (Kind == "_lib")
      continue;
    std::span<const char> Bytes = R.bytes("module bytes");
    if (Kind != kVMExecutableKind)
      R.fail(fmt::format("module {} is of kind '{}'; vmjit loads '{}' "
                         "modules and the library's own kernels (CPU only)",
                         M, Kind, kVMExecutableKind));
    if (Found)
      R.fail(fmt::format("a second '{}' module (module {})",
                         kVMExecutableKind, M));
    Exe = Bytes;
    Found = true;
  }
  if (!Found)
    R.fail(fmt::format("no '{}' module: the library holds kernels only "
                       "(load it with --lib)",
                       kVMExecutableKind));
  return loadTvmExecutableFromBytes(Exe, Name + "[relax.VMExecutable]", Opts);
}

bool isStreamPath(const std::string &Path) {
  if (Path == "-")
    return true;
  std::error_code EC;
  auto St = std::filesystem::status(Path, EC);
  return !EC && std::filesystem::exists(St) &&
         !std::filesystem::is_regular_file(St) &&
         !std::filesystem::is_directory(St);
}

namespace {

[[noreturn]] void throwEmpty(const std::string &Name) {
  throwError("FormatError",
             fmt::format("{}: the input is empty (expected vmasm text, a "
                         "vmjit binary, a TVM executable or a TVM model "
                         "library)",
                         Name));
}

[[noreturn]] void throwUnrecognised(const std::string &Name) {
  throwError("FormatError",
             fmt::format("{}: not a vmjit executable (bad magic); not vmasm "
                         "text (whose first statement is a directive such as "
                         ".func), a TVM executable or a shared library "
                         "either",
                         Name));
}

/// Throws FormatError if the regular file at `Path` is over `Max` bytes.
void checkFileSize(const std::string &Path, int64_t Max) {
  std::error_code EC;
  auto Size = std::filesystem::file_size(Path, EC);
  if (!EC && Size > static_cast<uint64_t>(Max))
    throwError("FormatError",
               fmt::format("{}: the file is {} bytes, over the limit of {}",
                           Path, Size, Max));
}

/// The kernel libraries a `vmjit compile` library was compiled with, as
/// recorded (relative to its own directory), into `P`: loaded where they
/// are, named in MissingKernels where they are not.
void openRecordedKernels(OpenedProgram &P, const std::string &Name) {
  const bool OnDisk = !isStreamPath(Name) && Name != "<stdin>";
  for (const std::string &Rec : P.Aot->kernelLibraries()) {
    std::filesystem::path Lib(Rec);
    if (Lib.is_relative()) {
      if (!OnDisk) {
        P.MissingKernels.push_back(fmt::format(
            "{} was compiled with the kernel library '{}' (relative to it), "
            "which cannot be found from a stream",
            Name, Rec));
        continue;
      }
      Lib = std::filesystem::absolute(Name).parent_path() / Lib;
    }
    const std::string Path = Lib.lexically_normal().string();
    std::error_code EC;
    if (!std::filesystem::is_regular_file(Path, EC)) {
      P.MissingKernels.push_back(fmt::format(
          "{} was compiled with the kernel library '{}' ({}), which is not "
          "there",
          Name, Rec, Path));
      continue;
    }
    P.Libraries.push_back(KernelLibrary::load(Path));
    P.KernelNotes.push_back(fmt::format(
        "kernels: {} (recorded in {} by vmjit compile)", Path, Name));
  }
}

/// Puts kernel slots (runtime/kernel_slot.h) ahead of the compiled
/// kernels of `P.Libraries.front()`, a `vmjit compile --kernels` library:
/// each published with the compiled entry, falling back to the recorded
/// library's for a strided unaligned tensor, so that unaligned arguments
/// are copied for code that assumes alignment.
void serveThroughSlots(OpenedProgram &P) {
  const std::shared_ptr<KernelLibrary> Lib = P.Libraries.front();
  std::map<std::string, Function, std::less<>> Slots;
  for (const std::string &Name : Lib->functionNames()) {
    VMJITSafeCallType Compiled = Lib->findEntry(Name);
    if (!Compiled)
      continue;
    Function Fallback;
    for (size_t I = 1; I < P.Libraries.size() && !Fallback.defined(); ++I)
      if (std::optional<Function> F = P.Libraries[I]->find(Name);
          F && F->get()->isFreeEntry())
        Fallback = std::move(*F);
    auto Slot = makeObject<KernelSlotObj>(Name, std::move(Fallback));
    Slot->publish(Compiled, Lib);
    Slots.emplace(Name, Function(ObjectPtr<Object>(std::move(Slot))));
  }
  P.Libraries.insert(P.Libraries.begin(),
                     KernelLibrary::fromFunctions(Lib->path(), std::move(Slots),
                                                  {}, nullptr));
}

/// The executable of a `vmjit compile` library with its code, or the one
/// in a model library's blob, with the library.
OpenedProgram openLibrary(std::shared_ptr<KernelLibrary> Lib,
                          const std::string &Name, const LoadOptions &Opts) {
  if (std::shared_ptr<AotCode> Aot = AotCode::open(Lib, Name, Opts)) {
    auto Exe = Aot->executable();
    OpenedProgram P{std::move(Exe), {}, std::move(Aot), {}, {}};
    if (P.Aot->hasKernels()) {
      // Its kernels, compiled for this CPU, go ahead of the recorded ones.
      P.Libraries.push_back(Lib);
      P.KernelNotes.push_back(fmt::format(
          "kernels: {} of {} from vmjit's code (compiled into {} for {} by "
          "vmjit compile from {})",
          Lib->functionNames().size(), Lib->functionNames().size(), Name,
          P.Aot->kernelCPU(), P.Aot->kernelBitcode()));
    }
    openRecordedKernels(P, Name);
    if (P.Aot->hasKernels()) {
      serveThroughSlots(P);
      P.CompiledKernelLibraries = 2; // the slots, the library
    }
    return P;
  }
  std::span<const char> Bin = Lib->libraryBin();
  if (Bin.empty())
    throwError("FormatError",
               fmt::format("{}: a shared library without {} (not written by "
                           "TVM's export_library) or {} (not written by "
                           "vmjit compile); load kernel libraries with --lib",
                           Name, tvm::kLibraryBinSymbol, kAotManifestSymbol));
  return {loadLibraryBin(Bin, Name, Opts), {std::move(Lib)}, nullptr, {}, {}};
}

} // namespace

void dropCompiledKernels(OpenedProgram &P) {
  if (P.CompiledKernelLibraries == 0)
    return;
  P.Libraries.erase(P.Libraries.begin(),
                    P.Libraries.begin() +
                        static_cast<std::ptrdiff_t>(P.CompiledKernelLibraries));
  P.KernelNotes.erase(P.KernelNotes.begin());
  P.CompiledKernelLibraries = 0;
}

namespace {

std::string streamName(const std::string &Path) {
  return Path == "-" ? "<stdin>" : Path;
}

/// Reads a stream to its end without seeking, at most `Max` bytes.
std::string readStream(const std::string &Path, int64_t Max) {
  const std::string Name = streamName(Path);
  FILE *F = Path == "-" ? stdin : std::fopen(Path.c_str(), "rb");
  if (!F)
    throwError("IOError", fmt::format("cannot open '{}': {}", Name,
                                      std::strerror(errno)));
  std::string Bytes;
  char Buf[1 << 16];
  size_t N = 0;
  while ((N = std::fread(Buf, 1, sizeof Buf, F)) > 0) {
    if (static_cast<int64_t>(Bytes.size() + N) > Max)
      break;
    Bytes.append(Buf, N);
  }
  const bool Failed = std::ferror(F) != 0, Over = N > 0;
  if (F != stdin)
    std::fclose(F);
  if (Failed)
    throwError("IOError", fmt::format("cannot read '{}'", Name));
  if (Over)
    throwError("FormatError",
               fmt::format("{}: the input is over the limit of {} bytes", Name,
                           Max));
  return Bytes;
}

/// dlopen needs a file: an anonymous one in memory holds the library.
std::shared_ptr<KernelLibrary> loadLibraryBytes(const std::string &Bytes,
                                                const std::string &Name) {
  int Fd = ::memfd_create("vmjit-model", MFD_CLOEXEC);
  if (Fd < 0)
    throwError("IOError", fmt::format("{}: cannot hold the library in "
                                      "memory: {}",
                                      Name, std::strerror(errno)));
  size_t Done = 0;
  while (Done < Bytes.size()) {
    ssize_t W = ::write(Fd, Bytes.data() + Done, Bytes.size() - Done);
    if (W <= 0) {
      ::close(Fd);
      throwError("IOError", fmt::format("{}: cannot hold the library in "
                                        "memory",
                                        Name));
    }
    Done += static_cast<size_t>(W);
  }
  struct Closer {
    int Fd;
    ~Closer() { ::close(Fd); }
  } Close{Fd};
  return KernelLibrary::load(fmt::format("/proc/self/fd/{}", Fd));
}

} // namespace

std::string inputName(const std::string &Path) { return streamName(Path); }

std::string readInput(const std::string &Path, int64_t MaxBytes) {
  if (!isStreamPath(Path))
    checkFileSize(Path, MaxBytes);
  return readStream(Path, MaxBytes);
}

OpenedProgram openProgramBytes(const std::string &Bytes,
                               const std::string &Name,
                               const LoadOptions &Opts) {
  if (Bytes.empty())
    throwEmpty(Name);
  switch (detectProgramFormat(Bytes, Name)) {
  case ProgramFormat::Vmasm:
    return {assemble(Bytes, Name, Opts.Limits), {}, nullptr, {}, {}};
  case ProgramFormat::Tvm:
    return {loadTvmExecutableFromBytes(Bytes, Name, Opts), {}, nullptr, {}, {}};
  case ProgramFormat::Library:
    return openLibrary(loadLibraryBytes(Bytes, Name), Name, Opts);
  case ProgramFormat::Binary:
    return {loadExecutableFromBytes(Bytes, Name, Opts), {}, nullptr, {}, {}};
  case ProgramFormat::Unknown:
    break;
  }
  throwUnrecognised(Name);
}

namespace {

/// The STEM.so beside program file `Path`, loaded, when TVM's
/// export_library wrote it (it holds the executable's blob besides the
/// kernels); else null: a vmjit compile library, a plain kernel library or
/// one that does not load is not taken by itself.
std::shared_ptr<KernelLibrary> kernelsBeside(const std::string &Path) {
  std::filesystem::path So(Path);
  So.replace_extension(".so");
  std::error_code EC;
  if (So == std::filesystem::path(Path) ||
      !std::filesystem::is_regular_file(So, EC) ||
      detectProgramFormat(So.string()) != ProgramFormat::Library)
    return nullptr;
  try {
    auto Lib = KernelLibrary::load(std::filesystem::absolute(So).string());
    return Lib->libraryBin().empty() ? nullptr : Lib;
  } catch (const Error &) {
    return nullptr;
  }
}

/// A file with an ELF header, as a program: the library (dlopen searches
/// the library path for a name without a slash, so the path is made
/// absolute). One that does not load (an executable such as /bin/ls, a
/// library for another machine) is not a program vmjit reads.
std::shared_ptr<KernelLibrary> loadProgramLibrary(const std::string &Path) {
  try {
    return KernelLibrary::load(std::filesystem::absolute(Path).string());
  } catch (const Error &E) {
    throwError("FormatError",
               fmt::format("{}: not a program vmjit reads: an ELF file that "
                           "does not load as a shared library ({}); vmjit "
                           "reads vmasm text, vmjit binaries, TVM "
                           "executables (.tvmexec), the libraries TVM's "
                           "export_library writes and those vmjit compile "
                           "writes",
                           Path, E.message()));
  }
}

} // namespace

OpenedProgram openProgram(const std::string &Path, const LoadOptions &Opts) {
  if (isStreamPath(Path))
    return openProgramBytes(readStream(Path, Opts.MaxFileBytes),
                            streamName(Path), Opts);
  std::error_code EC;
  if (std::filesystem::is_regular_file(Path, EC) &&
      detectProgramFormat(Path) == ProgramFormat::Library)
    return openLibrary(loadProgramLibrary(Path), Path, Opts);
  OpenedProgram P{loadProgram(Path, Opts), {}, nullptr, {}, {}};
  if (auto Lib = kernelsBeside(Path)) {
    P.KernelNotes.push_back(fmt::format(
        "kernels: {} (beside {})",
        std::filesystem::path(Path).replace_extension(".so").string(), Path));
    P.Libraries.push_back(std::move(Lib));
  }
  return P;
}

std::unique_ptr<VirtualMachine> openVM(const std::string &Path,
                                       VMOptions Opts) {
  OpenedProgram P = openProgram(Path);
  P.Libraries.insert(P.Libraries.end(), Opts.Libraries.begin(),
                     Opts.Libraries.end());
  Opts.Libraries = std::move(P.Libraries);
  std::unique_ptr<VirtualMachine> VM;
  try {
    VM = VirtualMachine::create(P.Exe, std::move(Opts));
  } catch (const Error &E) {
    // Kernels missing because their recorded library is: say which.
    if (E.kind() != "LinkError" || P.MissingKernels.empty())
      throw;
    std::string Message = E.message();
    for (const std::string &M : P.MissingKernels)
      Message += "; " + M;
    throwError("LinkError", Message);
  }
  // (Where the VM cannot run it, the code stays unused: the VM runs the
  // interpreter, as for any program.)
  if (P.Aot)
    (void)P.Aot->attach(*VM);
  return VM;
}

std::shared_ptr<Executable> loadProgram(const std::string &Path,
                                        const LoadOptions &Opts) {
  if (isStreamPath(Path))
    return openProgram(Path, Opts).Exe;
  // A directory or a missing file: the binary loader says which.
  std::error_code EC;
  if (!std::filesystem::is_regular_file(Path, EC))
    return loadExecutable(Path, Opts);
  if (std::filesystem::file_size(Path, EC) == 0 && !EC)
    throwEmpty(Path);
  switch (detectProgramFormat(Path)) {
  case ProgramFormat::Library:
    return openProgram(Path, Opts).Exe;
  case ProgramFormat::Binary:
  case ProgramFormat::Tvm:
    return loadExecutable(Path, Opts);
  case ProgramFormat::Vmasm:
    checkFileSize(Path, Opts.MaxFileBytes);
    return assembleFile(Path, Opts.Limits);
  case ProgramFormat::Unknown:
    break;
  }
  throwUnrecognised(Path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

std::string formatForPath(const std::string &Path) {
  if (isVmasmPath(Path))
    return "vmasm";
  std::string Ext = std::filesystem::path(Path).extension().string();
  std::transform(Ext.begin(), Ext.end(), Ext.begin(),
                 [](unsigned char C) { return std::tolower(C); });
  return Ext == ".tvmexec" ? "tvm" : "vmjit";
}

void writeProgram(const Executable &Exe, const std::string &Format,
                  const std::string &Input, const std::string &Path) {
  if (Format != "vmjit" && Format != "tvm" && Format != "vmasm")
    throwError("ValueError",
               fmt::format("format '{}': expected 'vmjit', 'tvm' or 'vmasm'",
                           Format));
  try {
    if (Format == "tvm") {
      saveTvmExecutable(Exe, Path);
      return;
    }
    if (Format == "vmjit") {
      saveExecutable(Exe, Path);
      return;
    }
    writeWholeFile(Path, disassemble(Exe));
  } catch (const Error &E) {
    // IOError already names the output; what the format cannot hold is a
    // property of the input.
    if (E.kind() == "IOError")
      throw;
    throwError(E.kind(), fmt::format("{}: cannot be written in {} format: {}",
                                     Input, Format, E.message()));
  }
}

} // namespace vmjit::vm
