//===- executable_object.cpp - Loading and inspecting executables ---------===//
//
// _vmjit.Executable: a verified executable with the libraries it came with
// (a TVM model library's own kernels). vmjit.load / vmjit.assemble make
// one; vmjit/executable.py is the Python face.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/report/stats_json.h"
#include "vmjit/text/assembler.h"
#include "vmjit/text/disassembler.h"
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

/// A register as code() gives it: its number, -1 for void (a result
/// dropped), -2 for the VM context.
int64_t registerOf(vm::RegName R) {
  if (R == vm::kVoidRegister)
    return -1;
  return R == vm::kVMRegister ? -2 : R;
}

const char *argKindName(vm::Arg A) {
  switch (A.kind()) {
  case vm::ArgKind::Register:
    return "reg";
  case vm::ArgKind::Immediate:
    return "imm";
  case vm::ArgKind::ConstIdx:
    return "const";
  case vm::ArgKind::FuncIdx:
    return "func";
  }
  return "?";
}

/// One instruction as (op, a, b, args): ("call", dst, callee, [(kind,
/// value)...]), ("ret", reg, 0, []), ("goto", offset, 0, []), ("if", cond,
/// false offset, []).
py::tuple instructionOf(vm::InstrView I) {
  py::list Args;
  switch (I.opcode()) {
  case vm::Opcode::Call:
    for (int64_t K = 0; K < I.callNumArgs(); ++K) {
      vm::Arg A = I.callArg(K);
      int64_t V =
          A.kind() == vm::ArgKind::Register ? registerOf(A.value()) : A.value();
      Args.append(py::make_tuple(argKindName(A), V));
    }
    return py::make_tuple("call", registerOf(I.callDst()), I.callFunc(), Args);
  case vm::Opcode::Ret:
    return py::make_tuple("ret", registerOf(I.retReg()), 0, Args);
  case vm::Opcode::Goto:
    return py::make_tuple("goto", I.gotoOffset(), 0, Args);
  case vm::Opcode::If:
    return py::make_tuple("if", registerOf(I.ifCond()), I.ifFalseOffset(),
                          Args);
  }
  return py::make_tuple("?", 0, 0, Args);
}

/// The program's parts for Executable.as_python(): the constants as
/// (name or "", value) and, per function, its instructions and the
/// register and label names its vmasm text gave.
py::tuple codeOf(const vm::Executable &Exe) {
  py::list Constants;
  for (size_t C = 0; C < Exe.constants().size(); ++C) {
    const std::string *Name = Exe.constantName(C);
    PyObject *Value = toPython(Exe.constants()[C], nullptr);
    if (!Value)
      throw py::error_already_set();
    Constants.append(py::make_tuple(Name ? *Name : std::string(),
                                    py::reinterpret_steal<py::object>(Value)));
  }
  py::list Functions;
  for (size_t F = 0; F < Exe.functions().size(); ++F) {
    const vm::FunctionInfo &Info = Exe.function(static_cast<int64_t>(F));
    py::list Code;
    if (Info.Kind == vm::FunctionKind::Bytecode)
      for (int64_t I = Info.StartInstr; I < Info.EndInstr; ++I)
        Code.append(instructionOf(Exe.instr(I)));
    py::dict Registers, Labels;
    if (const vm::DebugNames *N = Exe.debugNames(static_cast<int64_t>(F))) {
      for (const auto &[Reg, Name] : N->Registers)
        Registers[py::int_(Reg)] = Name;
      for (const auto &[Instr, Name] : N->Labels)
        Labels[py::int_(Instr)] = Name;
    }
    Functions.append(py::make_tuple(Code, Registers, Labels));
  }
  return py::make_tuple(Constants, Functions);
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
      .def("code", [](const vm::OpenedProgram &P) { return codeOf(*P.Exe); })
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
            // "": the format the path's name says (vm::formatForPath).
            vm::writeProgram(*P.Exe,
                             Format.empty() ? vm::formatForPath(Path) : Format,
                             Name, Path);
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
