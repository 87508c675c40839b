"""Values that have no Python type of their own: shapes and devices."""

from typing import NamedTuple


class Shape(tuple):
    """A shape (vmjit's ShapeTuple): a tuple of ints.

    A plain tuple passed to a VM becomes a tuple of values (an Array); a
    Shape becomes a shape, as ``R.shape([2, 3])`` does in TVM.
    """

    __slots__ = ()

    def __new__(cls, dims=()):
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self):
        return "Shape(%s)" % list(self)


class Device(NamedTuple):
    """A DLPack device: (device_type, device_id); CPU is (1, 0)."""

    device_type: int
    device_id: int = 0

    def __repr__(self):
        name = {1: "cpu"}.get(self.device_type, "device%d" % self.device_type)
        return "%s(%d)" % (name, self.device_id)


def cpu(device_id=0):
    """The CPU device, as ``tvm.cpu()``."""
    return Device(1, device_id)
