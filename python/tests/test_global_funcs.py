"""Python functions as packed functions (vmjit.register_func and the rest
of the global registry's API): called from programs in every mode, with
tensors, exceptions, callbacks into the VM, threads, replacing a standard
function, and the interpreter's exit."""

import threading

import numpy as np
import pytest

import vmjit

CALLS = []


@vmjit.register_func("py.add3")
def _add3(a, b, c):
    CALLS.append((a, b, c))
    return a + b + c


@vmjit.register_func("py.scale")
def _scale(x, k):
    assert isinstance(x, vmjit.Tensor)
    return np.from_dlpack(x) * np.float32(k)


class Boom(Exception):
    pass


@vmjit.register_func("py.fail")
def _fail(x):
    raise Boom("py.fail got %r" % (x,))


CALL_HOOKS = []  # each called with py.call's function argument


@vmjit.register_func("py.call")
def _call(f, x):
    assert isinstance(f, vmjit.Function)
    for hook in CALL_HOOKS:
        hook(f)
    return f(x) + 1


@pytest.fixture
def vm(make_vm):
    return make_vm("python_funcs")


def test_called_from_every_mode(vm):
    del CALLS[:]
    assert vm["add3"](1, 2, 3) == 6
    assert vm["add3"](1.5, 2, True) == 4.5
    assert CALLS == [(1, 2, 3), (1.5, 2, True)]


def test_called_from_a_hot_loop(vm):
    del CALLS[:]
    n = 300
    assert vm["add3_loop"](n) == sum(range(n)) + n
    assert len(CALLS) == n
    assert vm["add3_loop"](n) == sum(range(n)) + n  # at its final tier


def test_tensors_in_and_out(vm):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    y = vm["scale_add"](x, 2.0)
    np.testing.assert_array_equal(y.numpy(), x * 3)
    assert y.shape == (2, 3) and y.dtype == "float32"


def test_exception_comes_out_as_itself(vm):
    with pytest.raises(Boom, match=r"py.fail got 7") as info:
        vm["call_fail"](7)
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "'fail'" in note and "'call_fail'" in note, note
    assert vm["add3"](1, 1, 1) == 3  # the VM goes on


def _runtime_library():
    """libvmjit_runtime (the C API) as the extension loaded it."""
    import ctypes
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps
                 if "libvmjit_runtime" in line}
    assert len(paths) == 1, paths
    lib = ctypes.CDLL(paths.pop())
    lib.VMJITFunctionGetGlobal.argtypes = [ctypes.c_char_p,
                                           ctypes.POINTER(ctypes.c_void_p)]
    lib.VMJITFunctionCall.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_int32, ctypes.c_void_p]
    lib.VMJITErrorMoveFromRaised.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.VMJITObjectDecRef.argtypes = [ctypes.c_void_p]
    return lib


def test_an_error_a_c_caller_dropped_stays_dropped(vm):
    # A C caller calls py.fail through the C API, takes its error and drops
    # it: Boom must not come out of a later, unrelated failing call.
    import ctypes
    lib = _runtime_library()
    fn = ctypes.c_void_p()
    assert lib.VMJITFunctionGetGlobal(b"py.fail", ctypes.byref(fn)) == 0
    arg = (ctypes.c_uint64 * 2)(0, 0)  # None (type index 0)
    result = (ctypes.c_uint64 * 2)(0, 0)
    assert lib.VMJITFunctionCall(fn, arg, 1, result) == -1
    err = ctypes.c_void_p()
    lib.VMJITErrorMoveFromRaised(ctypes.byref(err))
    assert err.value
    lib.VMJITObjectDecRef(err)
    lib.VMJITObjectDecRef(fn)
    with pytest.raises(vmjit.errors.TypeError, match="expected 3 arguments"):
        vm["add3"](1, 2)
    with pytest.raises(Boom):  # a callback's own error still comes out
        vm["call_fail"](7)


def test_callback_into_the_vm(vm):
    assert vm["call_back"](20) == 41


