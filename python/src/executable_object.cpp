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
      .def_property_readonly("aot_producer",
                             [](const vm::OpenedProgram &P) -> py::object {
                               if (!P.Aot)
                                 return py::none();
                               return py::str(P.Aot->producer());
                             })
      .def("as_text",
           [](const vm::OpenedProgram &P) { return vm::disassemble(*P.Exe); })
      .def("stats",
           [](const vm::OpenedProgram &P) {
             nlohmann::ordered_json J = report::executableStatsJson(*P.Exe, P.Libraries);
             return py::make_tuple(J.dump(), report::executableStatsText(J));
           })
      .def(
          "save",
          [](const vm::OpenedProgram &P, const std::string &Path,
             const std::string &Format, const std::string &Name) {
            GilRelease NoGil;
            vm::writeProgram(*P.Exe, Format, Name, Path);
          },
          py::arg("path"), py::arg("format"), py::arg("name"));
  M.def(
      "load",
      [](const std::string &Path) {
        GilRelease NoGil;
        return vm::openProgram(Path);
      },
      py::arg("path"));
  M.def(
      "assemble",
      [](const std::string &Text, const std::string &Name) {
        GilRelease NoGil;
        return vm::OpenedProgram{vm::assemble(Text, Name), {}, {}, {}, {}};
      },
      py::arg("text"), py::arg("name"));
}

} // namespace vmjit::python
