//===- program.cpp - Loading a program from a file -------------------------===//

#include "vmjit/vm/program.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/runtime/error.h"

#include <filesystem>
#include <fmt/format.h>

namespace vmjit::vm {

bool isVmasmPath(const std::string &Path) {
  static constexpr std::string_view Ext = ".vmasm";
  return Path.size() > Ext.size() &&
         std::string_view(Path).substr(Path.size() - Ext.size()) == Ext;
}

std::shared_ptr<Executable> loadProgram(const std::string &Path,
                                        const LoadOptions &Opts) {
  if (!isVmasmPath(Path))
    return loadExecutable(Path, Opts);
  std::error_code EC;
  auto Size = std::filesystem::file_size(Path, EC);
  if (!EC && Size > static_cast<uint64_t>(Opts.MaxFileBytes))
    throwError("FormatError",
               fmt::format("{}: the file is {} bytes, over the limit of {}",
                           Path, Size, Opts.MaxFileBytes));
  return assembleFile(Path, Opts.Limits);
}

} // namespace vmjit::vm
