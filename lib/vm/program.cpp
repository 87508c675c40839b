//===- program.cpp - Loading a program from a file -------------------------===//

#include "vmjit/vm/program.h"
#include "vmjit/vm/assembler.h"

namespace vmjit::vm {

bool isVmasmPath(const std::string &Path) {
  static constexpr std::string_view Ext = ".vmasm";
  return Path.size() > Ext.size() &&
         std::string_view(Path).substr(Path.size() - Ext.size()) == Ext;
}

std::shared_ptr<Executable> loadProgram(const std::string &Path,
                                        const LoadOptions &Opts) {
  if (isVmasmPath(Path))
    return assembleFile(Path);
  return loadExecutable(Path, Opts);
}

} // namespace vmjit::vm
