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


class Error(RuntimeError):
    """An error raised by vmjit (the base of every class here)."""

    kind = "Error"

    def __init__(self, text, kind=None, message=None, frames=()):
        super().__init__(text)
        if kind is not None:
            self.kind = kind
        self.message = text if message is None else message
        self.frames = list(frames)


def _kind(name, *bases, doc):
    cls = type(name, (Error,) + bases, {"__doc__": doc, "kind": name})
    cls.__module__ = __name__
    return cls


# One row per kind the runtime raises: the Python exceptions it also is.
TypeError = _kind("TypeError", builtins.TypeError,
                  doc="A value of the wrong type (an argument, an If condition).")
ValueError = _kind("ValueError", builtins.ValueError,
                   doc="A value out of range or of the wrong shape.")
IndexError = _kind("IndexError", builtins.IndexError,
                   doc="An index out of range (tuple_getitem, a shape heap).")
LookupError = _kind("LookupError", builtins.LookupError,
                    doc="No function of that name.")
MemoryError = _kind("MemoryError", builtins.MemoryError,
                    doc="An allocation failed.")
RecursionError = _kind("RecursionError", builtins.RecursionError,
                       doc="Too deep a nesting of VM frames, or too many registers.")
TimeoutError = _kind("TimeoutError", builtins.TimeoutError,
                     doc="A call ran past its timeout.")
IOError = _kind("IOError", builtins.OSError,
                doc="A file could not be read or written.")
StepLimitError = _kind("StepLimitError",
                       doc="A call took more steps than max_steps.")
InterruptedError = _kind("InterruptedError",
                         doc="VirtualMachine.interrupt() stopped the call.")
FormatError = _kind("FormatError",
                    doc="A program file is malformed (names the offset and field).")
ParseError = _kind("ParseError",
                   doc="vmasm text does not parse (names the line and column).")
VerifyError = _kind("VerifyError",
                    doc="An executable breaks a rule of the bytecode.")
LinkError = _kind("LinkError",
                  doc="A packed function the program calls is nowhere to be found.")
LibraryError = _kind("LibraryError",
                     doc="A kernel library could not be loaded.")
JITError = _kind("JITError", doc="The JIT could not start.")
InternalError = _kind("InternalError", doc="A bug in vmjit: please report it.")

_KINDS = {cls.kind: cls for cls in Error.__subclasses__()}

__all__ = ["Error"] + sorted(_KINDS)


def _make(kind, message, frames, text):
    """The exception for a runtime error (called by the extension)."""
    cls = _KINDS.get(kind, Error)
    return cls(text, kind=kind, message=message, frames=frames)
