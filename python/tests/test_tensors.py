"""Tensors: zero-copy in and out (checked by writing into shared memory),
every dtype, 0-d and empty shapes, strided and read-only input, bfloat16,
vmjit.Tensor's attributes, vmjit.empty and vmjit.tensor."""

import builtins
import gc

import numpy as np
import pytest

import vmjit

NUMPY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "float16", "float32", "float64"]
# What tensor.sum supports (not bool, not 16-bit floats).
SUM_DTYPES = [d for d in NUMPY_DTYPES if d not in ("bool", "float16")]
# What the elementwise kernels support.
ELEMENTWISE_DTYPES = ("int32", "int64", "float32", "float64")
# NumPy reads bool tensors through DLPack from 1.25 on.
_NUMPY_DLPACK_BOOL = tuple(map(int, np.__version__.split(".")[:2])) >= (1, 25)


def _sample(dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    values = np.arange(n) * 7 - 5
    if dtype.startswith("uint"):
        values = np.abs(values)
    return values.astype(dtype).reshape(shape)


#===--- Zero-copy in ------------------------------------------------------===#

def test_input_shares_memory(tensors_vm):
    a = np.arange(6, dtype="float32").reshape(2, 3)
    y = tensors_vm["identity"](a)
    assert isinstance(y, vmjit.Tensor)
    assert y.data_ptr == a.ctypes.data
    view = y.numpy()
    assert np.shares_memory(view, a)
    a[0, 1] = 100.0  # written in NumPy, seen through vmjit's tensor
    assert view[0, 1] == 100.0
    view[1, 2] = -1.0  # and the other way
    assert a[1, 2] == -1.0
    # The VM reads the array's current contents.
    assert tensors_vm["total"](a) == a.sum() == 0 + 100 + 2 + 3 + 4 - 1


def test_input_tensor_is_passed_as_itself(tensors_vm):
    t = vmjit.tensor(np.ones(3, "float32"))
    y = tensors_vm["identity"](t)
    assert y.data_ptr == t.data_ptr
    assert tensors_vm["total"](t) == 3.0


def test_dlpack_input_shares_memory(tensors_vm, dlpack_only):
    a = np.arange(4, dtype="float64")
    y = tensors_vm["identity"](dlpack_only(a))
    assert y.data_ptr == a.ctypes.data
    a[3] = 30.0
    assert y.numpy()[3] == 30.0
    assert tensors_vm["total"](dlpack_only(a)) == 0 + 1 + 2 + 30


def test_writable_buffer_input_shares_memory(tensors_vm):
    data = bytearray(b"\x01\x02\x03")
    y = tensors_vm["identity"](data)
    assert y.dtype == "uint8" and y.shape == (3,)
    data[0] = 200
    assert y.numpy()[0] == 200
    assert tensors_vm["total"](data) == 205


#===--- Zero-copy out -----------------------------------------------------===#

def test_output_shares_memory(tensors_vm):
    vm = tensors_vm
    y = vm["add"](np.ones(4, "float32"), np.full(4, 2, "float32"))
    assert isinstance(y, vmjit.Tensor)
    view = y.numpy()
    dl = np.from_dlpack(y)
    assert np.array_equal(view, [3, 3, 3, 3])
    assert view.ctypes.data == dl.ctypes.data == y.data_ptr
    assert np.shares_memory(view, dl)
    assert np.asarray(y).ctypes.data == y.data_ptr
    view[0] = 10.0  # seen by the next VM call that reads y
    assert dl[0] == 10.0
    assert vm["total"](y) == 19.0
    memoryview(y)[1] = 20.0  # the buffer protocol: writable, same memory
    assert view[1] == 20.0 and dl[1] == 20.0
    assert vm["total"](y) == 36.0
    assert memoryview(y).tolist() == [10.0, 20.0, 3.0, 3.0]


def test_output_outlives_the_tensor(tensors_vm):
    y = tensors_vm["mul"](np.arange(5, dtype="float64"),
                          np.full(5, 2.0))
    view = y.numpy()
    dl = np.from_dlpack(y)
    del y
    gc.collect()
    # Allocate and free other tensors meanwhile.
    for _ in range(10):
        tensors_vm["add"](np.zeros(5), np.zeros(5))
    assert view.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert dl.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_output_then_input_again(tensors_vm):
    vm = tensors_vm
    a = np.arange(6, dtype="int32").reshape(2, 3)
    b = np.array([10, 20, 30], dtype="int32")
    y = vm["add"](a, b)  # broadcast
    assert y.shape == (2, 3) and y.dtype == "int32"
    assert y.numpy().tolist() == [[10, 21, 32], [13, 24, 35]]
    z = vm["mul"](y, y)
    assert z.numpy().tolist() == [[100, 441, 1024], [169, 576, 1225]]
    assert vm["total"](z) == 3535
    assert vm["fma_total"](np.arange(6.0).reshape(2, 3), np.ones(3)) == 70.0


def test_dlpack_protocol(tensors_vm):
    y = tensors_vm["add"](np.ones(2), np.ones(2))
    assert y.__dlpack_device__() == (1, 0)
    assert "dltensor" in repr(y.__dlpack__())
    assert "dltensor_versioned" in repr(y.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" not in repr(y.__dlpack__(max_version=(0, 8)))


#===--- dtypes and shapes -------------------------------------------------===#

@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_dtype_round_trip(tensors_vm, dtype):
    a = _sample(dtype)
    y = tensors_vm["identity"](a)
    assert y.dtype == dtype
    assert y.shape == (2, 3)
    assert y.ndim == 2 and y.size == 6
    assert y.nbytes == a.nbytes
    out = y.numpy()
    assert out.dtype == np.dtype(dtype)
    assert out.shape == (2, 3)
    assert np.array_equal(out, a)
    assert np.shares_memory(out, a)
    if dtype != "bool" or _NUMPY_DLPACK_BOOL:
        dl = np.from_dlpack(y)
        assert dl.dtype == np.dtype(dtype) and np.array_equal(dl, a)


@pytest.mark.parametrize("dtype", SUM_DTYPES)
def test_dtype_computation(tensors_vm, dtype):
    a = _sample(dtype)
    s = tensors_vm["sum"](a)
    assert s.dtype == dtype and s.shape == ()
    assert s.numpy() == np.sum(a, dtype=dtype)
    assert tensors_vm["total"](a) == np.sum(a, dtype=dtype).item()
    if dtype in ELEMENTWISE_DTYPES:
        y = tensors_vm["add"](a, a)
        assert y.dtype == dtype
        assert np.array_equal(y.numpy(), a + a)
        y = tensors_vm["mul"](a, a)
        assert np.array_equal(y.numpy(), a * a)
    else:
        with pytest.raises(vmjit.errors.ValueError, match="not supported"):
            tensors_vm["add"](a, a)


def test_bfloat16_from_empty(tensors_vm):
    t = vmjit.empty((2, 3), "bfloat16")
    assert t.dtype == "bfloat16"
    assert t.shape == (2, 3)
    assert t.nbytes == 12
    y = tensors_vm["identity"](t)
    assert y.dtype == "bfloat16" and y.shape == (2, 3)
    assert y.data_ptr == t.data_ptr
    with pytest.raises(builtins.TypeError, match="bfloat16"):
        y.numpy()
    with pytest.raises(BufferError):
        memoryview(y)
    assert "dltensor" in repr(y.__dlpack__())


def test_bfloat16_from_the_vm(tensors_vm):
    y = tensors_vm["make_bf16"]()
    assert y.dtype == "bfloat16" and y.shape == (2, 3) and y.nbytes == 12
    back = tensors_vm["identity"](y)
    assert back.data_ptr == y.data_ptr and back.dtype == "bfloat16"
    assert tensors_vm["shape_of"](y) == (2, 3)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,), (1, 1, 1)],
                         ids=str)
