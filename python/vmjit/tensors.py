"""Making vmjit tensors from Python: vmjit.tensor, vmjit.from_dlpack."""

from . import _vmjit
from .values import device as _device


def from_dlpack(x, /, *, device=None, copy=None):
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
    return _vmjit.tensor(x, copy)
