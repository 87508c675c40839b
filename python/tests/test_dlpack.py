"""DLPack conformance, both ways, with capsules built and edited through
ctypes: export (copy, dl_device, max_version, stream), import (the
versioned READ_ONLY flag, other devices, newer major versions, strided
layouts, copy=) and the buffer protocol's contiguity requests."""

import builtins
import ctypes

import numpy as np
import pytest

import vmjit

#===--- DLPack's structures (dlpack.h, 1.0) --------------------------------===#

READ_ONLY = 1 << 0
IS_COPIED = 1 << 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER)]


_capi = ctypes.pythonapi
_capi.PyCapsule_New.restype = ctypes.py_object
_capi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                ctypes.c_void_p]
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_GetName.restype = ctypes.c_char_p
_capi.PyCapsule_GetName.argtypes = [ctypes.py_object]

_FLOAT = 2  # kDLFloat


class EditedProducer:
    """An array exporter whose capsules say what the test wants: flags,
    device, version, strides. It owns the structures (its capsules have no
    destructor) and counts the deleter calls of consumed ones."""

    def __init__(self, array, flags=0, device=(1, 0), major=1,
                 versioned=True, strides=None):
        assert array.dtype == np.float32
        self.array = array
        self.flags, self.device, self.major = flags, device, major
        self.versioned, self.strides = versioned, strides
        self.deleted = 0
        self.capsules = []
        self._keep = []

        def deleter(_):
            self.deleted += 1
        self._deleter = DELETER(deleter)

    def _dl_tensor(self, shape, strides):
        a = self.array
        return DLTensor(
            data=a.ctypes.data, device=DLDevice(*self.device),
            ndim=len(shape), dtype=DLDataType(_FLOAT, 32, 1),
            shape=shape, strides=strides, byte_offset=0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        dims = self.array.shape if self.strides is None else self.shape
        shape = (ctypes.c_int64 * len(dims))(*dims)
        strides = (None if self.strides is None else
                   (ctypes.c_int64 * len(dims))(*self.strides))
        tensor = self._dl_tensor(shape, strides)
        if self.versioned:
            managed = DLManagedTensorVersioned(
                version=DLPackVersion(self.major, 0), manager_ctx=None,
                deleter=self._deleter, flags=self.flags, dl_tensor=tensor)
            name = b"dltensor_versioned"
        else:
            managed = DLManagedTensor(dl_tensor=tensor, manager_ctx=None,
                                      deleter=self._deleter)
            name = b"dltensor"
        self._keep.append((shape, strides, managed))
        capsule = _capi.PyCapsule_New(ctypes.addressof(managed), name, None)
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self):
        return self.device


def _capsule_name(capsule):
    return _capi.PyCapsule_GetName(capsule).decode()


#===--- Import: READ_ONLY, devices, versions, strides ---------------------===#

def test_read_only_capsule_is_copied(tensors_vm):
    a = np.arange(6, dtype="float32")
    p = EditedProducer(a, flags=READ_ONLY)
    t = vmjit.tensor(p)
    assert t.data_ptr != a.ctypes.data  # a copy, never a writable alias
    assert np.array_equal(t.numpy(), a)
    t.numpy()[0] = 42.0
    assert a[0] == 0.0
    # Consumed (renamed) and, the copy made, given back at once.
    assert _capsule_name(p.capsules[-1]) == "used_dltensor_versioned"
    assert p.deleted == 1
    y = tensors_vm["identity"](p)
    assert y.data_ptr != a.ctypes.data
    assert tensors_vm["total"](p) == 15.0
    with pytest.raises(BufferError, match="copy=False.*read-only"):
        vmjit.from_dlpack(p, copy=False)


def test_writable_capsule_is_shared(tensors_vm):
    a = np.arange(6, dtype="float32")
    p = EditedProducer(a)
    t = vmjit.from_dlpack(p, copy=False)
    assert t.data_ptr == a.ctypes.data
    assert p.deleted == 0
    del t
    assert p.deleted == 1
    legacy = EditedProducer(a, versioned=False)
    assert tensors_vm["identity"](legacy).data_ptr == a.ctypes.data
    copied = vmjit.from_dlpack(p, copy=True)
    assert copied.data_ptr != a.ctypes.data
    assert np.array_equal(copied.numpy(), a)


@pytest.mark.parametrize("device, name", [((2, 0), "cuda:0"),
                                          ((10, 1), "rocm:1"),
                                          ((99, 0), r"DLPack device \(99, 0\)")])
