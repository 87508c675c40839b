//===- gil.h - Taking and giving back the GIL at exit ----------*- C++ -*-===//
//
// Every place the extension takes the GIL goes through these, because
// daemon threads may be inside VM calls when the interpreter exits:
// - CPython before 3.14 ends a thread that asks for the GIL after
//   finalization has begun with pthread_exit: a forced unwind through every
//   frame below it, the VM's and the JIT's among them, whose noexcept C
//   entry points abort the process ("FATAL: exception not rethrown"). It is
//   caught where it starts and the thread parked for good instead, as
//   CPython 3.14 does (PyThread_hang_thread).
// - Once finalization is over, PyGILState_Ensure crashes. vmjit's atexit
//   hook (beginClosing) runs before finalization: from then on a thread
//   that does not hold the GIL never starts taking it.
// The process then exits as if the parked threads were not there.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_PYTHON_GIL_H
#define VMJIT_PYTHON_GIL_H

#include <Python.h>

#include <cxxabi.h>
#include <optional>
#include <utility>

namespace vmjit::python {

/// Waits until the process exits (in a catch of a forced unwind, which
/// must not end).
[[noreturn]] void parkForever() noexcept;

/// Runs `Body`, Python work with the GIL held on a thread that came in from
/// vmjit (a packed function, an instrument, a release): if Python ends the
/// thread meanwhile, parks it. Keep Python objects with destructors out of
/// `Body` (the unwind would release them without the GIL).
template <typename F> decltype(auto) parkIfPythonEnds(F &&Body) {
  try {
    return std::forward<F>(Body)();
  } catch (abi::__forced_unwind &) {
    parkForever();
  }
}

/// Called by the interpreter's atexit hook, with the GIL: from now on only
/// this thread, and threads that hold the GIL already, take it. Returns
/// once the threads that had begun taking it have it.
void beginClosing() noexcept;

/// PyGILState_Ensure; nullopt if the interpreter is exiting and this thread
/// may not take the GIL (its caller then leaves the Python work undone).
std::optional<PyGILState_STATE> ensureGilUnlessClosing() noexcept;
/// PyGILState_Ensure, parking the thread if the interpreter is exiting.
PyGILState_STATE ensureGil() noexcept;
/// PyEval_RestoreThread, parking the thread if Python is finalizing.
void restoreThread(PyThreadState *State) noexcept;

/// Holds the GIL for a scope, on any thread (py::gil_scoped_acquire's
/// place).
class GilAcquire {
public:
  GilAcquire() noexcept : State(ensureGil()) {}
  ~GilAcquire() { PyGILState_Release(State); }
  GilAcquire(const GilAcquire &) = delete;
  GilAcquire &operator=(const GilAcquire &) = delete;

private:
  PyGILState_STATE State;
};

/// Releases the GIL for a scope (py::gil_scoped_release's place).
class GilRelease {
public:
  GilRelease() noexcept : State(PyEval_SaveThread()) {}
  ~GilRelease() { restoreThread(State); }
  GilRelease(const GilRelease &) = delete;
  GilRelease &operator=(const GilRelease &) = delete;

private:
  PyThreadState *State;
};

} // namespace vmjit::python

#endif // VMJIT_PYTHON_GIL_H
