"""Ctrl-C during a long VM call: in each mode given, a loop of 10**12
iterations is called on the main thread while a timer thread sends SIGINT
after 0.2 s. Prints, per mode, the exception that came out and how long
after the signal (milliseconds); then the same with a SIGINT handler that
calls vm.interrupt().

    sigint_during_call.py INPUTS_DIR MODE...
"""

import os
import pathlib
import signal
import sys
import threading
import time

import vmjit

loop = vmjit.load(str(pathlib.Path(sys.argv[1]) / "loop_sum.vmasm"))


def interrupted_after(vm):
    sent = []

    def send():
        time.sleep(0.2)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=send).start()
    try:
        vm["main"](10**12)
        return "returned", 0
    except BaseException as e:  # noqa: BLE001 - reported
        return type(e).__name__, (time.monotonic() - sent[0]) * 1000


for mode in sys.argv[2:]:
    vm = vmjit.VirtualMachine(loop, mode=mode)
    name, ms = interrupted_after(vm)
    print(f"{mode} default {name} {ms:.0f}")
    signal.signal(signal.SIGINT, lambda *args: vm.interrupt())
    name, ms = interrupted_after(vm)
    print(f"{mode} handler {name} {ms:.0f}")
    signal.signal(signal.SIGINT, signal.default_int_handler)
