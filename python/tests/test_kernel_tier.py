"""The kernel tier through Python: TVM's kernels compiled for this CPU from
the model.bc beside a model (``kernels=``, docs/tvm.md).

For mlp, decoder and control of shared/tvm-models, in every mode: with
``wait_kernels=True`` the outputs are bit-identical to TVM's machine code
(``kernels=False``), for ordinary NumPy arrays and for arrays that are not
64-byte aligned (writable ones go in without a copy and are copied into
aligned storage for the compiled kernels; read-only ones are copied by the
package), the inputs unchanged; the background default gives the same
outputs; ``vm.stats()["kernel_tier"]`` is the object ``vmjit run --json
--stats`` prints, absent with ``kernels=False``; another model's bitcode is
one RuntimeWarning, and TVM's code runs; a kernels file that does not exist
is an error.

Every VM uses one object cache for the session, so that each model's
kernels are compiled once (a cold decoder takes ~15 s, a cache hit ~60 ms).
Without shared/tvm-models, a model.bc or the JIT, the tests are skipped.
"""

import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import vmjit
import vmjit.__main__

MODELS = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "tvm-models"

if not MODELS.is_dir():
    pytest.skip("%s is absent: the models TVM's compiler wrote are not here"
                % MODELS, allow_module_level=True)
if not vmjit.jit_available:
    pytest.skip("the kernel tier needs the JIT, which this build lacks",
                allow_module_level=True)

# (model folder, function, input files).
CALLS = {
    "mlp": ("main", ["in%d.npy" % i for i in range(5)]),
    "decoder": ("main", ["in0.npy"]),
    "control": ("main", ["in0.npy", "in1.npy", "in2.npy"]),
    # Its first kernel reads the input: inlined by tier 2 behind a check of
    # its alignment, called (the entry copying it) when it is unaligned.
    "many_small": ("main", ["in0.npy"]),
}


def _library(model):
    """The model's library, skipping the test when it or its model.bc is
    not there."""
    library = MODELS / model / "model.so"
    if not library.is_file() or not (MODELS / model / "model.bc").is_file():
        pytest.skip("%s has no model.so and model.bc" % (MODELS / model))
    return library


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """The object cache of every VM of this file (one per test session)."""
    return str(tmp_path_factory.mktemp("kernel-cache"))


_executables = {}


def _exe(model):
    """The model's Executable, loaded once per session (it keeps the
    kernel tiers its VMs start alive)."""
    if model not in _executables:
        _executables[model] = vmjit.load(_library(model))
    return _executables[model]


def _inputs(model):
    func, names = CALLS[model]
    return func, [np.load(MODELS / model / name) for name in names]


def _unaligned(array, read_only=False):
    """A copy of `array` at an address that is not 64-byte aligned (but
    aligned for its dtype), C-contiguous, writable unless `read_only`."""
    nbytes = array.nbytes
    buffer = np.frombuffer(bytearray(nbytes + 128), np.uint8)
    base = buffer.ctypes.data
    offset = next(k for k in range(array.itemsize, 128, array.itemsize)
                  if (base + k) % 64 != 0)
    out = np.frombuffer(buffer, array.dtype, count=array.size,
                        offset=offset).reshape(array.shape)
    out.flags.writeable = True
    out[...] = array
    assert out.ctypes.data % 64 != 0 and out.flags.c_contiguous
    if read_only:
        out.flags.writeable = False
    return out


def _bits(result):
    """The bytes of every tensor of a result, copied out (tuples depth
    first), with dtype and shape."""
    if isinstance(result, vmjit.Tensor):
        a = np.array(result.numpy(), copy=True)
        return [(a.dtype.str, a.shape, a.tobytes())]
    if isinstance(result, tuple):
        return [b for item in result for b in _bits(item)]
    return [("value", (), repr(result).encode())]


def _reference(model, mode):
    """TVM's machine code's outputs (kernels=False) in `mode`."""
    func, args = _inputs(model)
    vm = vmjit.VirtualMachine(_exe(model), mode, kernels=False,
                              **_mode_options(mode))
    return _bits(vm[func](*args))


def _mode_options(mode):
    return {"tier_threshold": 1} if mode == "tiered" else {}


