"""TVM's files from Python: a model library as export_library writes one
(its packed functions are the library's own compiled kernels, which reach
the host through the context slots vmjit fills), and the executable saved
in TVM's VMExecutable format."""

import numpy as np
import pytest

import vmjit


def test_model_library_runs(tvm_model, mode):
    exe = vmjit.load(tvm_model)
    assert {f.name for f in exe.functions} >= {"main", "add3", "mismatch"}
    vm = vmjit.VirtualMachine(exe, mode, **({"tier_threshold": 1}
                                            if mode == "tiered" else {}))
    x = np.arange(1, 6, dtype="float32")
    y = np.arange(10, 60, 10, dtype="float32")
    for _ in range(3):  # tiered: interpreter, then native code
        out = vm["main"](x, y)
        assert out.numpy().tolist() == [12.0, 24.0, 36.0, 48.0, 60.0]
    # The kernel's parallel launch and barrier over a long vector.
    big = np.arange(1000, dtype="float32")
    assert np.array_equal(vm["main"](big, big).numpy(), 3 * big)
    # A kernel calling scalar.add through the library context.
    assert vm["add3"](1, 2, 3) == 6


def test_model_library_errors(tvm_model, mode):
    vm = vmjit.VirtualMachine(vmjit.load(tvm_model), mode)
    with pytest.raises(vmjit.errors.ValueError) as info:
        vm["mismatch"](np.ones(2, "float32"), np.ones(3, "float32"))
    assert "scale_add: the vectors' lengths differ" in info.value.message
    assert info.value.frames[0].startswith("in function 'mismatch'")
    with pytest.raises(vmjit.errors.LinkError, match="no.such.function"):
        vm["missing"]()
    # The VM is usable after both.
    assert vm["add3"](1, 2, 3) == 6


def test_tvm_format_round_trip(tvm_model, tmp_path, mode):
    """The model's executable written in TVM's format loads back; its
    kernels come from the model library given with libs=."""
    path = tmp_path / "model.tvmexec"
    vmjit.load(tvm_model).save(path, format="tvm")
    # TVM's VMExecutable header magic, little-endian.
    assert int.from_bytes(path.read_bytes()[:8], "little") == 0xD225DE2F4214151E
    vm = vmjit.VirtualMachine(vmjit.load(path), mode, libs=[tvm_model])
    assert vm["add3"](4, 5, 6) == 15
