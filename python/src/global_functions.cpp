//===- global_functions.cpp - Python functions as packed functions --------===//
//
// vmjit.register_func puts a Python callable into the global registry,
// where programs find it by name as they find any packed function (TVM's
// tvm.register_func). A call from a VM takes the GIL, converts the
// arguments to Python values, calls the callable and converts its result
// back; a Python exception unwinds the VM and is re-raised as itself when
// the outer call returns (errors.cpp). Also get_global_func,
// remove_global_func and list_global_func_names over the same registry.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/registry.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <mutex>
#include <set>

namespace vmjit::python {

namespace {

/// A strong reference to a Python object that may be dropped on any thread
/// (a VM's pool entry goes wherever the VM goes), and after the interpreter
/// has finalized (the registry is destroyed at process exit): it is then
/// left alone.
class PyRef {
public:
  explicit PyRef(py::object O)
      : Obj(O.release().ptr(), [](PyObject *P) {
          if (!Py_IsInitialized())
            return;
          std::optional<PyGILState_STATE> S = ensureGilUnlessClosing();
          if (!S)
            return; // the interpreter is exiting: left to it
          parkIfPythonEnds([P] { Py_DECREF(P); }); // may run a __del__
          PyGILState_Release(*S);
        }) {}
  PyObject *get() const noexcept { return Obj.get(); }

private:
  std::shared_ptr<PyObject> Obj;
};

/// Names that register_func put into the registry (removed at exit by
/// _clear_python_funcs, before the interpreter goes).
std::mutex NamesLock;
std::set<std::string> PythonNames;

/// The packed function that calls `Callable`: arguments become Python
/// values (functions and closures among them call without a VM's lock),
/// the result a vmjit value.
Function pythonFunction(std::string Name, py::object Callable) {
  auto Call = [Name, Fn = PyRef(std::move(Callable))](PackedArgs Args,
                                                      Any *Result) {
    GilAcquire Gil;
    CallbackArguments Scope;
    try {
      py::tuple PyArgs(static_cast<size_t>(Args.size()));
      {
        auto Converting = Scope.converting();
        for (int32_t I = 0; I < Args.size(); ++I) {
          PyObject *V = toPython(Args[I], nullptr);
          if (!V)
            throw py::error_already_set();
          PyTuple_SET_ITEM(PyArgs.ptr(), I, V);
        }
      }
      // Python may end this thread in the call (at interpreter exit).
      auto R = py::reinterpret_steal<py::object>(parkIfPythonEnds(
          [&] { return PyObject_Call(Fn.get(), PyArgs.ptr(), nullptr); }));
      if (!R)
        throw py::error_already_set();
      *Result = toAny(R.ptr(), 0);
    } catch (py::error_already_set &E) {
      E.restore();
      throw errorFromPython(fmt::format("Python function '{}'", Name).c_str());
    } catch (py::builtin_exception &E) {
      // A result with no vmjit form (toAny's TypeError).
      E.set_error();
      throw errorFromPython(fmt::format("Python function '{}'", Name).c_str());
    }
  };
  return Function::fromPacked(Name, std::move(Call));
}

void registerFunc(const std::string &Name, py::object Callable,
                  bool Override) {
  if (!PyCallable_Check(Callable.ptr()))
    throw py::type_error(fmt::format(
        "register_func('{}'): expected a callable, got a '{}'", Name,
        Py_TYPE(Callable.ptr())->tp_name));
  Function F = pythonFunction(Name, std::move(Callable));
  // The standard library first: a standard name is then taken (replaced
  // only with override=True), whether or not a VM was made before.
  vm::registerVMBuiltins();
  std::lock_guard<std::mutex> G(NamesLock);
  Registry::global().add(Name, std::move(F), Override); // throws if taken
  PythonNames.insert(Name);
}

py::object getGlobalFunc(const std::string &Name, bool AllowMissing) {
  // The standard library is there from the start, as TVM's builtins are.
  vm::registerVMBuiltins();
  std::optional<Function> F = Registry::global().find(Name);
  if (!F) {
    if (AllowMissing)
      return py::none();
    throw Error("LookupError",
                fmt::format("no global function named '{}'", Name));
  }
  return py::reinterpret_steal<py::object>(
      makeValueFunction(std::move(*F), nullptr));
}

bool removeGlobalFunc(const std::string &Name) {
  std::lock_guard<std::mutex> G(NamesLock);
  PythonNames.erase(Name);
  return Registry::global().remove(Name);
}

/// At interpreter exit: the Python functions leave the registry while
/// Python can still release them.
void clearPythonFuncs() {
  std::lock_guard<std::mutex> G(NamesLock);
  for (const std::string &Name : PythonNames)
    Registry::global().remove(Name);
  PythonNames.clear();
}

} // namespace

void registerGlobalFunctions(py::module_ &M) {
  M.def("register_func", &registerFunc, py::arg("name"), py::arg("f"),
        py::arg("override") = false);
  M.def("get_global_func", &getGlobalFunc, py::arg("name"),
        py::arg("allow_missing") = false);
  M.def("remove_global_func", &removeGlobalFunc, py::arg("name"));
  M.def("list_global_func_names", [] {
    vm::registerVMBuiltins();
    return Registry::global().names();
  });
  M.def("_clear_python_funcs", &clearPythonFuncs);
  M.def("_begin_closing", [] { beginClosing(); });
}

} // namespace vmjit::python