def _kernel_vm(model, mode, cache_dir, **kwargs):
    options = _mode_options(mode)
    options.update(kwargs)
    return vmjit.VirtualMachine(_exe(model), mode, cache_dir=cache_dir,
                                **options)


@pytest.mark.parametrize("model", list(CALLS))
def test_compiled_kernels_give_tvms_bits(model, mode, cache_dir):
    """wait_kernels=True: every call runs vmjit's kernels and gives TVM's
    machine code's bits, for aligned, unaligned and read-only unaligned
    inputs, leaving the inputs as they were."""
    expected = _reference(model, mode)
    func, args = _inputs(model)
    vm = _kernel_vm(model, mode, cache_dir, wait_kernels=True)
    tier = vm.stats()["kernel_tier"]
    assert tier["state"] == "ready", tier
    copies = tier["aligned_copies"]  # the tier's, shared by earlier VMs
    f = vm[func]
    for kind in ("aligned", "unaligned", "read-only unaligned"):
        if kind == "aligned":
            given = args
        else:
            given = [_unaligned(a, read_only=kind.startswith("read-only"))
                     for a in args]
        kept = [np.array(a, copy=True) for a in given]
        for call in range(3):
            got = _bits(f(*given))
            assert got == expected, "%s, mode %s, %s inputs, call %d" % (
                model, mode, kind, call + 1)
        for a, before in zip(given, kept):
            assert a.tobytes() == before.tobytes(), (
                "%s, mode %s: a %s input changed" % (model, mode, kind))
    tier = vm.stats()["kernel_tier"]
    assert tier["state"] == "ready", tier
    assert tier["aligned_copies"] > copies, tier
    assert tier["tvm_calls"] == 0, tier


def test_nd_array_inputs_are_not_copied_per_kernel(mode, cache_dir):
    """Arrays NumPy does not align to 64 bytes (np.load's are aligned to
    16) are copied for every kernel call that takes them; the same data as
    vmjit.nd.array tensors (vmjit's aligned storage, one copy) are not:
    the advice docs/python.md gives for inputs used across many calls."""
    expected = _reference("mlp", mode)
    func, args = _inputs("mlp")
    vm = _kernel_vm("mlp", mode, cache_dir, wait_kernels=True)
    f = vm[func]
    unaligned = [_unaligned(a) for a in args]
    copies = vm.stats()["kernel_tier"]["aligned_copies"]
    assert _bits(f(*unaligned)) == expected
    after_unaligned = vm.stats()["kernel_tier"]["aligned_copies"]
    assert after_unaligned > copies
    tensors = [vmjit.nd.array(a) for a in unaligned]
    for _ in range(3):
        assert _bits(f(*tensors)) == expected
    assert vm.stats()["kernel_tier"]["aligned_copies"] == after_unaligned


@pytest.fixture(scope="session")
def background_cache_dir(tmp_path_factory):
    """An object cache of its own for the background compiles: the first
    VM of each model compiles in the background, the later ones load the
    object in the background."""
    return str(tmp_path_factory.mktemp("kernel-cache-background"))


@pytest.mark.parametrize("model", ["mlp", "decoder"])
def test_background_compile_gives_the_same_outputs(model, mode,
                                                   background_cache_dir):
    """The default: TVM's code until the kernels are swapped in, then
    vmjit's, the same bits before and after; wait_compiles() waits for
    the tier."""
    expected = _reference(model, mode)
    func, args = _inputs(model)
    # A new executable: no tier of an earlier test is alive.
    vm = vmjit.VirtualMachine(vmjit.load(_library(model)), mode,
                              cache_dir=background_cache_dir,
                              **_mode_options(mode))
    f = vm[func]
    assert _bits(f(*args)) == expected
    assert vm.stats()["kernel_tier"]["state"] in ("compiling", "ready")
    vm.wait_compiles()
    tier = vm.stats()["kernel_tier"]
    assert tier["state"] == "ready", tier
    for _ in range(2):
        assert _bits(f(*args)) == expected
        assert _bits(f(*[_unaligned(a) for a in args])) == expected


