"""Daemon threads inside VM calls when the interpreter exits: in every mode
given, one thread runs a VM that calls a Python function (py.add3, which
sleeps, so the GIL changes hands), one a VM with an instrument, one a long
loop with no Python in it. The main thread exits at once; the process must
exit with status 0 (Python ends such threads as they next take the GIL).

    daemon_threads_at_exit.py INPUTS_DIR MODE...
"""

import pathlib
import sys
import threading
import time

import vmjit

inputs = pathlib.Path(sys.argv[1])


def add3(a, b, c):
    time.sleep(0.0005)
    return a + b + c


vmjit.register_func("py.add3", add3)
for name in ("py.scale", "py.fail", "py.call"):
    vmjit.register_func(name, lambda *args: 0)
funcs = vmjit.load(str(inputs / "python_funcs.vmasm"))
loop = vmjit.load(str(inputs / "loop_sum.vmasm"))


def forever(call):
    def run():
        while True:
            call()
    threading.Thread(target=run, daemon=True).start()


for mode in sys.argv[2:]:
    calls_python = vmjit.VirtualMachine(funcs, mode=mode)
    forever(lambda vm=calls_python: vm["add3_loop"](10**6))
    instrumented = vmjit.VirtualMachine(loop, mode=mode)
    instrumented.set_instrument(lambda *args: None)
    forever(lambda vm=instrumented: vm["main"](10**6))
    plain = vmjit.VirtualMachine(loop, mode=mode)
    forever(lambda vm=plain: vm["main"](10**9))
time.sleep(0.02)
print("exiting")