def test_shapes(tensors_vm, shape):
    # reshape, not arithmetic, last: a 0-d array plus 1 is a NumPy scalar.
    a = np.arange(1, int(np.prod(shape)) + 1, dtype="float32").reshape(shape)
    y = tensors_vm["identity"](a)
    assert y.shape == shape
    assert y.ndim == len(shape)
    assert y.size == a.size
    assert y.numpy().shape == shape
    assert np.array_equal(y.numpy(), a)
    assert tensors_vm["shape_of"](a) == shape
    assert tensors_vm["total"](a) == a.sum()
    s = tensors_vm["sum"](a)
    assert s.shape == () and s.numpy().shape == ()


def test_zero_d_result(tensors_vm):
    s = tensors_vm["sum"](np.array([1.5, 2.5]))
    assert s.shape == () and s.ndim == 0 and s.size == 1
    assert s.numpy() == 4.0
    assert float(np.from_dlpack(s)) == 4.0


#===--- Strided and read-only input ---------------------------------------===#

@pytest.mark.parametrize("make", [
    lambda a: a[:, ::2],
    lambda a: a[::-1],
    lambda a: a.T,
    lambda a: np.asfortranarray(a),
], ids=["every_other_column", "reversed_rows", "transposed", "fortran"])
def test_strided_input(tensors_vm, make):
    base = np.arange(12, dtype="float32").reshape(3, 4)
    s = make(base)
    assert not s.flags.c_contiguous
    y = tensors_vm["identity"](s)
    assert y.shape == s.shape
    assert np.array_equal(y.numpy(), s)
    assert np.array_equal(np.from_dlpack(y), s)
    # vmjit's kernels take compact tensors: a strided array is copied into
    # one, and they accept it.
    assert not np.shares_memory(y.numpy(), s)
    assert y.numpy().flags.c_contiguous
    assert tensors_vm["shape_of"](s) == s.shape
    assert tensors_vm["total"](s) == s.sum()


def test_read_only_input_is_copied(tensors_vm):
    a = np.arange(6, dtype="float64")
    a.setflags(write=False)
    y = tensors_vm["identity"](a)
    out = y.numpy()
    assert np.array_equal(out, a)
    assert not np.shares_memory(out, a)
    out[0] = 50.0  # the copy is vmjit's: the original is untouched
    assert a[0] == 0.0
    assert tensors_vm["total"](a) == 15.0
    assert tensors_vm["fma_total"](a, a) == 2 * float((a * a).sum())
    # A read-only view of a writable array: copied too.
    b = np.broadcast_to(np.float32(2.0), (3,))
    assert tensors_vm["total"](b) == 6.0