@pytest.mark.parametrize("jit_mode", ["compiled", "tiered"])
def test_driver_compiled_before_the_kernels_is_compiled_again(jit_mode,
                                                             tmp_path):
    """The default with nothing cached: many_small's main is compiled (or
    kept at tier 1) while the kernels compile in the background; once they
    are ready it is compiled again with them (its tensors on the stack, its
    small kernels inlined): after wait_compiles() it is optimized, with
    TVM's bits."""
    if not vmjit.jit_available:
        pytest.skip("no JIT in this build")
    expected = _reference("many_small", jit_mode)
    func, args = _inputs("many_small")
    vm = vmjit.VirtualMachine(vmjit.load(_library("many_small")), jit_mode,
                              cache_dir=str(tmp_path),
                              **_mode_options(jit_mode))
    f = vm[func]
    for _ in range(3):
        assert _bits(f(*args)) == expected
    vm.wait_compiles()
    stats = vm.stats()
    assert stats["kernel_tier"]["state"] == "ready", stats["kernel_tier"]
    main = next(e for e in stats["functions"] if e["name"] == func)
    assert main["tier"] == "optimized", main
    assert _bits(f(*args)) == expected


def test_no_kernels(mode, cache_dir):
    """kernels=False (on the VM or recorded by load) runs TVM's machine
    code: no kernel_tier in the statistics."""
    vm = _kernel_vm("mlp", mode, cache_dir, kernels=False)
    assert "kernel_tier" not in vm.stats()
    exe = vmjit.load(_library("mlp"), kernels=False)
    assert exe.kernels is False
    vm = vmjit.VirtualMachine(exe, mode, cache_dir=cache_dir)
    assert "kernel_tier" not in vm.stats()
    func, args = _inputs("mlp")
    assert _bits(vm[func](*args)) == _reference("mlp", mode)
    # The VM's own kernels= overrides the executable's.
    bitcode = str(MODELS / "mlp" / "model.bc")
    vm = vmjit.VirtualMachine(exe, mode, cache_dir=cache_dir, kernels=bitcode,
                              wait_kernels=True)
    assert vm.stats()["kernel_tier"]["state"] == "ready"


def test_load_records_the_kernels(cache_dir):
    """load(path, kernels=PATH): the VMs of the executable compile that
    bitcode (here beside a .tvmexec, found by itself too)."""
    bitcode = MODELS / "mlp" / "model.bc"
    exe = vmjit.load(_library("mlp"), kernels=bitcode)
    assert exe.kernels == str(bitcode)
    vm = vmjit.VirtualMachine(exe, "bytecode", cache_dir=cache_dir,
                              wait_kernels=True)
    tier = vm.stats()["kernel_tier"]
    assert tier["state"] == "ready" and tier["bitcode"] == str(bitcode), tier
    tvmexec = MODELS / "mlp" / "model.tvmexec"
    vm = vmjit.VirtualMachine(str(tvmexec), "bytecode", cache_dir=cache_dir,
                              wait_kernels=True)
    tier = vm.stats()["kernel_tier"]
    assert tier["state"] == "ready" and tier["bitcode"] == str(bitcode), tier


def test_stats_are_the_commands(cache_dir):
    """vm.stats()["kernel_tier"] has the keys of `vmjit run --json --stats`,
    and its line heads the printed table."""
    vm = _kernel_vm("mlp", "compiled", cache_dir, wait_kernels=True)
    func, args = _inputs("mlp")
    vm[func](*args)
    stats = vm.stats()
    tier = stats["kernel_tier"]
    assert list(tier) == ["state", "bitcode", "kernels", "compile_ms",
                          "cache_hit", "transposes", "tvm_calls",
                          "aligned_copies"], tier
    assert tier["transposes"] == 2  # the mlp's two weight transposes
    assert tier["kernels"] > 0 and tier["bitcode"].endswith("model.bc")
    assert "kernels: %d of %d from vmjit's code" % (
        tier["kernels"], tier["kernels"]) in str(stats)
    command = ([sys.executable, "-m", "vmjit", "run", str(_library("mlp")),
                "--mode", "compiled", "--json", "--stats", "--wait-kernels",
                "--cache-dir", cache_dir]
               + [str(MODELS / "mlp" / n) for n in CALLS["mlp"][1]])
    if vmjit.__main__.find_executable() is None:
        pytest.skip("the vmjit command is not beside the package")
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)["stats"]["kernel_tier"]
    assert list(theirs) == list(tier), (theirs, tier)
    # (the counts are the tier's, shared by the VMs of the session)
    for key in ("state", "bitcode", "kernels"):
        assert theirs[key] == tier[key], (key, theirs, tier)


