"""The names a TVM or tvm-ffi user types first: vmjit.cpu / vmjit.device,
vmjit.tensor from lists and scalars with dtype=, Tensor.numpy, copyfrom,
copyto, the repr, register_global_func, VirtualMachine(exe, device) and
vm.profile."""

import builtins

import numpy as np
import pytest

import vmjit

#===--- Devices ------------------------------------------------------------===#

def test_device_names():
    cpu = vmjit.cpu()
    assert cpu == vmjit.Device(1, 0) and repr(cpu) == "cpu(0)"
    for spelled in ("cpu", "CPU", "cpu:0", "llvm", 1, (1, 0), cpu):
        assert vmjit.device(spelled) == cpu, spelled
    assert vmjit.device("cpu", 0) == cpu
    assert vmjit.device("cpu:2") == vmjit.cpu(2)
    for other in ("cuda", "cuda:1", "metal", 2, (2, 0)):
        with pytest.raises(builtins.ValueError, match="CPU only"):
            vmjit.device(other)
    with pytest.raises(builtins.ValueError, match="unknown device 'tpu'"):
        vmjit.device("tpu")
    with pytest.raises(builtins.ValueError, match="negative"):
        vmjit.device("cpu", -1)
    assert repr(vmjit.Device(2, 1)) == "cuda(1)"


#===--- vmjit.tensor, numpy, copyfrom, copyto -----------------------------===#

@pytest.mark.parametrize("data, dtype, want", [
    ([[1, 2], [3, 4]], None, np.array([[1, 2], [3, 4]])),
    ([[1, 2], [3, 4]], "float32", np.array([[1, 2], [3, 4]], "float32")),
    ([1.5, -2], np.float16, np.array([1.5, -2], "float16")),
    ([True, False], "bool", np.array([True, False])),
    (7, None, np.array(7)),
    (2.5, "float32", np.array(2.5, "float32")),
    (np.float32(0.25), None, np.array(0.25, "float32")),
    (np.int8(-3), "int64", np.array(-3, "int64")),
    (np.uint16(9), np.dtype("int32"), np.array(9, "int32")),
], ids=["list", "list_float32", "list_float16", "bools", "int", "float",
        "np_float32", "np_int8_as_int64", "np_uint16_as_int32"])
def test_tensor_from_values(data, dtype, want):
    t = vmjit.tensor(data, dtype=dtype)
    assert isinstance(t, vmjit.Tensor)
    assert t.dtype == str(want.dtype)
    assert t.shape == want.shape
    assert np.array_equal(t.numpy(), want)


def test_tensor_from_arrays():
    a = np.arange(6, dtype="int32").reshape(2, 3)
    assert vmjit.tensor(a).data_ptr == a.ctypes.data  # shared
    assert vmjit.tensor(a, dtype="int32").data_ptr == a.ctypes.data
    f = vmjit.tensor(a, dtype="float64")  # converted: a copy
    assert f.dtype == "float64" and np.array_equal(f.numpy(), a)
    a[0, 0] = 100
    assert f.numpy()[0, 0] == 0
    view = vmjit.tensor(a).numpy()  # numpy(): the same memory
    assert np.shares_memory(view, a)
    assert vmjit.tensor(a, device=vmjit.cpu()).data_ptr == a.ctypes.data
    assert vmjit.tensor([1], device="cpu").numpy().tolist() == [1]
    with pytest.raises(builtins.ValueError, match="CPU only"):
        vmjit.tensor(a, device="cuda")
    with pytest.raises(builtins.TypeError, match="bfloat16"):
        vmjit.tensor([1.0], dtype="bfloat16")
    with pytest.raises(builtins.TypeError, match="not a dtype"):
        vmjit.tensor([1.0], dtype="floaty")
    with pytest.raises(builtins.TypeError, match="no such dtype"):
        vmjit.tensor(["text"])
    with pytest.raises(builtins.TypeError, match="not a tensor"):
        vmjit.tensor(object())


def test_tensor_converts_arrays_numpy_cannot_share():
    # With a dtype, as numpy.asarray(x, dtype) converts: big-endian and
    # float128 arrays too (before: TypeError).
    big = np.arange(3, dtype=">f4")
    assert vmjit.tensor(big, dtype="float32").numpy().tolist() == [0, 1, 2]
    wide = np.arange(3, dtype=np.longdouble)
    assert vmjit.tensor(wide, dtype="float64").numpy().tolist() == [0, 1, 2]
    t = vmjit.tensor(np.zeros(3))
    assert t.copyfrom(big).numpy().tolist() == [0, 1, 2]


def test_copyfrom(tensors_vm):
    a = np.zeros((2, 3), "float32")
    t = vmjit.tensor(a)
    assert t.copyfrom([[1, 2, 3], [4, 5, 6]]) is t
    assert a.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert tensors_vm["total"](t) == 21.0
    t.copyfrom(np.arange(6, dtype="int64").reshape(3, 2).T)  # strided, int
    assert a.tolist() == [[0, 2, 4], [1, 3, 5]]
    t.copyfrom(vmjit.tensor(np.full((2, 3), 0.5, "float32")))
    assert tensors_vm["total"](t) == 3.0
    t.copyfrom(t)  # itself: nothing to do
    assert tensors_vm["total"](t) == 3.0
    with pytest.raises(builtins.ValueError, match=r"\[3\] float32 tensor "
                       r"into a \[2, 3\] float32"):
        t.copyfrom(np.ones(3, "float32"))
    with pytest.raises(builtins.ValueError, match="int32 tensor into"):
        t.copyfrom(vmjit.tensor(np.ones((2, 3), "int32")))
    assert a.tolist() == [[0.5] * 3] * 2  # untouched by the failed copies


