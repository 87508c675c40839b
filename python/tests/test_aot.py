"""Libraries `vmjit compile` wrote: vmjit.load takes them; VMs in compiled
and tiered mode run their native code from the first call (nothing is
compiled), bytecode and baseline mode the executable inside, all with the
same results; a replaced inlined builtin keeps the VM on the interpreter
(with a RuntimeWarning)."""

import numpy as np
import pytest

import vmjit


def test_load(aot_library):
    exe = vmjit.load(aot_library)
    assert exe.aot_producer.startswith("vmjit ")
    names = [f.name for f in exe.functions]
    assert "fib" in names and "weighted" in names
    assert vmjit.assemble(".func main(x)\n  ret %x\n.end\n").aot_producer is None


def test_every_mode_agrees(aot_library, mode, new_vm):
    exe = vmjit.load(aot_library)
    vm = new_vm(exe, mode)
    assert vm["fib"](20) == 6765
    assert vm["sum"](1000) == 499500
    assert vm["closure"](4) == 13
    assert vm["weighted"](np.ones(3, "float32")) == 6.5
    with pytest.raises(vmjit.errors.ValueError, match="division by zero"):
        vm["call_div"](1, 0)
    fib = {f["name"]: f for f in vm.stats()["functions"]}["fib"]
    if mode in ("compiled", "tiered"):
        assert fib["tier"] == "optimized" and fib.get("aot") is True
        assert fib["calls_by_tier"]["interpreter"] == 0
        assert vm.stats()["compiles"] == 0
    else:
        assert "aot" not in fib


def test_replaced_inlined_builtin(aot_library, run_python):
    script = r"""
import sys, warnings, vmjit
vmjit.register_func("scalar.mul", lambda a, b: a * b + 100, override=True)
exe = vmjit.load(sys.argv[1])
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    vm = vmjit.VirtualMachine(exe, "compiled")
print(vm["affine"](2, 3, 4), [str(x.message) for x in w])
"""
    r = run_python(script, aot_library)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("110 "), r.stdout
    assert "inlines the standard 'scalar.mul'" in r.stdout, r.stdout
