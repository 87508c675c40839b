//===- module.cpp - The _vmjit extension module ---------------------------===//

#include "bindings.h"

PYBIND11_MODULE(_vmjit, M) {
  using namespace vmjit::python;
  M.doc() = "vmjit's extension module; import vmjit instead.";
  registerErrors(M);
  registerValues(M);
  registerFunctionType(M);
  registerExecutable(M);
  registerMachine(M);
  registerGlobalFunctions(M);
  registerSignalCheck(M);
}
