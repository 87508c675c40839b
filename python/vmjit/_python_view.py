"""Executable.as_python(): a program written out in Python's syntax, to
read. TVM's ``Executable.as_python()`` writes its VM's instructions as the
Python calls of its builder; vmjit writes each bytecode function as a
Python function instead, over the same four instructions (docs/python.md
shows an example).
"""

from __future__ import annotations

import keyword
import math
import re
import textwrap
from typing import Dict, List, Optional, Set, Tuple

from . import _vmjit
from .values import Shape, Value

# Names the view itself uses: a program's own names never take them.
_RESERVED = {"vm", "goto", "label", "call", "function", "vmjit"}
_GENERATED = re.compile(r"(r|c|L)[0-9]+")

_HEADER = """\
# {name}
# vmjit's Executable.as_python(): the program in Python's syntax, to read;
# it does not run (exe.as_text() is the program). A bytecode function is a
# def over its registers (r0, r1, ... or the names of the vmasm text);
# constants are c0, c1, ... (or their names); a packed or native function
# is called by its name, or as call("NAME", ...) where Python cannot write
# the name; vm is the VM context; goto("L0") jumps to label("L0").
"""

def _identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _callee(name: str) -> bool:
    """Whether a call of `name` can be written as Python's ``name(...)``:
    a dotted name of identifiers (``vm.builtin.reshape``), or an
    identifier the view does not use itself."""
    parts = name.split(".")
    return all(_identifier(p) for p in parts) and (
        len(parts) > 1 or name not in _RESERVED)


class _Names:
    """Unique Python names for a program's registers, constants or labels:
    the program's own name where it is an identifier no other takes, else
    PREFIX + number (the key's, or with `counted` the count of names so
    far)."""

    def __init__(self, prefix: str, taken: Set[str],
                 counted: bool = False) -> None:
        self.prefix = prefix
        self.taken = taken
        self.counted = counted
        self.names: Dict[int, str] = {}

    def name(self, key: int, wanted: str = "") -> str:
        found = self.names.get(key)
        if found is not None:
            return found
        if (not _identifier(wanted) or wanted in self.taken
                or wanted in _RESERVED or _GENERATED.fullmatch(wanted)):
            wanted = "%s%d" % (self.prefix,
                               len(self.names) if self.counted else key)
        self.taken.add(wanted)
        self.names[key] = wanted
        return wanted


def _literal(value: Value) -> str:
    """A constant as a Python expression (a large tensor by its shape)."""
    if isinstance(value, float) and not math.isfinite(value):
        return 'float("%r")' % value
    if isinstance(value, Shape):
        return "vmjit.Shape(%s)" % list(value)
    if isinstance(value, _vmjit.Tensor):
        if value.size <= 16:
            try:
                return "vmjit.tensor(%r, dtype=%r)" % (
                    value.numpy().tolist(), value.dtype)
            except (ImportError, TypeError):  # no NumPy, or no such dtype
                pass
        return "vmjit.empty(%r, %r)  # %d values" % (
            tuple(value.shape), value.dtype, value.size)
    if isinstance(value, tuple):
        return "(%s)" % "".join(_literal(v) + ", " for v in value)
    if isinstance(value, _vmjit.Function):
        return "function(%r)" % value.name
    if isinstance(value, _vmjit.Object):
        return "None  # a %s" % value.type_name
    return repr(value)


_Instruction = Tuple[str, int, int, List[Tuple[str, int]]]


def _function(exe: _vmjit.Executable, index: int, code: List[_Instruction],
              registers: Dict[int, str], labels: Dict[int, str],
              constants: Dict[int, str], callees: List[str],
              taken: Set[str]) -> List[str]:
    info = exe.functions[index]
    regs = _Names("r", set(constants.values()) | taken)
    params = info["params"]
    for i in range(info["num_params"]):
        regs.name(i, registers.get(i, params[i] if i < len(params) else ""))

    def reg(r: int) -> str:
        return "vm" if r == -2 else regs.name(r, registers.get(r, ""))

    # Labels: jump targets, in the order of the code.
    targets = sorted({i + op[1] if op[0] == "goto" else i + op[2]
                      for i, op in enumerate(code) if op[0] in ("goto", "if")})
    names = _Names("L", set(), counted=True)
    for t in targets:
        names.name(t, labels.get(t, ""))

    def arg(kind: str, value: int) -> str:
        if kind == "reg":
            return reg(value)
        if kind == "const":
            return constants[value]
        if kind == "func":
            return callees[value] if _callee(callees[value]) else \
                "function(%r)" % callees[value]
        return str(value)

    own = callees[index]
    plain = _callee(own) and "." not in own
    lines = ["def %s(%s):" % (own if plain else "_%d" % index, ", ".join(
        reg(i) for i in range(info["num_params"])))]
    if not plain:
        lines.append("    # the function %r" % own)
    for i, (op, a, b, args) in enumerate(code):
        if i in names.names:
            lines.append('    label("%s")' % names.names[i])
        if op == "call":
            callee = callees[b]
            text = ", ".join(arg(k, v) for k, v in args)
            call = "%s(%s)" % (callee, text) if _callee(callee) else \
                "call(%r%s)" % (callee, ", " + text if text else "")
            lines.append("    " + (call if a == -1 else
                                   "%s = %s" % (reg(a), call)))
        elif op == "ret":
            lines.append("    return %s" % reg(a))
        elif op == "goto":
            lines.append('    goto("%s")' % names.names[i + a])
        elif op == "if":
            lines.append('    if not %s: goto("%s")' % (reg(a),
                                                        names.names[i + b]))
    end = len(code)
    if end in names.names:  # a jump past the end: the verifier refuses it
        lines.append('    label("%s")' % names.names[end])
    return lines


def as_python(exe: _vmjit.Executable, name: Optional[str]) -> str:
    """The program `exe` in Python's syntax (see the header it writes)."""
    constants, functions = exe.code()
    table = exe.functions
    callees = [f["name"] for f in table]
    shown = "".join(c if c.isprintable() else "?" for c in name or "")
    out = [_HEADER.format(name=shown or "(assembled)")]
    # A register or constant never takes a function's name, nor the first
    # part of a dotted one (tensor in tensor.matmul).
    taken = {c.split(".")[0] for c in callees} | set(callees)
    consts = _Names("c", taken)
    for i, (wanted, value) in enumerate(constants):
        out.append("%s = %s" % (consts.name(i, wanted), _literal(value)))
    if constants:
        out.append("")
    for kind, title in (("packed", "packed"), ("native", "native")):
        names = [f["name"] for f in table if f["kind"] == kind]
        if names:
            out.extend(textwrap.wrap(
                "%s functions: %s" % (title, ", ".join(
                    n if _callee(n) else repr(n) for n in names)),
                width=77, initial_indent="# ", subsequent_indent="#   ",
                break_long_words=False, break_on_hyphens=False))
    for i, (code, registers, labels) in enumerate(functions):
        if table[i]["kind"] != "bytecode":
            continue
        out.extend(["", ""])
        out.extend(_function(exe, i, code, registers, labels, consts.names,
                             callees, taken))
    return "\n".join(out) + "\n"