def test_other_device_is_refused(tensors_vm, device, name):
    a = np.arange(4, dtype="float32")
    p = EditedProducer(a, device=device)
    with pytest.raises(BufferError, match="argument 1: .*EditedProducer.* on "
                       + name + ".*CPU"):
        tensors_vm["total"](p)
    with pytest.raises(BufferError, match=name):
        vmjit.tensor(p)
    # Refused, not consumed: the capsule still owns the tensor.
    assert all(_capsule_name(c) == "dltensor_versioned" for c in p.capsules)
    assert p.deleted == 0


def test_newer_major_version_is_refused():
    p = EditedProducer(np.ones(2, "float32"), major=2)
    with pytest.raises(BufferError, match="DLPack 2.x"):
        vmjit.tensor(p)
    assert _capsule_name(p.capsules[-1]) == "dltensor_versioned"


@pytest.mark.parametrize("versioned", [True, False])
def test_strided_capsule_is_compacted(tensors_vm, versioned):
    base = np.arange(12, dtype="float32").reshape(3, 4)
    p = EditedProducer(base, versioned=versioned, strides=(1, 4))
    p.shape = (4, 3)  # the transpose, by strides
    t = vmjit.tensor(p)
    assert t.shape == (4, 3)
    assert t.numpy().flags.c_contiguous
    assert np.array_equal(t.numpy(), base.T)
    assert t.data_ptr != base.ctypes.data
    assert p.deleted == 1
    assert tensors_vm["total"](p) == base.sum()
    assert tensors_vm["shape_of"](p) == (4, 3)
    with pytest.raises(BufferError, match="copy=False.*strided"):
        vmjit.from_dlpack(p, copy=False)


def test_strided_dlpack_argument_is_compacted(tensors_vm, dlpack_only):
    base = np.arange(12, dtype="float32").reshape(3, 4)
    s = base[:, ::2]
    y = tensors_vm["identity"](dlpack_only(s))
    assert y.numpy().flags.c_contiguous
    assert np.array_equal(y.numpy(), s)
    assert tensors_vm["total"](dlpack_only(s)) == s.sum()


def test_from_dlpack_copy_of_buffers():
    a = np.arange(4, dtype="float64")
    assert vmjit.from_dlpack(a, copy=False).data_ptr == a.ctypes.data
    assert vmjit.from_dlpack(a, copy=True).data_ptr != a.ctypes.data
    r = a.copy()
    r.setflags(write=False)
    with pytest.raises(BufferError, match="copy=False.*read-only"):
        vmjit.from_dlpack(r, copy=False)
    with pytest.raises(BufferError, match="copy=False.*strided"):
        vmjit.from_dlpack(a[::2], copy=False)
    t = vmjit.from_dlpack(a)
    assert vmjit.from_dlpack(t) is t
    assert vmjit.from_dlpack(t, copy=True).data_ptr != t.data_ptr
    assert vmjit.from_dlpack(a, device=vmjit.cpu()).data_ptr == a.ctypes.data
    with pytest.raises(ValueError, match="CPU only"):
        vmjit.from_dlpack(a, device="cuda")
    with pytest.raises(builtins.TypeError, match="copy must be"):
        vmjit.from_dlpack(a, copy="yes")


#===--- Export: copy, dl_device, max_version, stream ----------------------===#

def _managed(capsule):
    """The managed tensor a capsule holds (valid while the capsule lives)."""
    name = _capsule_name(capsule)
    kind = (DLManagedTensorVersioned if name == "dltensor_versioned"
            else DLManagedTensor)
    address = _capi.PyCapsule_GetPointer(capsule, name.encode())
    return kind.from_address(address)


@pytest.fixture
def exported():
    return vmjit.tensor(np.arange(6, dtype="float32").reshape(2, 3))


def test_export_max_version(exported):
    assert _capsule_name(exported.__dlpack__()) == "dltensor"
    assert _capsule_name(exported.__dlpack__(max_version=None)) == "dltensor"
    assert _capsule_name(exported.__dlpack__(max_version=(0, 8))) == "dltensor"
    cap = exported.__dlpack__(max_version=(1, 3))
    assert _capsule_name(cap) == "dltensor_versioned"
    m = _managed(cap)
    assert m.version.major == 1 and m.flags == 0
    assert m.dl_tensor.data == exported.data_ptr
    with pytest.raises(builtins.TypeError, match="max_version"):
        exported.__dlpack__(max_version=1)
    with pytest.raises(builtins.TypeError, match="max_version"):
        exported.__dlpack__(max_version=("1", 0))


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_export_copy(exported, max_version):
    # The capsules are kept: their structures live as long as they do.
    shared_cap = exported.__dlpack__(max_version=max_version, copy=False)
    shared = _managed(shared_cap)
    assert shared.dl_tensor.data == exported.data_ptr
    cap = exported.__dlpack__(max_version=max_version, copy=True)
    copy = _managed(cap)
    assert copy.dl_tensor.data != exported.data_ptr
    values = np.ctypeslib.as_array(
        ctypes.cast(copy.dl_tensor.data, ctypes.POINTER(ctypes.c_float)),
        shape=(2, 3))
    assert np.array_equal(values, exported.numpy())
    if max_version:
        assert copy.flags & IS_COPIED
        assert not shared.flags & IS_COPIED
    with pytest.raises(builtins.TypeError, match="copy must be"):
        exported.__dlpack__(copy=1)


