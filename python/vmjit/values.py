"""Values that have no Python type of their own (shapes and devices), and
the types of the values that cross between Python and vmjit (``Value``,
what a call returns; ``DeviceLike``, what names a device)."""

from __future__ import annotations

from typing import (Iterable, NamedTuple, Protocol, SupportsIndex, Tuple,
                    Union)

from ._vmjit import Function, Object, Tensor


class Shape(Tuple[int, ...]):
    """A shape (vmjit's ShapeTuple): a tuple of ints.

    A plain tuple passed to a VM becomes a tuple of values (an Array); a
    Shape becomes a shape, as ``R.shape([2, 3])`` does in TVM.
    """

    __slots__ = ()

    def __new__(cls, dims: Iterable[SupportsIndex] = ()) -> Shape:
        return tuple.__new__(cls, [int(d) for d in dims])

    def __repr__(self) -> str:
        return "Shape(%s)" % list(self)


class Device(NamedTuple):
    """A DLPack device: (device_type, device_id); CPU is (1, 0)."""

    device_type: int
    device_id: int = 0

    def __repr__(self) -> str:
        name = _DEVICE_NAMES.get(self.device_type,
                                 "device%d" % self.device_type)
        return "%s(%d)" % (name, self.device_id)


class SupportsDevice(Protocol):
    """A device of another library (a ``tvm.runtime.Device``): anything
    with ``device_type`` and ``device_id``."""

    @property
    def device_type(self) -> int: ...

    @property
    def device_id(self) -> int: ...


#: What names a device: "cpu", "cpu:0", DLPack's device type (1), a
#: (device_type, device_id) pair, a Device or another library's device.
DeviceLike = Union[str, int, Tuple[int, int], Device, SupportsDevice]

#: A value vmjit gives back to Python: what a call returns (see the table
#: "Values" in docs/python.md). A tuple holds values of the same kinds.
Value = Union[None, bool, int, float, str, bytes, Tensor, Shape, Function,
              Device, Object, Tuple["Value", ...]]


def cpu(device_id: int = 0) -> Device:
    """The CPU device, as ``tvm.cpu()``."""
    return Device(1, device_id)


# DLPack device types by the names TVM and tvm-ffi give them; only the CPU
# ("llvm" and "c" are TVM's names of CPU targets) is vmjit's.
_DEVICE_TYPES = {"cpu": 1, "llvm": 1, "c": 1, "cuda": 2, "gpu": 2,
                 "cuda_host": 3, "opencl": 4, "cl": 4, "vulkan": 7,
                 "metal": 8, "vpi": 9, "rocm": 10, "rocm_host": 11,
                 "ext_dev": 12, "cuda_managed": 13, "oneapi": 14,
                 "webgpu": 15, "hexagon": 16, "maia": 17}
_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl",
                 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed",
                 14: "oneapi", 15: "webgpu", 16: "hexagon", 17: "maia"}


def device(dev_type: DeviceLike, index: int = 0) -> Device:
    """A device, as ``tvm.device`` / ``tvm_ffi.device``: ``device("cpu")``,
    ``device("cpu", 0)``, ``device("cpu:0")``, ``device(1)`` (DLPack's
    kDLCPU), or a Device (or a ``(device_type, device_id)`` pair) as it is.

    vmjit runs on the CPU: another device (``"cuda"``, ...) raises
    ``ValueError`` naming it, as does a name vmjit does not know.
    """
    if isinstance(dev_type, str):
        name, _, rest = dev_type.partition(":")
        found = _DEVICE_TYPES.get(name.strip().lower())
        if found is None:
            raise ValueError("vmjit.device: unknown device %r (vmjit runs "
                             "on the CPU: 'cpu')" % dev_type)
        code = found
        if rest:
            index = int(rest)
    elif isinstance(dev_type, tuple) and len(dev_type) == 2:
        code, index = int(dev_type[0]), int(dev_type[1])
    elif hasattr(dev_type, "device_type") and hasattr(dev_type, "device_id"):
        code = int(getattr(dev_type, "device_type"))
        index = int(getattr(dev_type, "device_id"))
    else:
        code = int(dev_type)  # type: ignore[arg-type]
    result = Device(code, int(index))
    if code != 1:
        raise ValueError("vmjit runs on the CPU only: %r is not available"
                         % (dev_type if isinstance(dev_type, str)
                            else result,))
    if result.device_id < 0:
        raise ValueError("vmjit.device: device index %d is negative"
                         % result.device_id)
    return result
