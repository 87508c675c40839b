//===- signal_check.h - A hook the VM polls during long calls --*- C++ -*-===//
//
// A host language that handles signals itself (Python: Ctrl-C) cannot see
// them while a VM call runs. While a check is set, every call's steps are
// handed out kDeadlineCheckSteps at a time, and the VM calls the check at
// each hand-out, in every tier: about every 1024 function entries and
// backward jumps (a single long kernel call is not cut).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_SIGNAL_CHECK_H
#define VMJIT_VM_SIGNAL_CHECK_H

namespace vmjit::vm {

/// Returns 0 to go on, or -1 with an error raised (VMJITErrorSetRaised) to
/// end the call with it. Called on the thread that runs the call, often:
/// it must be cheap when there is nothing to do.
using SignalCheck = int (*)() noexcept;

/// Sets the process's check (nullptr: none). Calls that are running pick
/// it up at their next hand-out of steps; new calls at once.
void setSignalCheck(SignalCheck Check) noexcept;
/// The check set, or nullptr.
SignalCheck signalCheck() noexcept;

} // namespace vmjit::vm

#endif // VMJIT_VM_SIGNAL_CHECK_H
