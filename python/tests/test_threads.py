"""Threads: one VM per thread sharing one Executable, calling at the same
time; several threads calling one VM (its calls take turns)."""

import threading
import time

import numpy as np
import pytest

import vmjit

N_THREADS = 4
N_CALLS = 50
FIB = [0, 1]
while len(FIB) < 25:
    FIB.append(FIB[-1] + FIB[-2])


def _run_threads(target):
    """Runs target(index, barrier) in N_THREADS threads; re-raises the
    first exception one of them raised."""
    barrier = threading.Barrier(N_THREADS, timeout=60)
    errors = []

    def run(index):
        try:
            target(index, barrier)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,))
               for i in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a thread did not finish"
    if errors:
        raise errors[0]


def test_one_vm_per_thread(load_input, mode, new_vm):
    fib = load_input("fib")
    tensors = load_input("tensors")
    results = {}

    def work(index, barrier):
        vm = new_vm(fib, mode)
        tvm = new_vm(tensors, mode)
        f, total = vm["main"], tvm["fma_total"]
        a = np.full((4, 4), float(index + 1))
        b = np.ones(4)
        barrier.wait()  # all call at once
        out = []
        for k in range(N_CALLS):
            n = (index * 7 + k) % 20
            out.append((f(n), FIB[n]))
            # (a + 1) * a summed: 16 * (i + 2) * (i + 1)
            out.append((total(a, b), 16.0 * (index + 2) * (index + 1)))
        results[index] = out

    _run_threads(work)
    assert sorted(results) == list(range(N_THREADS))
    for index, out in results.items():
        assert len(out) == 2 * N_CALLS
        for got, want in out:
            assert got == want, index


def test_threads_share_one_vm(make_vm):
    vm = make_vm("values")
    fib_vm = make_vm("fib")
    results = {}

    def work(index, barrier):
        add, pair, fib = vm["add"], vm["pair"], fib_vm["main"]
        barrier.wait()
        out = []
        for k in range(N_CALLS):
            out.append((add(index, k), index + k))
            out.append((pair(index, str(k)), (index, str(k))))
            out.append((fib(k % 18), FIB[k % 18]))
        results[index] = out

    _run_threads(work)
    assert sorted(results) == list(range(N_THREADS))
    for index, out in results.items():
        for got, want in out:
            assert got == want, index
    calls = {f["name"]: f["calls"] for f in vm.stats()["functions"]}
    assert calls["add"] == N_THREADS * N_CALLS
    assert calls["pair"] == N_THREADS * N_CALLS


def test_calls_on_one_vm_take_turns(make_vm):
    """The instrument sees every Call instruction of a call of call_add (6
    events); were two calls of one VM to overlap, the events of two
    threads would interleave."""
    vm = make_vm("values")
    events = []
    vm.set_instrument(lambda func, name, before, ret, *args: events.append(
        (threading.get_ident(), name, before)))
    call_add = vm["call_add"]

    def work(index, barrier):
        barrier.wait()
        for k in range(N_CALLS):
            assert call_add(index, k) == index + k

    _run_threads(work)
    assert len(events) == 6 * N_THREADS * N_CALLS
    pattern = [("vm.builtin.copy", True), ("vm.builtin.copy", False),
               ("add", True), ("scalar.add", True), ("scalar.add", False),
               ("add", False)]
    for start in range(0, len(events), 6):
        chunk = events[start:start + 6]
        assert len({thread for thread, _, _ in chunk}) == 1, chunk
        assert [(name, before) for _, name, before in chunk] == pattern


def test_threads_share_one_vm_with_tensors(make_vm):
    vm = make_vm("tensors")
    results = {}

    def work(index, barrier):
        add, total = vm["add"], vm["total"]
        a = np.full(8, index, dtype="int64")
        barrier.wait()
        out = []
        for k in range(N_CALLS):
            y = add(a, np.full(8, k, dtype="int64"))
            out.append((y.numpy().tolist(), [index + k] * 8))
            out.append((total(y), 8 * (index + k)))
        results[index] = out

    _run_threads(work)
    for index, out in results.items():
        for got, want in out:
            assert got == want, index


def test_calls_release_the_gil(make_vm):
    """While one thread runs a long call, another thread runs Python code
    and stops the call: with the GIL held it could not, and the call would
    run into its timeout instead."""
    vm = make_vm("loop_sum", timeout=60.0)
    calling = threading.Event()
    counter = []

    def other():
        calling.wait()
        time.sleep(0.1)  # let the call begin
        counter.extend(range(1000))  # Python code, needs the GIL
        vm.interrupt()

    thread = threading.Thread(target=other)
    thread.start()
    calling.set()
    try:
        with pytest.raises(vmjit.errors.InterruptedError):
            vm["main"](10**15)
    finally:
        thread.join()
    assert len(counter) == 1000
    assert vm["main"](10) == 45


def test_daemon_threads_inside_calls_at_exit(run_script, input_path,
                                             available_modes):
    # Python ends daemon threads that take the GIL after finalization has
    # begun with pthread_exit; one inside a VM call (in a Python function
    # the VM called, an instrument, or on its way out of the call) used to
    # abort the process ("FATAL: exception not rethrown") or crash it.
    inputs = input_path("fib").parent
    script = inputs / "daemon_threads_at_exit.py"
    for run in range(20):
        proc = run_script(script, str(inputs), *available_modes, timeout=60)
        assert (proc.returncode, proc.stdout) == (0, "exiting\n"), \
            f"run {run}: exit {proc.returncode}\n{proc.stderr[-2000:]}"


def test_ctrl_c_during_a_long_call(run_script, input_path, available_modes):
    # SIGINT 0.2 s into a call of 10**12 loop iterations, in every mode: the
    # default handler's KeyboardInterrupt comes out of the call, and a
    # handler that calls vm.interrupt() interrupts it. Before, Python ran
    # handlers only when the call returned. (The bound is loose: the note
    # gives the latencies measured, 8-20 ms.)
    inputs = input_path("fib").parent
    proc = run_script(inputs / "sigint_during_call.py", str(inputs),
                      *available_modes, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("\n")[:-1]
    assert len(lines) == 2 * len(available_modes), proc.stdout
    for line in lines:
        mode, handler, kind, ms = line.split()
        expected = ("KeyboardInterrupt" if handler == "default"
                    else "InterruptedError")
        assert kind == expected, line
        assert int(ms) < 5000, line
