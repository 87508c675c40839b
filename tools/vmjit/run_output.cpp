//===- run_output.cpp - Where `vmjit run --output` saves a result ----------===//

#include "run_output.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"

#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

namespace vmjit::tool {
namespace {

struct Leaf {
  std::string Index; // "" for the result itself, else ".0", ".1.0", ...
  Tensor T;
};

void collect(const AnyView &V, const std::string &Index,
             const std::string &Path, std::vector<Leaf> &Out) {
  if (auto T = V.as<Tensor>()) {
    Out.push_back({Index, *T});
    return;
  }
  if (auto A = V.as<Array>()) {
    Array Tuple = *A;
    for (size_t I = 0; I < Tuple.size(); ++I)
      collect(Tuple[I], fmt::format("{}.{}", Index, I), Path, Out);
    return;
  }
  throwError("UsageError",
             Index.empty()
                 ? fmt::format("--output {}: the result is not a tensor but "
                               "a value of type {}",
                               Path, V.typeName())
                 : fmt::format("--output {}: element {} of the result is not "
                               "a tensor but a value of type {}",
                               Path, Index.substr(1), V.typeName()));
}

/// out.npy + ".1" → out.1.npy; a path without .npy gets ".1.npy".
std::string leafPath(const std::string &Path, const std::string &Index) {
  static constexpr std::string_view Ext = ".npy";
  if (Path.size() > Ext.size() && Path.ends_with(Ext))
    return Path.substr(0, Path.size() - Ext.size()) + Index + std::string(Ext);
  return Path + Index + std::string(Ext);
}

} // namespace

void checkOutputPath(const std::string &Path) {
  std::filesystem::path Dir = std::filesystem::path(Path).parent_path();
  if (Dir.empty())
    Dir = ".";
  std::error_code EC;
  if (!std::filesystem::is_directory(Dir, EC))
    throwError("UsageError",
               fmt::format("--output {}: the directory '{}' does not exist",
                           Path, Dir.string()));
  if (::access(Dir.c_str(), W_OK) != 0)
    throwError("UsageError",
               fmt::format("--output {}: the directory '{}' cannot be "
                           "written",
                           Path, Dir.string()));
}

std::vector<std::string> saveOutput(const AnyView &Result,
                                    const std::string &Path) {
  std::vector<Leaf> Leaves;
  collect(Result, "", Path, Leaves);
  std::vector<std::string> Written;
  for (const Leaf &L : Leaves) {
    Written.push_back(L.Index.empty() ? Path : leafPath(Path, L.Index));
    vm::writeNpy(L.T, Written.back());
  }
  return Written;
}

} // namespace vmjit::tool