def test_export_dl_device(exported):
    cap = exported.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    assert _managed(cap).dl_tensor.data == exported.data_ptr
    assert _capsule_name(exported.__dlpack__(dl_device=vmjit.cpu())) \
        == "dltensor"
    for copy in (None, True, False):
        with pytest.raises(BufferError, match="cpu:0 to cuda:0"):
            exported.__dlpack__(max_version=(1, 0), dl_device=(2, 0),
                                copy=copy)
    with pytest.raises(BufferError, match="cpu:1"):
        exported.__dlpack__(dl_device=(1, 1))
    with pytest.raises(builtins.TypeError, match="dl_device"):
        exported.__dlpack__(dl_device="cpu")


def test_export_stream(exported):
    assert _capsule_name(exported.__dlpack__(stream=None)) == "dltensor"
    with pytest.raises(BufferError, match="stream=None"):
        exported.__dlpack__(stream=1)


def test_export_round_trip_through_vmjit(exported, dlpack_only):
    # vmjit as its own consumer: versioned capsules, shared memory.
    again = vmjit.from_dlpack(dlpack_only(exported))
    assert again.data_ptr == exported.data_ptr


def test_numpy_from_dlpack_writability():
    """docs/python.md: NumPy 1.x makes what np.from_dlpack takes read-only;
    t.numpy() and np.asarray(t) are writable views of the same memory."""
    t = vmjit.tensor(np.zeros(4, "float32"))
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.numpy())
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        assert not a.flags.writeable
        with pytest.raises(builtins.ValueError, match="read-only"):
            a[0] = 1
    for view in (t.numpy(), np.asarray(t)):
        assert view.flags.writeable
        view[1] = 5
    assert t.numpy().tolist() == [0, 5, 0, 0] and a[1] == 5


#===--- The buffer protocol's requests -------------------------------------===#

class Py_buffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
                ("internal", ctypes.c_void_p)]


# CPython's flags (object.h).
PyBUF_WRITABLE = 0x0001
PyBUF_FORMAT = 0x0004
PyBUF_ND = 0x0008
PyBUF_STRIDES = 0x0010 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x0020 | PyBUF_STRIDES
PyBUF_F_CONTIGUOUS = 0x0040 | PyBUF_STRIDES
PyBUF_ANY_CONTIGUOUS = 0x0080 | PyBUF_STRIDES

_capi.PyObject_GetBuffer.argtypes = [ctypes.py_object,
                                     ctypes.POINTER(Py_buffer), ctypes.c_int]
_capi.PyBuffer_Release.argtypes = [ctypes.POINTER(Py_buffer)]


def _get_buffer(obj, flags):
    """(readonly, shape, strides) of obj's buffer for a request `flags`."""
    view = Py_buffer()
    if _capi.PyObject_GetBuffer(obj, ctypes.byref(view), flags) != 0:
        raise AssertionError("unreachable: ctypes raises the error")
    try:
        n = view.ndim
        shape = tuple(view.shape[:n]) if view.shape else None
        strides = tuple(view.strides[:n]) if view.strides else None
        return view.readonly, shape, strides
    finally:
        _capi.PyBuffer_Release(ctypes.byref(view))


def test_buffer_contiguity_requests(exported):
    assert _get_buffer(exported, PyBUF_C_CONTIGUOUS) == (0, (2, 3), (12, 4))
    assert _get_buffer(exported, PyBUF_ANY_CONTIGUOUS) == (0, (2, 3), (12, 4))
    assert _get_buffer(exported, PyBUF_WRITABLE | PyBUF_ND)[0] == 0
    # Row-major 2x3 is not column-major: refused, not handed out strided.
    with pytest.raises(BufferError, match="Fortran"):
        _get_buffer(exported, PyBUF_F_CONTIGUOUS)
    # One dimension (or size-1 dimensions) is both orders.
    vector = vmjit.tensor(np.arange(3, dtype="float32"))
    assert _get_buffer(vector, PyBUF_F_CONTIGUOUS) == (0, (3,), (4,))
    column = vmjit.tensor(np.arange(3, dtype="float32").reshape(3, 1))
    assert _get_buffer(column, PyBUF_F_CONTIGUOUS)[1] == (3, 1)
    assert memoryview(exported).c_contiguous
    assert not memoryview(exported).readonly
