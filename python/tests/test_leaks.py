"""Reference counts and leaks: 10^5 calls with ints and NumPy arrays leave
the arguments' reference counts as they were, and neither Python's heap
(tracemalloc) nor the process (resident memory) grows with the number of
calls."""

import gc
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

WARMUP = 10**4
CALLS = 10**5
# Growth allowed over CALLS calls: far below one leaked object per call
# (a leaked int is 28 bytes, a leaked tensor wrapper or capsule more).
PY_HEAP_BOUND = 100 * 1024
RSS_BOUND = 2 * 1024 * 1024


def _rss():
    """Resident memory of this process, in bytes (Linux)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except OSError:
        return None


def _measure(body):
    """Runs body(WARMUP), then body(CALLS) between two snapshots; returns
    (Python heap growth, resident memory growth or None)."""
    body(WARMUP)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        rss_before = _rss()
        body(CALLS)
        gc.collect()
        after = tracemalloc.take_snapshot()
        rss_after = _rss()
    finally:
        tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    rss = None if rss_before is None else rss_after - rss_before
    return growth, rss


def test_int_calls(make_vm):
    vm = make_vm("values")
    add, identity = vm["add"], vm["identity"]
    big = 10**12 + 7  # not a cached small int
    before = sys.getrefcount(big)

    def body(n):
        for i in range(n):
            add(big, i)
            identity(big)

    growth, rss = _measure(body)
    assert sys.getrefcount(big) == before
    assert growth < PY_HEAP_BOUND, growth
    if rss is not None:
        assert rss < RSS_BOUND, rss
    assert add(big, 1) == 10**12 + 8


def test_array_calls(make_vm):
    vm = make_vm("tensors")
    identity, total, add = vm["identity"], vm["total"], vm["add"]
    a = np.ones(16, dtype="float32")
    before = sys.getrefcount(a)

    def body(n):
        for _ in range(n):
            identity(a)  # a tensor over a, dropped at once
            total(a)
            add(a, a)  # a new tensor each call

    growth, rss = _measure(body)
    gc.collect()
    assert sys.getrefcount(a) == before
    assert growth < PY_HEAP_BOUND, growth
    if rss is not None:
        assert rss < RSS_BOUND, rss
    assert total(a) == 16.0


def test_returned_tensor_releases_the_array(make_vm):
    vm = make_vm("tensors")
    a = np.zeros(4, dtype="int32")
    before = sys.getrefcount(a)
    y = vm["identity"](a)
    view = y.numpy()
    assert sys.getrefcount(a) > before  # held while the tensor lives
    del y, view
    gc.collect()
    assert sys.getrefcount(a) == before


def test_stateful_and_saved_inputs_release_the_array(make_vm):
    vm = make_vm("tensors")
    a = np.zeros(4, dtype="float64")
    before = sys.getrefcount(a)
    for _ in range(1000):
        vm.set_input("total", a)
        vm.invoke_stateful("total")
        vm.save_function("total", "saved", a)
        vm["saved"]()
    assert vm.get_outputs("total") == 0.0
    # The VM holds the latest inputs only.
    vm.set_input("total", np.ones(2))
    vm.save_function("total", "saved", np.ones(2))
    gc.collect()
    assert sys.getrefcount(a) == before


def test_errors_do_not_leak(make_vm):
    vm = make_vm("values")
    call_add = vm["call_add"]
    s = "not a number"
    before = sys.getrefcount(s)

    def body(n):
        for _ in range(n // 10):
            try:
                call_add(1, s)
            except TypeError:
                pass

    growth, _ = _measure(body)
    assert sys.getrefcount(s) == before
    assert growth < PY_HEAP_BOUND, growth
    assert call_add(1, 2) == 3


def test_instrument_referring_to_its_vm_is_collected(make_vm):
    a = np.zeros(4)
    before = sys.getrefcount(a)

    def scope():
        vm = make_vm("tensors")
        vm.set_input("total", a)
        vm.set_instrument(lambda *args: vm.mode and None)
        vm.invoke_stateful("total")
        return weakref.ref(vm)

    ref = scope()
    gc.collect()
    assert ref() is None
    assert sys.getrefcount(a) == before


def test_instrument_referring_to_a_function_of_its_vm_is_collected(make_vm):
    # The cycle goes through a vmjit.Function (which holds its VM): the
    # garbage collector must see that edge.
    a = np.zeros(4)
    before = sys.getrefcount(a)

    def scope():
        vm = make_vm("tensors")
        vm.set_input("total", a)
        f = vm["total"]
        vm.set_instrument(lambda *args: f and None)
        vm.invoke_stateful("total")

    scope()
    gc.collect()
    assert sys.getrefcount(a) == before


def test_vm_is_collected(make_vm):
    a = np.zeros(4)
    before = sys.getrefcount(a)

    def scope():
        vm = make_vm("tensors")
        vm.set_input("total", a)
        f = vm["total"]
        vm.invoke_stateful("total")
        vm.save_function("total", "saved", a)
        assert f(a) == 0.0
        return weakref.ref(vm)

    ref = scope()
    gc.collect()
    assert ref() is None
    assert sys.getrefcount(a) == before
