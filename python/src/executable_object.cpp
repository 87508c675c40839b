//===- executable_object.cpp - Loading and inspecting executables ---------===//
//
// _vmjit.Executable: a verified executable with the libraries it came with
// (a TVM model library's own kernels). vmjit.load / vmjit.assemble make
// one; vmjit/executable.py is the Python face.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/report/stats_json.h"
#include "vmjit/vm/assembler.h"
#include "vmjit/vm/disassembler.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/serialize.h"
#include "vmjit/vm/tvm_format.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace vmjit::python {

namespace {

py::dict functionInfo(const vm::FunctionInfo &F) {
  py::dict D;
  D["name"] = F.Name;
  D["kind"] = std::string(vm::functionKindName(F.Kind));
  D["num_params"] = F.NumParams;
  D["params"] = F.ParamNames;
  D["registers"] = F.RegisterFileSize;
  D["instructions"] = F.numInstrs();
  return D;
}

void save(const vm::OpenedProgram &P, const std::string &Path,
          const std::string &Format) {
  if (Format == "vmjit")
    vm::saveExecutable(*P.Exe, Path);
  else if (Format == "tvm")
    vm::saveTvmExecutable(*P.Exe, Path);
  else if (Format == "vmasm") {
    std::string Text = vm::disassemble(*P.Exe);
    std::FILE *F = std::fopen(Path.c_str(), "wb");
    if (!F || std::fwrite(Text.data(), 1, Text.size(), F) != Text.size() ||
        std::fclose(F) != 0)
      throwError("IOError", fmt::format("cannot write '{}'", Path));
  } else
    throw py::value_error(fmt::format(
        "format '{}': expected 'vmjit', 'tvm' or 'vmasm'", Format));
}

} // namespace

void registerExecutable(py::module_ &M) {
  py::class_<vm::OpenedProgram>(M, "Executable")
      .def_property_readonly("functions",
                             [](const vm::OpenedProgram &P) {
                               py::list Out;
                               for (const auto &F : P.Exe->functions())
                                 Out.append(functionInfo(F));
                               return Out;
                             })
      .def("as_text",
           [](const vm::OpenedProgram &P) { return vm::disassemble(*P.Exe); })
      .def("stats_json",
           [](const vm::OpenedProgram &P) {
             return report::executableStatsJson(*P.Exe).dump();
           })
      .def("save", &save, py::arg("path"), py::arg("format"));
  M.def(
      "load",
      [](const std::string &Path) {
        py::gil_scoped_release NoGil;
        return vm::openProgram(Path);
      },
      py::arg("path"));
  M.def(
      "assemble",
      [](const std::string &Text, const std::string &Name) {
        py::gil_scoped_release NoGil;
        return vm::OpenedProgram{vm::assemble(Text, Name), {}};
      },
      py::arg("text"), py::arg("name"));
}

} // namespace vmjit::python
