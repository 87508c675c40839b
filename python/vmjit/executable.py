"""Executables: loading, assembling, inspecting and saving programs."""

import json
import os
from typing import NamedTuple

from . import _vmjit


class FunctionInfo(NamedTuple):
    """One entry of an executable's function table."""

    name: str
    kind: str  # "bytecode", "packed" or "native"
    params: tuple  # parameter names (bytecode functions)
    num_params: int
    registers: int
    instructions: int


class Stats(dict):
    """A statistics document (a dict, the keys of the command's --json
    output) that prints as the command's text."""

    def __init__(self, doc, text):
        super().__init__(doc)
        self._text = text

    def __str__(self):
        return self._text


class Executable:
    """A verified program: what :func:`load` or :func:`assemble` returns.

    Many :class:`VirtualMachine` objects (in many threads) may share one.
    """

    def __init__(self, handle, name=None):
        self._handle = handle
        self.name = name

    @property
    def functions(self):
        """The function table, as :class:`FunctionInfo` entries."""
        return [FunctionInfo(f["name"], f["kind"], tuple(f["params"]),
                             f["num_params"], f["registers"],
                             f["instructions"])
                for f in self._handle.functions]

    @property
    def aot_producer(self):
        """For a library ``vmjit compile`` wrote: what wrote it ("vmjit
        VERSION, LLVM VERSION, TRIPLE"); its VMs in "compiled" and "tiered"
        mode run its native code, compiling nothing. Otherwise None."""
        return self._handle.aot_producer

    def as_text(self):
        """The program as vmasm text (assembling it gives it back)."""
        return self._handle.as_text()

    def stats(self):
        """Functions, constants and instruction counts: a dict with the keys
        of ``vmjit stats --json`` (less the file's), printing as a table."""
        doc, text = self._handle.stats()
        return Stats(json.loads(doc), text)

    def save(self, path, format=None):
        """Writes the program: ``format`` "vmjit" (vmjit's binary format, the
        default), "tvm" (TVM's VMExecutable format) or "vmasm" (text; the
        default for a path ending in .vmasm)."""
        path = os.fspath(path)
        if format is None:
            format = "vmasm" if path.endswith(".vmasm") else "vmjit"
        self._handle.save(path, format, self.name or "<string>")

    def __repr__(self):
        return "<vmjit.Executable %s: %d functions>" % (
            self.name or "(assembled)", len(self._handle.functions))


def load(path):
    """Loads a program file of any format vmjit reads, recognised by its
    content: vmasm text, vmjit's binary format, TVM's VMExecutable
    (``ex.mod.write_to_file``) or a TVM model library (``ex.export_library``,
    whose compiled kernels come with it)."""
    path = os.fspath(path)
    return Executable(_vmjit.load(path), path)


def assemble(text, name="<string>"):
    """Assembles vmasm text; errors name ``name`` with the line and column,
    runtime errors too (each frame ends with ``at NAME:LINE:COL``)."""
    return Executable(_vmjit.assemble(text, name))
