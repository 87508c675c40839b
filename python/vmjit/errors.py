"""vmjit's errors as Python exceptions.

Every error the runtime raises has a kind ("TypeError", "ValueError", ...);
in Python it is an instance of the class of that kind below, all of them
subclasses of :class:`Error` (itself a ``RuntimeError``, as TVM's TVMError
is). Where Python has an exception of the same meaning the class derives
from it too, so ``except ValueError`` catches a vmjit ValueError. A kind
with no class here (a kernel's own) gives a plain :class:`Error`.

``str(e)`` is the runtime's text: ``Kind: message`` and one indented
``in function F, instruction N`` line per VM frame the error passed
through. The parts are attributes: ``kind``, ``message`` (never rewritten)
and ``frames`` (innermost first).
"""

import builtins
from typing import Iterable, Optional


class Error(RuntimeError):
    """An error raised by vmjit (the base of every class here)."""

    kind = "Error"

    def __init__(self, text: str, kind: Optional[str] = None,
                 message: Optional[str] = None,
                 frames: Iterable[str] = ()) -> None:
        super().__init__(text)
        if kind is not None:
            self.kind = kind
        self.message = text if message is None else message
        self.frames = list(frames)


# One class per kind the runtime raises, with the Python exceptions it
# also is.


class TypeError(Error, builtins.TypeError):
    """A value of the wrong type (an argument, an If condition)."""

    kind = "TypeError"


class ValueError(Error, builtins.ValueError):
    """A value out of range or of the wrong shape."""

    kind = "ValueError"


class IndexError(Error, builtins.IndexError):
    """An index out of range (tuple_getitem, a shape heap)."""

    kind = "IndexError"


class LookupError(Error, builtins.LookupError):
    """No function of that name."""

    kind = "LookupError"


class MemoryError(Error, builtins.MemoryError):
    """An allocation failed."""

    kind = "MemoryError"


class RecursionError(Error, builtins.RecursionError):
    """Too deep a nesting of VM frames, or too many registers."""

    kind = "RecursionError"


class TimeoutError(Error, builtins.TimeoutError):
    """A call ran past its timeout."""

    kind = "TimeoutError"


class IOError(Error, builtins.OSError):
    """A file could not be read or written."""

    kind = "IOError"


class StepLimitError(Error):
    """A call took more steps than max_steps."""

    kind = "StepLimitError"


class InterruptedError(Error):
    """VirtualMachine.interrupt() stopped the call."""

    kind = "InterruptedError"


class FormatError(Error):
    """A program file is malformed (names the offset and field)."""

    kind = "FormatError"


class ParseError(Error):
    """vmasm text does not parse (names the line and column)."""

    kind = "ParseError"


class VerifyError(Error):
    """An executable breaks a rule of the bytecode."""

    kind = "VerifyError"


class LinkError(Error):
    """A packed function the program calls is nowhere to be found."""

    kind = "LinkError"


class BindError(Error):
    """Parameters cannot be bound as asked (VirtualMachine.bind_params):
    names the function and the parameter."""

    kind = "BindError"


class LibraryError(Error):
    """A kernel library could not be loaded."""

    kind = "LibraryError"


class JITError(Error):
    """The JIT could not start."""

    kind = "JITError"


class InternalError(Error):
    """A bug in vmjit: please report it."""

    kind = "InternalError"


_KINDS = {cls.kind: cls for cls in Error.__subclasses__()}

__all__ = ["Error"] + sorted(_KINDS)


def _make(kind: str, message: str, frames: Iterable[str],
          text: str) -> Error:
    """The exception for a runtime error (called by the extension)."""
    cls = _KINDS.get(kind, Error)
    return cls(text, kind=kind, message=message, frames=frames)