def test_copyto(tensors_vm):
    src = tensors_vm["add"](np.ones(4, "float32"), np.ones(4, "float32"))
    dst = vmjit.empty((4,), "float32")
    assert src.copyto(dst) is dst
    assert dst.numpy().tolist() == [2.0] * 4
    for device in (vmjit.cpu(), "cpu", vmjit.device("cpu")):
        copy = src.copyto(device)
        assert copy.data_ptr != src.data_ptr
        assert copy.numpy().tolist() == [2.0] * 4
    with pytest.raises(builtins.ValueError, match="CPU only"):
        src.copyto("cuda")
    with pytest.raises(builtins.TypeError, match="a vmjit.Tensor or a device"):
        src.copyto(np.zeros(4, "float32"))
    with pytest.raises(builtins.ValueError, match="shapes and dtypes"):
        src.copyto(vmjit.empty((4,), "int32"))


def test_repr_shows_values():
    t = vmjit.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    assert repr(t) == ("vmjit.Tensor([[0., 1., 2.],\n"
                       "              [3., 4., 5.]], dtype=float32)")
    assert str(t) == repr(t)
    assert repr(vmjit.tensor([1, 2], dtype="int16")) == \
        "vmjit.Tensor([1, 2], dtype=int16)"
    assert repr(vmjit.tensor(True)) == "vmjit.Tensor(True, dtype=bool)"
    assert repr(vmjit.empty((0, 3))) == \
        "vmjit.Tensor([], shape=(0, 3), dtype=float32)"
    big = repr(vmjit.tensor(np.arange(5000, dtype="int64")))
    assert "..." in big and big.endswith("4999], dtype=int64)")
    # A dtype NumPy lacks: the shape and dtype.
    assert repr(vmjit.empty((2,), "bfloat16")) == \
        "<vmjit.Tensor shape=(2,) dtype=bfloat16>"


#===--- register_global_func -----------------------------------------------===#

def test_register_global_func(make_vm):
    name = "test.tvm_names.twice"
    vmjit.register_global_func(name, lambda x: 2 * x)
    try:
        vm = make_vm(vmjit.assemble("""
.func main(x)
  %r = call test.tvm_names.twice(%x)
  ret %r
.end
"""))
        assert vm["main"](21) == 42
        assert name in vmjit.list_global_func_names()
        with pytest.raises(builtins.ValueError, match="already"):
            vmjit.register_global_func(name, lambda x: x)

        @vmjit.register_global_func(name, override=True)
        def thrice(x):
            return 3 * x
        assert vmjit.get_global_func(name)(5) == 15
    finally:
        vmjit.remove_global_func(name)


#===--- VirtualMachine(exe, device), vm.profile ----------------------------===#

def test_positional_device(load_input):
    exe = load_input("values")
    for device in (vmjit.cpu(), [vmjit.cpu()], vmjit.device("cpu")):
        vm = vmjit.VirtualMachine(exe, device)
        assert vm.mode == "tiered"
    assert vmjit.VirtualMachine(exe, "bytecode",
                                device=vmjit.cpu()).mode == "bytecode"
    for device in (vmjit.Device(2, 0), [vmjit.cpu(), vmjit.Device(2, 0)]):
        with pytest.raises(builtins.ValueError, match="CPU"):
            vmjit.VirtualMachine(exe, device)


def _fib_calls(n):
    """How often fib.vmasm's fib runs for fib(n)."""
    return 1 if n < 2 else 1 + _fib_calls(n - 1) + _fib_calls(n - 2)


def test_profile_counts_every_call(make_vm):
    vm = make_vm("fib")
    report = vm.profile("main", 10)
    rows = {r.name: r for r in report.rows}
    calls = _fib_calls(10)
    assert rows["fib"].calls == calls
    assert rows["scalar.lt"].calls == calls
    assert rows["scalar.sub"].calls == calls - 1
    assert rows["scalar.add"].calls == (calls - 1) // 2
    assert set(rows) == {"fib", "scalar.lt", "scalar.sub", "scalar.add"}
    assert all(r.total_ns > 0 and r.mean_ns == r.total_ns / r.calls
               for r in report.rows)
    # A leaf's time lies within the call's (a recursive function's
    # inclusive time counts nested calls again); most time first.
    assert rows["scalar.lt"].total_ns <= report.total_ns
    totals = [r.total_ns for r in report.rows]
    assert totals == sorted(totals, reverse=True)
    table = str(report)
    assert table.splitlines()[0].split()[:2] == ["callee", "calls"]
    assert "scalar.sub" in table and "the call:" in table
    assert '"name": "fib"' in report.json()
    # Profiling is off again: a second profile starts from zero, and calls
    # run as before.
    assert {r.name: r.calls for r in vm.profile("main", 3).rows}["fib"] == \
        _fib_calls(3)
    assert vm["main"](20) == 6765


def test_profile_tensor_ops(tensors_vm):
    report = tensors_vm.profile("fma_total", np.arange(6.0).reshape(2, 3),
                                np.ones(3))
    assert sorted((r.name, r.calls) for r in report.rows) == [
        ("tensor.add", 1), ("tensor.item", 1), ("tensor.mul", 1),
        ("tensor.sum", 1)]
    with pytest.raises(vmjit.errors.LookupError):
        tensors_vm.profile("no_such_function")
