//===- gil.cpp - Taking the GIL on a thread Python is ending --------------===//
//
// See gil.h. A thread about to call PyGILState_Ensure is counted in
// Entering; beginClosing sets Closing, then lets the GIL go until the count
// is zero, so that no thread is still on its way into PyGILState_Ensure
// when finalization begins.
//
//===----------------------------------------------------------------------===//

#include "gil.h"

#include <atomic>
#include <thread>
#include <unistd.h>

namespace vmjit::python {

namespace {

std::atomic<bool> Closing{false};
std::atomic<int> Entering{0};
thread_local bool IsClosingThread = false;

/// Whether this thread holds the GIL, asked before finalization (after it
/// begins no thread but the finalizing one can hold it).
bool holdsGilBeforeFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  const bool Finalizing = Py_IsFinalizing();
#else
  const bool Finalizing = _Py_IsFinalizing();
#endif
  return !Finalizing && PyGILState_Check();
}

} // namespace

void parkForever() noexcept {
  while (true)
    pause();
}

void beginClosing() noexcept {
  IsClosingThread = true;
  Closing.store(true);
  GilRelease NoGil;
  while (Entering.load() != 0)
    std::this_thread::yield();
}

std::optional<PyGILState_STATE> ensureGilUnlessClosing() noexcept {
  Entering.fetch_add(1);
  if (Closing.load() && !IsClosingThread && !holdsGilBeforeFinalizing()) {
    Entering.fetch_sub(1);
    return std::nullopt;
  }
  try {
    PyGILState_STATE S = PyGILState_Ensure();
    Entering.fetch_sub(1);
    return S;
  } catch (abi::__forced_unwind &) {
    Entering.fetch_sub(1);
    parkForever();
  }
}

PyGILState_STATE ensureGil() noexcept {
  if (std::optional<PyGILState_STATE> S = ensureGilUnlessClosing())
    return *S;
  parkForever();
}

void restoreThread(PyThreadState *State) noexcept {
  parkIfPythonEnds([State] { PyEval_RestoreThread(State); });
}

} // namespace vmjit::python
