"""TVM's ``tvm.nd`` names: ``vmjit.nd.array`` and ``vmjit.nd.empty`` make
tensors as ``tvm.nd.array`` and ``tvm.nd.empty`` do (``array`` copies)."""

from __future__ import annotations

from typing import Optional, Sequence

from . import _vmjit
from .tensors import _is_values, tensor
from .values import DeviceLike
from .values import device as _device

__all__ = ["array", "empty"]


def array(obj: object, device: Optional[DeviceLike] = None) -> _vmjit.Tensor:
    """A new tensor holding a copy of ``obj``, as ``tvm.nd.array``: an
    array (NumPy, anything with ``__dlpack__`` or a buffer, a
    vmjit.Tensor) or nested lists and scalars (converted as
    ``numpy.array(obj)`` converts them). The tensor never shares memory
    with ``obj``: use :func:`vmjit.tensor` to share it. ``device``: None or
    the CPU."""
    if device is not None:
        _device(device)
    if _is_values(obj):
        return tensor(obj)  # a fresh array: nothing to share
    return _vmjit._from_dlpack(obj, True)


def empty(shape: Sequence[int], dtype: str = "float32",
          device: Optional[DeviceLike] = None) -> _vmjit.Tensor:
    """A new uninitialised tensor, as ``tvm.nd.empty(shape, dtype)``;
    ``device``: None or the CPU."""
    if device is not None:
        _device(device)
    return _vmjit.empty(shape, dtype)