def test_mismatched_bitcode_warns_and_runs_tvms_code(mode, cache_dir):
    """mlp's model.bc for decoder: one RuntimeWarning (at creation with
    wait_kernels=True, else when wait_compiles() or stats() finds it), the
    tier failed, TVM's outputs."""
    expected = _reference("decoder", mode)
    func, args = _inputs("decoder")
    bitcode = str(MODELS / "mlp" / "model.bc")
    with pytest.warns(RuntimeWarning, match="model.bc"):
        vm = _kernel_vm("decoder", mode, cache_dir, kernels=bitcode,
                        wait_kernels=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        assert _bits(vm[func](*args)) == expected
        vm.wait_compiles()
        tier = vm.stats()["kernel_tier"]
    assert tier["state"] == "failed" and tier["warning"], tier
    assert "compile_ms" not in tier

    # In the background (no_cache: another tier than the one above): the
    # warning comes when the VM finds the tier failed (at creation, if
    # the check was that quick, else at wait_compiles()), once.
    exe = vmjit.load(_library("decoder"))
    with pytest.warns(RuntimeWarning, match="model.bc") as caught:
        vm = vmjit.VirtualMachine(exe, mode, kernels=bitcode, no_cache=True,
                                  **_mode_options(mode))
        assert _bits(vm[func](*args)) == expected
        vm.wait_compiles()
        vm.stats()
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert vm.stats()["kernel_tier"]["state"] == "failed"


def test_missing_kernels_file_is_an_error(tmp_path):
    """A kernels file that does not exist: vmjit.IOError (an OSError) from
    load and from VirtualMachine."""
    missing = tmp_path / "nope.bc"
    with pytest.raises(vmjit.errors.IOError, match="nope.bc: no such file"):
        vmjit.load(_library("mlp"), kernels=missing)
    with pytest.raises(OSError, match="nope.bc: no such file"):
        vmjit.VirtualMachine(_exe("mlp"), "bytecode", kernels=missing)
    with pytest.raises(TypeError):
        vmjit.load(_library("mlp"), kernels=True)


def test_without_the_jit_the_kernels_are_ignored(monkeypatch, cache_dir):
    """A build without the JIT (as the package sees it): kernels given
    explicitly are one RuntimeWarning and TVM's machine code runs; the
    default says nothing."""
    monkeypatch.setattr(vmjit._vmjit, "jit_available", False)
    bitcode = MODELS / "mlp" / "model.bc"
    with pytest.warns(RuntimeWarning, match="kernels") as caught:
        vm = vmjit.VirtualMachine(_exe("mlp"), "bytecode", kernels=bitcode,
                                  wait_kernels=True, cache_dir=cache_dir)
    assert len(caught) == 1
    assert "kernel_tier" not in vm.stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vm = vmjit.VirtualMachine(_exe("mlp"), "bytecode", cache_dir=cache_dir)
    assert "kernel_tier" not in vm.stats()


_DEFAULT_CACHE_PROBE = """
import sys, vmjit
vm = vmjit.VirtualMachine(vmjit.load(sys.argv[1], kernels=False), "bytecode",
                          kernels=sys.argv[2], wait_kernels=True)
print(vm.stats()["kernel_tier"]["cache_hit"])
"""


def test_kernels_are_cached_in_the_users_cache_by_default(tmp_path):
    """Without cache_dir, the kernels' object goes to the cache `vmjit run`
    uses by default ($XDG_CACHE_HOME/vmjit): a second process compiles
    nothing."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    env.pop("VMJIT_CACHE_DIR", None)
    argv = [sys.executable, "-c", _DEFAULT_CACHE_PROBE, str(_library("mlp")),
            str(MODELS / "mlp" / "model.bc")]
    hits = [subprocess.run(argv, capture_output=True, text=True, env=env,
                           timeout=300) for _ in range(2)]
    for done in hits:
        assert done.returncode == 0, done.stderr
    assert [d.stdout.strip() for d in hits] == ["False", "True"]
    assert any((tmp_path / "vmjit").glob("*.o"))
