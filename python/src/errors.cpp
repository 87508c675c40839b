//===- errors.cpp - vmjit errors as Python exceptions ---------------------===//
//
// An Error becomes an instance of the class of its kind in vmjit.errors
// (vmjit.errors._make picks it), whose message is Error::format(): the kind,
// the message and the VM frames. A Python exception raised by a callback
// inside a call (an instrument) unwinds the VM as a "PythonError" and is
// re-raised as itself when the call returns, the VM frames added as a note.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace vmjit::python {

namespace {

/// The callback exception of this thread waiting for its call to return,
/// with the Error that carries it through the VM: raised again only by a
/// call that fails with that same Error object (a C caller may take the
/// Error and drop it; the exception must not surface in a later call).
struct PendingError {
  Error Carrier;
  py::error_already_set Exception;
};
thread_local std::optional<PendingError> PendingCallbackError;

} // namespace

Error errorFromPython(const char *Where) {
  py::error_already_set E;
  Error Out("PythonError", fmt::format("{} raised {}", Where, E.what()));
  PendingCallbackError.emplace(PendingError{Out, std::move(E)});
  return Out;
}

void setPythonError(const Error &E) {
  if (PendingCallbackError && PendingCallbackError->Carrier.get() != E.get())
    PendingCallbackError.reset(); // dropped by whoever took its Error
  if (PendingCallbackError) {
    py::error_already_set Raised = std::move(PendingCallbackError->Exception);
    PendingCallbackError.reset();
    std::vector<std::string> Frames = E.frames();
    if (!Frames.empty()) {
      std::string Note = "raised inside a vmjit call:";
      for (const std::string &F : Frames)
        Note += "\n  " + F;
      py::object Value = Raised.value();
      if (py::hasattr(Value, "add_note"))
        Value.attr("add_note")(Note);
    }
    Raised.restore();
    return;
  }
  if (!hooks().MakeError) {
    PyErr_SetString(PyExc_RuntimeError, E.format().c_str());
    return;
  }
  py::object Exc;
  try {
    Exc = hooks().MakeError(E.kind(), E.message(), E.frames(), E.format());
  } catch (py::error_already_set &Inner) {
    Inner.restore();
    return;
  }
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(Exc.ptr())), Exc.ptr());
}

void registerErrors(py::module_ &M) {
  // Errors thrown by binding code pybind11 wraps (not the fast call path).
  py::register_exception_translator([](std::exception_ptr P) {
    try {
      if (P)
        std::rethrow_exception(P);
    } catch (const Error &E) {
      setPythonError(E);
    }
  });
  (void)M;
}

} // namespace vmjit::python
