//===- program.cpp - Loading a program from a file -------------------------===//

#include "vmjit/vm/program.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/tvm_format.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

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

std::string_view programFormatName(ProgramFormat F) noexcept {
  switch (F) {
  case ProgramFormat::Vmasm:
    return "vmasm";
  case ProgramFormat::Binary:
    return "binary";
  case ProgramFormat::Tvm:
    return "tvm";
  }
  return "?";
}

bool isVmasmPath(const std::string &Path) {
  static constexpr std::string_view Ext = ".vmasm";
  return Path.size() > Ext.size() &&
         std::string_view(Path).substr(Path.size() - Ext.size()) == Ext;
}

ProgramFormat detectProgramFormat(std::span<const char> Head,
                                  const std::string &Path) {
  if (hasBinaryMagic(Head))
    return ProgramFormat::Binary;
  if (hasTvmMagic(Head))
    return ProgramFormat::Tvm;
  if (looksLikeVmasm(std::string_view(Head.data(), Head.size())) ||
      isVmasmPath(Path))
    return ProgramFormat::Vmasm;
  return ProgramFormat::Binary;
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

std::shared_ptr<Executable> loadProgram(const std::string &Path,
                                        const LoadOptions &Opts) {
  // A directory or a missing file: the binary loader says which.
  std::error_code EC;
  if (!std::filesystem::is_regular_file(Path, EC))
    return loadExecutable(Path, Opts);
  if (detectProgramFormat(Path) != ProgramFormat::Vmasm)
    return loadExecutable(Path, Opts);
  auto Size = std::filesystem::file_size(Path, EC);
  if (!EC && Size > static_cast<uint64_t>(Opts.MaxFileBytes))
    throwError("FormatError",
               fmt::format("{}: the file is {} bytes, over the limit of {}",
                           Path, Size, Opts.MaxFileBytes));
  return assembleFile(Path, Opts.Limits);
}

} // namespace vmjit::vm
