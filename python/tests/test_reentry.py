"""Python functions that call their own VM back, in every mode: nested
past the interpreter's first reservation of 64 frames and up to the
call-depth limit (its RecursionError, never a crash), and an instrument a
Python function sets in the middle of a call, which applies to the frames
entered after it in every tier (docs/interpreter.md)."""

import builtins

import pytest

import vmjit

_vm = None


@vmjit.register_func("py.reentry.back", override=True)
def _back(n):
    return _vm["back"](n)


_hook = None


@vmjit.register_func("py.reentry.hook", override=True)
def _run_hook(n):
    if _hook is not None:
        _hook()


@pytest.mark.parametrize("depth", [63, 64, 65, 200])
def test_a_python_callback_calling_the_vm_back(make_vm, depth):
    global _vm
    _vm = make_vm("reentry")
    try:
        for _ in range(2):  # tiered: tier 2 the second time
            assert _vm["back"](depth) == depth
    finally:
        _vm = None


def test_past_the_depth_limit_is_a_recursion_error(make_vm):
    global _vm
    _vm = make_vm("reentry")
    try:
        # Python's recursion limit or the VM's call-depth limit (4096),
        # whichever comes first: a RecursionError either way.
        with pytest.raises(builtins.RecursionError):
            _vm["back"](5000)
        assert _vm["back"](100) == 100  # the VM is usable after it
    finally:
        _vm = None


def test_an_instrument_set_mid_call_applies_to_later_frames(make_vm):
    global _hook
    vm = make_vm("reentry")
    seen = []

    def instrument(func, name, before, ret, *args):
        if before:
            seen.append(name)
            if name == "scalar.add":
                return vmjit.InstrumentReturnKind.SKIP_RUN
        return vmjit.InstrumentReturnKind.NO_OP

    _hook = lambda: vm.set_instrument(instrument)  # noqa: E731
    try:
        for _ in range(2):
            seen.clear()
            # f(5) .. f(1) were running when the instrument was set: their
            # additions happen in every mode, and none is reported.
            assert vm["f"](5) == 5
            assert "scalar.add" not in seen
            vm.set_instrument(None)
    finally:
        _hook = None
