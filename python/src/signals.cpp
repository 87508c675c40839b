//===- signals.cpp - Ctrl-C and Python's signal handlers during VM calls -===//
//
// Python runs its signal handlers on the main thread, between bytecodes; a
// VM call from Python runs with the GIL released, so they would wait for
// the call to return. The VM's signal check (vm/signal_check.h) runs them
// instead: on the main thread, at most every 20 ms, it takes the GIL and
// calls PyErr_CheckSignals, as tvm-ffi's TVMFFIEnvCheckSignals does. A
// handler that raises (KeyboardInterrupt, by default) ends the call, and
// its exception comes out of it as itself; one that calls vm.interrupt()
// interrupts it.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"
#include "vmjit/vm/signal_check.h"

#include <chrono>
#include <thread>

namespace vmjit::python {

namespace {

std::thread::id MainThread;

int checkPythonSignals() noexcept {
  if (std::this_thread::get_id() != MainThread)
    return 0; // Python runs handlers on the main thread only
  using Clock = std::chrono::steady_clock;
  static Clock::time_point Next;
  const Clock::time_point Now = Clock::now();
  if (Now < Next)
    return 0;
  Next = Now + std::chrono::milliseconds(20);
  std::optional<PyGILState_STATE> S = ensureGilUnlessClosing();
  if (!S)
    return 0;
  int Rc = 0;
  if (parkIfPythonEnds([] { return PyErr_CheckSignals(); }) != 0) {
    try {
      setRaisedError(errorFromPython("a signal handler"));
    } catch (...) {
      PyErr_Clear();
      VMJITErrorSetRaisedFromCStr("InterruptedError",
                                  "a signal handler raised an exception");
    }
    Rc = -1;
  }
  PyGILState_Release(*S);
  return Rc;
}

} // namespace

void registerSignalCheck(py::module_ &M) {
  (void)M;
  MainThread = std::this_thread::get_id(); // modules import on the main one
  vm::setSignalCheck(checkPythonSignals);
}

} // namespace vmjit::python
