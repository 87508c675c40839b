"""Executables: loading, assembling, inspecting and saving programs."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

from . import _python_view, _vmjit, errors

#: A file's path, as ``open`` takes one.
PathLike = Union[str, "os.PathLike[str]"]

#: What ``kernels=`` takes: None (the ``STEM.bc`` beside the program's
#: file, if there is one), a bitcode file's path, or False (TVM's machine
#: code only).
KernelsChoice = Union[None, bool, PathLike]


def _checked_kernels(kernels: KernelsChoice) -> Union[None, bool, str]:
    """``kernels`` as a VM takes it: None, False or the path of a file that
    exists (else vmjit.IOError, as ``vmjit run --kernels`` refuses one)."""
    if kernels is None or kernels is False:
        return kernels
    if kernels is True or not isinstance(kernels, (str, os.PathLike)):
        raise TypeError("kernels must be None, False or the path of a "
                        "bitcode file, not %r" % (kernels,))
    where = os.fspath(kernels)
    if not os.path.isfile(where):
        message = "kernels %s: no such file" % where
        raise errors.IOError("IOError: " + message, kind="IOError",
                             message=message)
    return where


class FunctionInfo(NamedTuple):
    """One entry of an executable's function table."""

    name: str
    kind: str  # "bytecode", "packed" or "native"
    params: Tuple[str, ...]  # parameter names (bytecode functions)
    num_params: int
    registers: int
    instructions: int


class Stats(Dict[str, Any]):
    """A statistics document (a dict, the keys of the command's --json
    output) that prints as the command's text."""

    def __init__(self, doc: Dict[str, Any], text: str) -> None:
        super().__init__(doc)
        self._text = text

    def __str__(self) -> str:
        return self._text


class Executable:
    """A verified program: what :func:`load` or :func:`assemble` returns.

    Many :class:`VirtualMachine` objects (in many threads) may share one.
    """

    def __init__(self, handle: _vmjit.Executable,
                 name: Optional[str] = None,
                 kernels: KernelsChoice = None) -> None:
        self._handle = handle
        self.name = name
        #: The kernels its VMs run by default (``load``'s ``kernels=``):
        #: None (the ``STEM.bc`` beside the file, if there is one), the
        #: bitcode file's path, or False (TVM's machine code only).
        self.kernels = kernels
        # The kernel tiers its VMs started (by their options), kept alive so
        # that later VMs of it share the compiled kernels.
        self._kernel_tiers: Dict[Tuple[object, ...], object] = {}

    @property
    def functions(self) -> List[FunctionInfo]:
        """The function table, as :class:`FunctionInfo` entries."""
        return [FunctionInfo(f["name"], f["kind"], tuple(f["params"]),
                             f["num_params"], f["registers"],
                             f["instructions"])
                for f in self._handle.functions]

    @property
    def aot_producer(self) -> Optional[str]:
        """For a library ``vmjit compile`` wrote: what wrote it ("vmjit
        VERSION, LLVM VERSION, TRIPLE"); its VMs in "compiled" and "tiered"
        mode run its native code, compiling nothing. Otherwise None."""
        return self._handle.aot_producer

    def as_text(self) -> str:
        """The program as vmasm text (assembling it gives it back)."""
        return self._handle.as_text()

    def as_python(self) -> str:
        """The program in Python's syntax, to read (TVM's
        ``Executable.as_python()`` writes its builder's calls; this writes
        each bytecode function as a Python function of its calls, returns
        and jumps). It does not run: :meth:`as_text` is the program."""
        return _python_view.as_python(self._handle, self.name)

    def stats(self) -> Stats:
        """Functions, constants and instruction counts: a dict with the keys
        of ``vmjit stats --json`` (less the file's), printing as a table."""
        doc, text = self._handle.stats()
        return Stats(json.loads(doc), text)

    def save(self, path: PathLike, format: Optional[str] = None) -> None:
        """Writes the program: ``format`` "vmjit" (vmjit's binary format),
        "tvm" (TVM's VMExecutable format) or "vmasm" (text); by default the
        one the path's name says, as `vmjit convert` decides: vmasm for
        .vmasm, tvm for .tvmexec, else vmjit."""
        where = os.fspath(path)
        self._handle.save(where, format or "", self.name or "<string>")

    def __repr__(self) -> str:
        return "<vmjit.Executable %s: %d functions>" % (
            self.name or "(assembled)", len(self._handle.functions))


def load(path: PathLike, kernels: KernelsChoice = None) -> Executable:
    """Loads a program file of any format vmjit reads, recognised by its
    content: vmasm text, vmjit's binary format, TVM's VMExecutable
    (``ex.mod.write_to_file``) or a TVM model library (``ex.export_library``,
    whose compiled kernels come with it).

    ``kernels``: the kernel tier of its VMs (docs/tvm.md, "The kernel
    tier"), recorded on the Executable (a VM's own ``kernels=`` overrides
    it): None, the LLVM bitcode TVM wrote beside the file (``model.bc``
    beside ``model.so`` or ``model.tvmexec``), if there is one, compiled
    for this CPU; a path, that bitcode file (one that does not exist:
    vmjit.IOError); False, TVM's machine code only."""
    where = os.fspath(path)
    checked = _checked_kernels(kernels)
    return Executable(_vmjit.load(where), where, checked)


def assemble(text: str, name: str = "<string>") -> Executable:
    """Assembles vmasm text; errors name ``name`` with the line and column,
    runtime errors too (each frame ends with ``at NAME:LINE:COL``)."""
    return Executable(_vmjit.assemble(text, name))