#===--- vmjit.Tensor, vmjit.empty, vmjit.tensor ---------------------------===#

def test_tensor_attributes(tensors_vm):
    y = tensors_vm["identity"](np.zeros((2, 5), "int16"))
    assert y.shape == (2, 5)
    assert y.dtype == "int16"
    assert y.ndim == 2
    assert y.size == 10
    assert y.nbytes == 20
    assert y.device == vmjit.cpu() and isinstance(y.device, vmjit.Device)
    assert isinstance(y.data_ptr, int) and y.data_ptr != 0
    assert repr(y) == ("vmjit.Tensor([[0, 0, 0, 0, 0],\n"
                       "              [0, 0, 0, 0, 0]], dtype=int16)")
    with pytest.raises(builtins.TypeError):
        vmjit.Tensor()


def test_empty(tensors_vm):
    t = vmjit.empty([4, 2])
    assert t.dtype == "float32" and t.shape == (4, 2)
    view = t.numpy()
    view[...] = 1.0
    assert tensors_vm["total"](t) == 8.0
    t = vmjit.empty((3,), "int64")
    t.numpy()[:] = [1, 2, 3]
    assert tensors_vm["total"](t) == 6
    assert vmjit.empty((), "float64").shape == ()
    with pytest.raises(builtins.ValueError, match="floaty"):
        vmjit.empty((2,), "floaty")
    with pytest.raises(vmjit.errors.ValueError, match="negative"):
        vmjit.empty((2, -1))


def test_tensor_wraps_without_copy():
    a = np.arange(3, dtype="uint16")
    t = vmjit.tensor(a)
    assert isinstance(t, vmjit.Tensor)
    assert t.data_ptr == a.ctypes.data
    a[0] = 9
    assert t.numpy()[0] == 9
    assert vmjit.from_dlpack(a).data_ptr == a.ctypes.data
    r = np.arange(3.0)
    r.setflags(write=False)
    assert vmjit.tensor(r).data_ptr != r.ctypes.data  # read-only: copied
    with pytest.raises(builtins.TypeError, match="not a tensor"):
        vmjit.tensor({})


@pytest.mark.parametrize("array", [np.arange(3, dtype=">f4"),
                                   np.array([1, None], dtype=object)],
                         ids=["big_endian", "object"])
def test_arrays_vmjit_cannot_take(tensors_vm, array):
    with pytest.raises(builtins.TypeError, match="argument 2") as info:
        tensors_vm["add"](np.ones(3, "float32"), array)
    assert "numpy.ndarray" in str(info.value)
    assert tensors_vm["total"](np.ones(3, "float32")) == 3.0


@pytest.mark.parametrize("array, why", [
    (np.arange(3, dtype=">f4"), "its data is big-endian"),
    (np.zeros(3, np.complex64), "of dtype complex64 to vmjit: vmjit has no such dtype"),
    (np.array(["2020-01-01"] * 3, dtype="datetime64[D]"),
     r"of dtype datetime64\[D\] to vmjit: vmjit has no such dtype"),
], ids=["big_endian", "complex64", "datetime64"])
def test_arrays_vmjit_cannot_take_say_why(tensors_vm, array, why):
    with pytest.raises(builtins.TypeError, match="argument 2: .*" + why):
        tensors_vm["add"](np.ones(3, "float32"), array)


#===--- The NumPy fast path: references held and given back ---------------===#

def test_array_argument_reference_is_given_back(tensors_vm):
    import sys
    a = np.arange(3.0)
    base = sys.getrefcount(a)
    t = vmjit.tensor(a)
    assert sys.getrefcount(a) == base + 1  # the tensor holds the array
    del t
    assert sys.getrefcount(a) == base
    tensors_vm["total"](a)
    assert sys.getrefcount(a) == base
    # Kept by the VM, then dropped inside a call (without the GIL).
    tensors_vm.set_input("total", a)
    assert sys.getrefcount(a) == base + 1
    tensors_vm.set_input("total", np.zeros(3))
    assert sys.getrefcount(a) == base
    # While a tensor holds it, NumPy refuses to resize it.
    t = vmjit.tensor(a)
    with pytest.raises(builtins.ValueError):
        a.resize(10)
    del t
    a.resize(10, refcheck=False)


def test_array_outlives_its_name(tensors_vm):
    t = vmjit.tensor(np.arange(4, dtype="int32"))
    gc.collect()
    assert t.numpy().tolist() == [0, 1, 2, 3]
    assert tensors_vm["total"](t) == 6


class _Sub(np.ndarray):
    pass


def test_array_subclass_goes_the_general_way(tensors_vm):
    a = np.arange(4, dtype="float32").view(_Sub)
    y = tensors_vm["identity"](a)
    assert y.data_ptr == a.ctypes.data
    assert tensors_vm["total"](a) == 6.0
