"""Models compiled by Apache TVM's own compiler run unchanged, in every mode.

The models are the steering repository's shared/tvm-models, next to the
source tree (its README.md describes each folder: model.so from TVM's
export_library, the arguments as in*.npy, what TVM's VM returned as
out*.npy). Each function and input set below is loaded with
``vmjit.load(path)``, run by ``vmjit.VirtualMachine(exe, mode)`` in each
mode, and compared with TVM's outputs: floating-point ones within
max|got - ref| <= 1e-5 * max(1, max|ref|), integer and bool ones exactly.
The kvcache model also runs its 8-step decode (create_kv_cache, then main
with a cache object and a Shape), compared exactly with TVM's views.
The `llm` folder is not here (its paged KV cache is tested on its own).

Without shared/tvm-models the whole file is skipped.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import vmjit

MODELS = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "tvm-models"

if not MODELS.is_dir():
    pytest.skip("%s is absent: the models TVM's compiler wrote are not here"
                % MODELS, allow_module_level=True)



def _case(name, folder, library, func, inputs, refs, input_folder=None):
    return pytest.param((folder, library, func, input_folder or folder, inputs, refs),
                        id=name)


# (id, folder, library, function, input files, TVM's output files in the
# result's flattened order).
_MLP_IN = ["in%d.npy" % i for i in range(5)]
_CTL_IN = ["in%d.npy" % i for i in range(3)]
_CTL_IN_FALSE = ["in%d_false.npy" % i for i in range(3)]
CASES = [
    _case("mlp", "mlp", "model.so", "main", _MLP_IN, ["out.npy"]),
    _case("dynshape-n3", "dynshape", "model.so", "main", ["in0.npy", "in1.npy", "in2.npy"],
          ["out0.npy", "out1.npy"]),
    _case("dynshape-n5", "dynshape", "model.so", "main",
          ["in0_n5.npy", "in1_n5.npy", "in2_n5.npy"], ["out0_n5.npy", "out1_n5.npy"]),
    _case("control-true", "control", "model.so", "main", _CTL_IN,
          ["out0.npy", "out1.npy", "out2.npy"]),
    _case("control-false", "control", "model.so", "main", _CTL_IN_FALSE,
          ["out0_false.npy", "out1_false.npy", "out2_false.npy"]),
    _case("many_small", "many_small", "model.so", "main", ["in0.npy"], ["out.npy"]),
    _case("kvcache-run3", "kvcache", "model.so", "run3", ["in0.npy", "in1.npy", "in2.npy"],
          ["out.npy"]),
    _case("compiled_mode-mlp", "compiled_mode", "compiled_mode.so", "main", _MLP_IN,
          ["out.npy"]),
    _case("compiled_mode-control-true", "compiled_mode", "control_compiled_mode.so", "main",
          _CTL_IN, ["control_out0.npy", "control_out1.npy", "control_out2.npy"],
          input_folder="control"),
    _case("compiled_mode-control-false", "compiled_mode", "control_compiled_mode.so", "main",
          _CTL_IN_FALSE,
          ["control_out0_false.npy", "control_out1_false.npy", "control_out2_false.npy"],
          input_folder="control"),
]

_executables = {}


def _load(folder, library):
    """The Executable of MODELS/folder/library, loaded once per session (a
    load error is raised again for every test of that library)."""
    key = (folder, library)
    if key not in _executables:
        try:
            _executables[key] = vmjit.load(str(MODELS / folder / library))
        except vmjit.Error as e:
            _executables[key] = e
    exe = _executables[key]
    if isinstance(exe, Exception):
        raise exe
    return exe


def _flatten(result):
    """The tensors of a result in order (a tuple's depth first, as TVM's
    outputs are numbered), copied out of vmjit's memory."""
    if isinstance(result, vmjit.Tensor):
        return [np.array(result.numpy(), copy=True)]
    if isinstance(result, tuple):
        return [a for item in result for a in _flatten(item)]
    raise AssertionError("a result that is not a tensor or a tuple: %r" % (result,))


