"""vmjit: run register-bytecode model drivers (Apache TVM's Relax VM
programs) with an interpreter and a tier-up JIT.

    import numpy as np, vmjit
    exe = vmjit.load("model.so")          # or .vmasm, vmjit binary, TVM exec
    vm = vmjit.VirtualMachine(exe)        # mode="tiered" by default
    y = vm["main"](np.ones((4, 4), "float32"))
    print(np.from_dlpack(y), vm.stats())

See docs/python.md.
"""

from . import _vmjit
from . import errors
from .errors import Error
from .executable import Executable, FunctionInfo, Stats, assemble, load
from .values import Device, Shape, cpu
from .virtual_machine import (BenchmarkResult, InstrumentReturnKind,
                              VirtualMachine)

Tensor = _vmjit.Tensor
Function = _vmjit.Function
Object = _vmjit.Object
empty = _vmjit.empty
tensor = _vmjit.tensor
from_dlpack = _vmjit.tensor
jit_available = _vmjit.jit_available
baseline_available = _vmjit.baseline_available

_vmjit._set_hooks(Shape, Device, errors._make)

__all__ = [
    "BenchmarkResult", "Device", "Error", "Executable", "Function",
    "FunctionInfo", "InstrumentReturnKind", "Object", "Shape", "Stats",
    "Tensor", "VirtualMachine", "assemble", "baseline_available", "cpu",
    "empty", "errors", "from_dlpack", "jit_available", "load", "tensor",
]