def test_a_callbacks_function_runs_only_inside_it(vm):
    # The function py.call receives runs without the VM's lock (the VM is
    # in the middle of the call): another thread calling it during the
    # callback, or anyone after, once corrupted the running call.
    kept, seen = [], []

    def call_on_another_thread(f):
        kept.append(f)

        def run():
            try:
                f(1)
                seen.append("no error")
            except RuntimeError as e:
                seen.append(str(e))
        t = threading.Thread(target=run)
        t.start()
        t.join()

    CALL_HOOKS.append(call_on_another_thread)
    try:
        assert vm["call_back"](20) == 41
    finally:
        CALL_HOOKS.clear()
    assert len(seen) == 1 and "(this call is on another thread)" in seen[0], \
        seen
    with pytest.raises(RuntimeError, match="only that function may call it"):
        kept[0](1)
    assert vm["call_back"](5) == 11  # the VM goes on


def test_result_without_a_vmjit_form(vm):
    @vmjit.register_func("py.bad_result", override=True)
    def bad(a, b, c):
        return {"a": a}

    exe = vmjit.assemble(".func main(x)\n  %r = call py.bad_result(%x, %x, %x)\n"
                         "  ret %r\n.end\n")
    bad_vm = vmjit.VirtualMachine(exe, vm.mode)
    with pytest.raises(TypeError, match="dict"):
        bad_vm["main"](1)
    vmjit.remove_global_func("py.bad_result")


def test_threads_call_at_once(load_input, mode, new_vm):
    exe = load_input("python_funcs")
    results, errors = {}, []

    def work(index):
        try:
            f = new_vm(exe, mode)["add3_loop"]
            results[index] = [f(50 + index) for _ in range(5)]
        except BaseException as e:  # noqa: BLE001 - checked below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive()
    assert not errors, errors
    for i in range(4):
        n = 50 + i
        assert results[i] == [sum(range(n)) + n] * 5


def test_registry_api():
    assert "scalar.add" in vmjit.list_global_func_names()
    assert "py.add3" in vmjit.list_global_func_names()
    assert vmjit.get_global_func("scalar.add")(2, 3) == 5
    assert vmjit.get_global_func("py.add3")(1, 2, 3) == 6
    assert vmjit.get_global_func("no.such", allow_missing=True) is None
    with pytest.raises(vmjit.errors.LookupError, match="no.such"):
        vmjit.get_global_func("no.such")

    def named(x):
        return -x

    assert vmjit.register_func(named) is named  # the function's own name
    assert vmjit.get_global_func("named")(4) == -4
    with pytest.raises(ValueError, match="already registered"):
        vmjit.register_func("named", named)
    assert vmjit.remove_global_func("named") is True
    assert vmjit.remove_global_func("named") is False
    with pytest.raises(TypeError, match="callable"):
        vmjit.register_func("py.not_callable", 3)
    with pytest.raises(ValueError, match="already registered"):
        vmjit.register_func("scalar.add", named)


def test_unregistered_before_the_vm_is_a_link_error(mode):
    exe = vmjit.assemble(".func main()\n  %r = call py.later()\n  ret %r\n.end\n")
    with pytest.raises(vmjit.errors.LinkError, match="py.later"):
        vmjit.VirtualMachine(exe, mode)
    vmjit.register_func("py.later", lambda: 5)
    try:
        assert vmjit.VirtualMachine(exe, mode)["main"]() == 5
    finally:
        vmjit.remove_global_func("py.later")


# In a fresh interpreter: scalar.add replaced before any VM is made, then
# every mode runs add_loop through the replacement (20 calls each: the JIT
# must not inline a function that is no longer the standard one), and the
# interpreter exits cleanly with the function registered and a VM alive.
REPLACE_SCRIPT = r"""
import sys, vmjit
calls = []
def add(a, b):
    calls.append(1)
    return a + b
vmjit.register_func("scalar.add", add, override=True)
exe = vmjit.load(sys.argv[1])
modes = ["bytecode"] + (["baseline"] if vmjit.baseline_available else []) + (
    ["compiled", "tiered"] if vmjit.jit_available else [])
vms = []
for mode in modes:
    vm = vmjit.VirtualMachine(exe, mode, tier_threshold=1) if mode == "tiered" \
        else vmjit.VirtualMachine(exe, mode)
    vms.append(vm)
    for _ in range(3):
        del calls[:]
        assert vm["add_loop"](2, 3) == 5
        assert len(calls) == 20, (mode, len(calls))
print("replaced in", " ".join(modes))
"""


def test_replaced_standard_function_is_called_in_every_mode(run_python,
                                                           input_path):
    r = run_python(REPLACE_SCRIPT, str(input_path("add_loop")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("replaced in bytecode"), r.stdout