def _load_checker():
    """The lit tests' checker (unittests/tools/tvm-models/Inputs/
    check-model.py): its compare() is the one rule for "gives TVM's
    output" (the tolerance, exact integers, dtype and shape)."""
    path = (pathlib.Path(__file__).resolve().parents[2] / "unittests" / "tools" /
            "tvm-models" / "Inputs" / "check-model.py")
    spec = importlib.util.spec_from_file_location("vmjit_check_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_compare = _load_checker().compare


@pytest.mark.parametrize("case", CASES)
def test_model_matches_tvm(case, make_vm, mode):
    folder, library, func, input_folder, inputs, refs = case
    vm = make_vm(_load(folder, library))
    args = [np.load(MODELS / input_folder / name) for name in inputs]
    expected = [np.load(MODELS / folder / name) for name in refs]
    f = vm[func]
    # Several calls: in tiered mode (threshold 1) the ones after the
    # background compile run on the JIT's code.
    for call in range(3):
        outputs = _flatten(f(*args))
        vm.wait_compiles()
        assert len(outputs) == len(expected), (
            "%s/%s %s, mode %s: %d outputs, TVM's result has %d"
            % (folder, library, func, mode, len(outputs), len(expected)))
        problems = []
        for i, (got, ref) in enumerate(zip(outputs, expected)):
            problem = _compare(got, ref)
            if problem:
                problems.append("%s/%s %s, mode %s, call %d: output %d (vs %s): %s"
                                % (folder, library, func, mode, call + 1, i, refs[i],
                                   problem))
        assert not problems, "\n".join(problems)


def test_kvcache_decode_matches_tvm(make_vm, mode):
    """kvcache/make.py's decode: create_kv_cache(Shape([1])), then main(x,
    y, Shape([i+1, 4]), cache) for 8 steps, each view equal to TVM's. Twice,
    with a new cache each time (tiered: the second pass runs the JIT's
    code)."""
    folder = MODELS / "kvcache"
    vm = make_vm(_load("kvcache", "model.so"))
    steps = [(np.load(folder / ("step%d_x.npy" % i)), np.load(folder / ("step%d_y.npy" % i)),
              np.load(folder / ("step%d_out.npy" % i))) for i in range(8)]
    for decode in range(2):
        vm.wait_compiles()
        cache = vm["create_kv_cache"](vmjit.Shape([1]))
        for i, (x, y, ref) in enumerate(steps):
            result = vm["main"](x, y, vmjit.Shape([i + 1, 4]), cache)
            assert isinstance(result, tuple) and len(result) == 2, result
            view, cache = result
            got = np.array(view.numpy(), copy=True)
            assert got.dtype == ref.dtype and got.shape == ref.shape, (
                "kvcache decode %d, step %d, mode %s: %s%s, TVM's %s%s"
                % (decode + 1, i, mode, got.dtype, list(got.shape), ref.dtype,
                   list(ref.shape)))
            assert np.array_equal(got, ref), (
                "kvcache decode %d, step %d, mode %s: the view differs from TVM's "
                "(max abs error %.3g)" % (decode + 1, i, mode,
                                          float(np.max(np.abs(got - ref)))))


def _views(result):
    """The tensors of a result as NumPy arrays sharing vmjit's memory (no
    copy): half through np.from_dlpack, half through .numpy()."""
    if isinstance(result, vmjit.Tensor):
        return [np.from_dlpack(result), result.numpy()]
    return [a for item in result for a in _views(item)]


@pytest.mark.parametrize("case", [c for c in CASES if c.id in (
    "many_small", "dynshape-n3", "control-true", "compiled_mode-control-true")])
def test_kept_results_keep_their_values(case, make_vm, mode):
    """Storages and tensor objects are reused only when dead: results kept
    (as vmjit tensors and as NumPy arrays over their memory) while 1000
    further calls run still hold TVM's outputs."""
    folder, library, func, input_folder, inputs, refs = case
    vm = make_vm(_load(folder, library))
    args = [np.load(MODELS / input_folder / name) for name in inputs]
    expected = [np.load(MODELS / folder / name) for name in refs]
    f = vm[func]
    kept_results, kept_arrays = [], []
    for call in range(1000):
        result = f(*args)
        if call % 100 == 0:
            kept_results.append(result)
            kept_arrays.append(_views(result))
    vm.wait_compiles()
    for k, (result, arrays) in enumerate(zip(kept_results, kept_arrays)):
        outputs = _flatten(result)
        for i, ref in enumerate(expected):
            for got in (outputs[i], arrays[2 * i], arrays[2 * i + 1]):
                problem = _compare(got, ref)
                assert not problem, ("%s, mode %s: result of call %d, output %d, "
                                     "kept across later calls: %s"
                                     % (case, mode, 100 * k, i, problem))
