"""Making and filling vmjit tensors from Python: vmjit.tensor,
vmjit.from_dlpack, and the methods of vmjit.Tensor written in Python
(copyfrom, copyto, and a repr that shows the values as NumPy does), which
are added to the extension's type here."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Optional

from . import _vmjit
from .values import DeviceLike
from .values import device as _device

if TYPE_CHECKING:
    import numpy.typing as npt

Tensor = _vmjit.Tensor
#: vmjit.tensor(data, dtype=None, device=None): in C, calling
#: _tensor_general for what is not an array taken as it is.
tensor = _vmjit.tensor


_numpy_module: Optional[types.ModuleType] = None


def _numpy() -> Any:
    """NumPy, imported on first use (vmjit imports without it)."""
    global _numpy_module
    if _numpy_module is None:
        import numpy
        _numpy_module = numpy
    return _numpy_module


def _is_values(data: object) -> bool:
    """Whether `data` is Python values (nested lists, a scalar, a NumPy
    scalar) rather than an array."""
    if isinstance(data, (list, tuple, int, float, bool, complex)):
        return True
    numpy = _numpy()
    return isinstance(data, numpy.generic)


def _dtype_name(dtype: object) -> str:
    """NumPy's name of a dtype given as a string, a NumPy dtype or type."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        raise TypeError("cannot convert values to bfloat16: NumPy has no "
                        "such dtype (make a float32 tensor, or fill a "
                        "vmjit.empty(shape, 'bfloat16') through DLPack)")
    try:
        name: str = _numpy().dtype(dtype).name
        return name
    except TypeError:
        raise TypeError("%r is not a dtype NumPy and vmjit share" % (dtype,)) \
            from None


def _converted(data: object, name: str) -> Tensor:
    """`data` (values, or an array NumPy reads) as a tensor of dtype `name`,
    converted as ``numpy.asarray(data, dtype=name)`` converts it: shared
    when it already is a native array of that dtype."""
    return _vmjit._from_dlpack(_numpy().asarray(data, dtype=name))


def _tensor_general(data: object, dtype: object,
                    device: Optional[DeviceLike]) -> Tensor:
    """vmjit.tensor for what its C part does not take as it is: nested
    lists, scalars, a dtype or device argument (vmjit.tensor's docstring
    says what each gives)."""
    if device is not None:
        _device(device)
    if _is_values(data):
        name = None if dtype is None else _dtype_name(dtype)
        return _vmjit._from_dlpack(_numpy().array(data, dtype=name))
    if dtype is None:
        return _vmjit._from_dlpack(data)
    name = _dtype_name(dtype)
    # A NumPy array in one step: big-endian or float128 arrays too.
    if isinstance(data, _numpy().ndarray):
        return _converted(data, name)
    result = _vmjit._from_dlpack(data)
    if result.dtype == name:
        return result
    return _converted(result.numpy(), name)


def from_dlpack(x: object, /, *, device: Optional[DeviceLike] = None,
                copy: Optional[bool] = None) -> Tensor:
    """A :class:`vmjit.Tensor` over an array's memory, as the array API's
    ``from_dlpack``: ``x`` is anything with ``__dlpack__`` or a buffer (a
    NumPy array, a torch CPU tensor, a vmjit.Tensor).

    ``copy=None`` shares the memory when vmjit may: a writable, compact
    row-major CPU array; read-only memory (a read-only buffer, a DLPack 1.x
    capsule flagged READ_ONLY) and strided layouts are copied into a
    compact tensor. ``copy=True`` always copies; ``copy=False`` never does
    and raises ``BufferError`` saying why where a copy would be needed.
    An array on another device than the CPU raises ``BufferError`` naming
    the device. ``device``: None or the CPU (``vmjit.cpu()``, ``"cpu"``).
    """
    if device is not None:
        _device(device)
    return _vmjit._from_dlpack(x, copy)


def _copyfrom(self: Tensor, source: object) -> Tensor:
    """Copies ``source`` into this tensor and returns the tensor, as TVM's
    ``NDArray.copyfrom``: a vmjit.Tensor of the same shape and dtype, or an
    array (any layout) or nested lists of the same shape, whose values are
    converted as ``numpy.asarray(source, dtype=self.dtype)`` converts them.
    Another shape (or a vmjit.Tensor of another dtype) raises ValueError."""
    if not isinstance(source, Tensor):
        name = _dtype_name(self.dtype)
        if _is_values(source) or isinstance(source, _numpy().ndarray):
            source = _converted(source, name)
        else:
            source = _vmjit._from_dlpack(source)
            if source.dtype != self.dtype:
                source = _converted(source.numpy(), name)
    _vmjit._copy_elements(self, source)
    return self


def _asnumpy(self: Tensor) -> npt.NDArray[Any]:
    """TVM's older name of :meth:`numpy`: a NumPy array over the tensor's
    memory (no copy; TVM's ``asnumpy`` copies)."""
    return self.numpy()


def _copyto(self: Tensor, target: object) -> Tensor:
    """Copies this tensor, as TVM's ``NDArray.copyto``: into ``target`` if
    it is a vmjit.Tensor (of the same shape and dtype, else ValueError;
    returns it), or onto a device (``vmjit.cpu()``, ``"cpu"``): a new
    compact tensor."""
    if isinstance(target, Tensor):
        _vmjit._copy_elements(target, self)
        return target
    if not (isinstance(target, (str, int, tuple))
            or hasattr(target, "device_type")):
        raise TypeError("copyto: expected a vmjit.Tensor or a device, not "
                        "a '%s'" % type(target).__name__)
    _device(target)  # type: ignore[arg-type]
    return _vmjit._from_dlpack(self, copy=True)


_PREFIX = "vmjit.Tensor("


def _repr(self: Tensor) -> str:
    """The values as NumPy shows them (summarized when large), with the
    dtype: ``vmjit.Tensor([1., 2.], dtype=float32)``."""
    try:
        numpy = _numpy()
        values = self.numpy()
    except (ImportError, TypeError):  # no NumPy, or a dtype it lacks
        return "<vmjit.Tensor shape=%s dtype=%s>" % (tuple(self.shape),
                                                     self.dtype)
    body: str = numpy.array2string(values, separator=", ", prefix=_PREFIX)
    shape = ", shape=%s" % (tuple(self.shape),) if values.size == 0 \
        and values.ndim != 1 else ""
    return "%s%s%s, dtype=%s)" % (_PREFIX, body, shape, self.dtype)


_vmjit._set_tensor_hook(_tensor_general)
# (The stubs declare them on the extension's type.)
Tensor.asnumpy = _asnumpy  # type: ignore[assignment]
Tensor.copyfrom = _copyfrom  # type: ignore[assignment]
Tensor.copyto = _copyto  # type: ignore[assignment]
Tensor.__repr__ = _repr  # type: ignore[assignment]
