"""Bounding a call: vm.interrupt() from another thread, timeout=,
max_steps=; the VM runs again after each."""

import builtins
import threading
import time

import pytest

import vmjit

FOREVER = 10**15  # iterations of loop_sum: never finishes on its own
SAFETY_TIMEOUT = 60.0  # a broken interrupt fails the test instead of hanging


def _interrupt_soon(vm, started, delay=0.05):
    """A thread that interrupts `vm` once `started` is set (and a moment
    later, so that the call has most likely begun; if not, the request
    stops the call when it starts: the outcome is the same)."""
    def run():
        started.wait()
        time.sleep(delay)
        vm.interrupt()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_interrupt_from_another_thread(make_vm):
    vm = make_vm("loop_sum", timeout=SAFETY_TIMEOUT)
    assert vm["main"](1000) == 499500
    for _ in range(2):
        started = threading.Event()
        thread = _interrupt_soon(vm, started)
        started.set()
        with pytest.raises(vmjit.errors.InterruptedError) as info:
            vm["main"](FOREVER)
        thread.join()
        e = info.value
        assert isinstance(e, vmjit.Error)
        assert not isinstance(e, builtins.TimeoutError)
        assert e.kind == "InterruptedError"
        assert "interrupted" in e.message
        assert e.frames[0].startswith("in function 'main', instruction")
        # The VM is usable again, and the request does not linger.
        assert vm["main"](1000) == 499500
        assert vm["main"](10) == 45


def test_interrupt_before_the_call(make_vm):
    vm = make_vm("loop_sum")
    vm.interrupt()  # no call running: stops the next one
    with pytest.raises(vmjit.errors.InterruptedError):
        vm["main"](10)
    assert vm["main"](10) == 45
    vm.interrupt()
    vm.clear_interrupt()  # withdrawn
    assert vm["main"](10) == 45


def test_interrupt_stops_only_its_vm(make_vm):
    vm = make_vm("loop_sum", timeout=SAFETY_TIMEOUT)
    other = make_vm("loop_sum")
    started = threading.Event()
    thread = _interrupt_soon(vm, started)
    started.set()
    with pytest.raises(vmjit.errors.InterruptedError):
        vm["main"](FOREVER)
    thread.join()
    assert other["main"](100) == 4950


def test_timeout(make_vm):
    vm = make_vm("loop_sum", timeout=0.2)
    assert vm.timeout == 0.2
    with pytest.raises(vmjit.errors.TimeoutError) as info:
        vm["main"](FOREVER)
    e = info.value
    assert isinstance(e, builtins.TimeoutError)
    assert isinstance(e, vmjit.Error)
    assert e.kind == "TimeoutError"
    assert "200 ms" in e.message
    assert e.frames[0].startswith("in function 'main', instruction")
    # The limit is per call: short calls still run.
    assert vm["main"](1000) == 499500
    with pytest.raises(builtins.TimeoutError):
        vm["main"](FOREVER)
    assert vm["main"](10) == 45


def test_timeout_set_later(make_vm):
    vm = make_vm("loop_sum")
    assert vm.timeout is None
    vm.timeout = 0.1
    assert vm.timeout == 0.1
    with pytest.raises(vmjit.errors.TimeoutError):
        vm["main"](FOREVER)
    vm.timeout = None
    assert vm.timeout is None
    assert vm["main"](100) == 4950


def test_max_steps(make_vm):
    vm = make_vm("loop_sum", max_steps=1000)
    assert vm.max_steps == 1000
    # 1 entry + 499 backward jumps: within the budget.
    assert vm["main"](500) == 124750
    with pytest.raises(vmjit.errors.StepLimitError) as info:
        vm["main"](FOREVER)
    e = info.value
    assert isinstance(e, vmjit.Error)
    assert not isinstance(e, builtins.TimeoutError)
    assert "1000 steps" in e.message
    assert e.frames[0].startswith("in function 'main', instruction")
    with pytest.raises(vmjit.errors.StepLimitError):
        vm["main"](5000)
    assert vm["main"](10) == 45


def test_max_steps_counts_calls(make_vm):
    vm = make_vm("fib", max_steps=100)
    assert vm["main"](5) == 5  # 1 + 15 function entries
    with pytest.raises(vmjit.errors.StepLimitError):
        vm["main"](15)  # 1 + 1973 entries
    vm.max_steps = None
    assert vm.max_steps is None
    assert vm["main"](15) == 610
    vm.max_steps = 10
    with pytest.raises(vmjit.errors.StepLimitError):
        vm["main"](6)


@pytest.mark.parametrize("options", [{"timeout": 0}, {"timeout": -1.0},
                                     {"timeout": float("inf")},
                                     {"max_steps": 0}, {"max_steps": -5}],
                         ids=str)
def test_invalid_limits(load_input, options):
    with pytest.raises(builtins.ValueError):
        vmjit.VirtualMachine(load_input("loop_sum"), "bytecode", **options)


def test_invalid_limits_set_later(make_vm):
    vm = make_vm("loop_sum", max_steps=100, timeout=5)
    with pytest.raises(builtins.ValueError):
        vm.timeout = -1
    with pytest.raises(builtins.ValueError):
        vm.max_steps = 0
    assert (vm.max_steps, vm.timeout) == (100, 5)
    assert vm["main"](10) == 45
