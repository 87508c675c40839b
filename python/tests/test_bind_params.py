"""VirtualMachine.bind_params: a function's parameters bound once (TVM's
BindParams at run time, docs/tvm.md#binding-parameters-the-weights-given-once).

In every mode: the bound function takes the unbound parameters, in order
(and by keyword), and gives what the unbound one gives; by name and by
index; the bound array is a copy; stats()["bind"] says what was bound and folded; a parameter that
does not exist, one bound twice, a value the function's checks refuse are
one vmjit.errors.BindError each. On shared/tvm-models' mlp (skipped without
it): its weights bound, the outputs are the unbound run's bits, and with
the kernel tier's effects (model.bc) its two weight transposes fold.
"""

import pathlib

import numpy as np
import pytest

import vmjit

MODELS = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "tvm-models"

X = np.array([1, 2], np.float32)
W = np.array([10, 20], np.float32)


def test_the_bound_function_takes_the_others(make_vm):
    vm = make_vm("bind")
    w = W.copy()
    assert vm.bind_params("main", {"w": w}) == []
    w[:] = 0  # the bound value is a copy
    for _ in range(3):
        np.testing.assert_array_equal(vm["main"](X).numpy(), X + W)
    vm.set_input("main", x=X)
    vm.invoke_stateful("main")
    np.testing.assert_array_equal(vm.get_outputs("main").numpy(), X + W)
    assert vm.stats()["bind"] == {"function": "main", "params": ["w"],
                                  "folded": []}


def test_by_index(make_vm):
    vm = make_vm("bind")
    vm.bind_params("main", {0: X})
    np.testing.assert_array_equal(vm["main"](W).numpy(), X + W)
    vm.set_input("main", w=W)  # its parameter keeps its name
    vm.invoke_stateful("main")
    np.testing.assert_array_equal(vm.get_outputs("main").numpy(), X + W)
    with pytest.raises(TypeError, match="main has no parameter 'x'"):
        vm.set_input("main", x=X)


def test_bad_bindings_are_bind_errors(make_vm):
    vm = make_vm("bind")
    with pytest.raises(vmjit.errors.BindError,
                       match="function 'main' has no parameter 'v'"):
        vm.bind_params("main", {"v": W})
    with pytest.raises(vmjit.errors.BindError, match="'w' is bound twice"):
        vm.bind_params("main", {"w": W, 1: W})
    with pytest.raises(vmjit.errors.BindError,
                       match="the bound parameter 'w' fails the function's "
                             "check"):
        vm.bind_params("main", {"w": np.zeros((2, 2), np.float32)})
    with pytest.raises(TypeError, match="named by a str or an int"):
        vm.bind_params("main", {1.5: W})
    # Nothing was bound: main still takes both.
    np.testing.assert_array_equal(vm["main"](X, W).numpy(), X + W)


def test_mlp_with_bound_weights_gives_the_unbound_bits(mode):
    if not (MODELS / "mlp" / "model.so").is_file():
        pytest.skip("%s is absent" % (MODELS / "mlp"))
    inputs = [np.load(MODELS / "mlp" / ("in%d.npy" % i)) for i in range(5)]
    options = {"tier_threshold": 1} if mode == "tiered" else {}
    exe = vmjit.load(MODELS / "mlp" / "model.so")
    options["kernels"] = False
    unbound = vmjit.VirtualMachine(exe, mode, **options)
    expected = unbound["main"](*inputs).numpy()
    vm = vmjit.VirtualMachine(exe, mode, **options)
    vm.bind_params("main", {"fc1.weight": inputs[1], "fc1.bias": inputs[2],
                            3: inputs[3], 4: inputs[4]})
    for _ in range(3):
        got = vm["main"](inputs[0]).numpy()
    assert got.tobytes() == expected.tobytes()
    assert vm.stats()["bind"]["params"] == ["fc1.weight", "fc1.bias", 3, 4]


def test_mlp_folds_the_weight_transposes(tmp_path):
    if not (MODELS / "mlp" / "model.bc").is_file() or not vmjit.jit_available:
        pytest.skip("no mlp model.bc, or no JIT (the kernel tier proves the "
                    "kernels' effects)")
    inputs = [np.load(MODELS / "mlp" / ("in%d.npy" % i)) for i in range(5)]
    exe = vmjit.load(MODELS / "mlp" / "model.so")
    expected = vmjit.VirtualMachine(exe, "bytecode", kernels=False)["main"](
        *inputs).numpy()
    vm = vmjit.VirtualMachine(exe, "bytecode", cache_dir=tmp_path)
    folded = vm.bind_params("main", {i: inputs[i] for i in range(1, 5)})
    assert [(f["callee"], f["instruction"]) for f in folded] == [
        ("transpose", 4), ("transpose1", 19)]
    assert vm.stats()["bind"]["folded"] == folded
    assert vm["main"](inputs[0]).numpy().tobytes() == expected.tobytes()


@pytest.fixture(scope="module")
def mlp_with_kernels(tmp_path_factory):
    """The mlp compiled by `vmjit compile --kernels` (once for the module)."""
    import subprocess
    import sys
    if not (MODELS / "mlp" / "model.bc").is_file() or not vmjit.jit_available:
        pytest.skip("no mlp model.bc, or no JIT (vmjit compile needs it)")
    tmp = tmp_path_factory.mktemp("mlp-kernels")
    out = tmp / "mlp.so"
    r = subprocess.run([sys.executable, "-m", "vmjit", "compile",
                        str(MODELS / "mlp" / "model.so"), "--kernels",
                        str(MODELS / "mlp" / "model.bc"), "-o", str(out),
                        "--cache-dir", str(tmp)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_a_compiled_librarys_recorded_effects_fold(mlp_with_kernels, mode):
    """A `vmjit compile --kernels` library records its kernels' effects:
    bind_params on it folds the mlp's two weight transposes with no kernel
    tier (kernels=False too: the same IR as model.so's machine code), in
    every mode, with the unbound bits."""
    inputs = [np.load(MODELS / "mlp" / ("in%d.npy" % i)) for i in range(5)]
    expected = np.load(MODELS / "mlp" / "out.npy")
    for kernels in (None, False):
        vm = vmjit.VirtualMachine(vmjit.load(mlp_with_kernels), mode,
                                  kernels=kernels)
        folded = vm.bind_params("main", {i: inputs[i] for i in range(1, 5)})
        assert [f["callee"] for f in folded] == ["transpose", "transpose1"]
        for _ in range(3):
            got = vm["main"](inputs[0]).numpy()
        assert got.tobytes() == expected.tobytes()
