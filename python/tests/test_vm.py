"""VirtualMachine: calls in every mode, TVM's stateful API, saved
functions, time_evaluator, the instrument, statistics and options."""

import builtins
import gc

import numpy as np
import pytest

import vmjit


def test_call(make_vm):
    vm = make_vm("fib")
    assert vm["main"](0) == 0
    assert vm["main"](1) == 1
    assert vm["main"](20) == 6765
    assert vm["fib"](15) == 610
    f = vm["main"]
    assert isinstance(f, vmjit.Function)
    assert f.name == "main"
    assert vm["main"] is f  # looked up once
    assert [f(n) for n in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]


def test_modes_agree(new_vm, available_modes):
    """The same calls give the same results in every mode."""
    cases = [("fib", "main", (18,)), ("loop_sum", "main", (1000,)),
             ("values", "call_add", (2.5, 4)), ("values", "div", (-7, 2)),
             ("values", "pair", ("a", (1, None))),
             ("tensors", "fma_total",
              (np.arange(6.0).reshape(2, 3), np.ones(3)))]
    results = {}
    for mode in available_modes:
        results[mode] = []
        for program, func, args in cases:
            vm = new_vm(program, mode)
            results[mode].append(vm[func](*args))
            results[mode].append(vm[func](*args))  # tiered: after tier-up
    expected = [2584, 2584, 499500, 499500, 6.5, 6.5, -3, -3,
                ("a", (1, None)), ("a", (1, None)), 70.0, 70.0]
    for mode in available_modes:
        assert results[mode] == expected, mode


def test_mode_property_and_repr(make_vm, mode):
    vm = make_vm("values")
    assert vm.mode == mode
    assert "mode=%s" % mode in repr(vm)


def test_invalid_mode(load_input):
    with pytest.raises(builtins.ValueError, match="mode 'fast'"):
        vmjit.VirtualMachine(load_input("values"), "fast")


def test_device_argument(load_input):
    exe = load_input("values")
    vm = vmjit.VirtualMachine(exe, vmjit.cpu())  # as tvm.relax.VirtualMachine
    assert vm.mode == "tiered"
    assert vm["add"](1, 2) == 3
    vm = vmjit.VirtualMachine(exe, "bytecode", device=vmjit.cpu(0))
    assert vm["add"](1, 2) == 3
    with pytest.raises(builtins.ValueError, match="CPU"):
        vmjit.VirtualMachine(exe, vmjit.Device(2, 0))


@pytest.mark.skipif(vmjit.jit_available, reason="only a build without the JIT")
def test_jit_mode_without_jit_warns(load_input):
    with pytest.warns(RuntimeWarning, match="JIT"):
        vm = vmjit.VirtualMachine(load_input("values"), "compiled")
    assert vm["add"](1, 2) == 3


def test_contains(values_vm):
    assert "add" in values_vm
    assert "no_such_function" not in values_vm


#===--- TVM's stateful API ------------------------------------------------===#

def test_stateful_positional(values_vm):
    vm = values_vm
    vm.set_input("sub", 10, 3)
    assert vm.invoke_stateful("sub") is None
    assert vm.get_outputs("sub") == 7
    # The inputs stay: invoking again gives the same result.
    vm.invoke_stateful("sub")
    assert vm.get_outputs("sub") == 7
    vm.set_input("sub", 3, 10)
    vm.invoke_stateful("sub")
    assert vm.get_outputs("sub") == -7


def test_stateful_keywords(values_vm):
    vm = values_vm
    vm.set_input("sub", b=3, a=10)
    vm.invoke_stateful("sub")
    assert vm.get_outputs("sub") == 7
    vm.set_input("sub", 100, b=1)
    vm.invoke_stateful("sub")
    assert vm.get_outputs("sub") == 99
    # Outputs are kept per function.
    vm.set_input("add", a=1.5, b=2)
    vm.invoke_stateful("add")
    assert vm.get_outputs("add") == 3.5
    assert vm.get_outputs("sub") == 99


def test_stateful_errors(values_vm):
    vm = values_vm
    with pytest.raises(builtins.TypeError, match="no parameter 'c'"):
        vm.set_input("sub", a=1, c=2)
    with pytest.raises(vmjit.errors.LookupError, match="invoke_stateful"):
        vm.get_outputs("pair")
    with pytest.raises(builtins.TypeError, match="argument 2"):
        vm.set_input("sub", 1, object())
    with pytest.raises(vmjit.errors.LookupError):
        vm.invoke_stateful("no_such_function")
    vm.set_input("sub", 5, 2)
    vm.invoke_stateful("sub")
    assert vm.get_outputs("sub") == 3


def test_stateful_tensor_input_is_kept(tensors_vm):
    vm = tensors_vm
    x = np.arange(4, dtype="float32")
    vm.set_input("total", x)
    vm.invoke_stateful("total")
    assert vm.get_outputs("total") == 6.0
    x[0] = 10  # the VM holds the array itself, not a copy
    vm.invoke_stateful("total")
    assert vm.get_outputs("total") == 16.0


#===--- save_function -----------------------------------------------------===#

def test_save_function(values_vm):
    vm = values_vm
    vm.save_function("sub", "sub_saved", 20, 5)
    assert vm["sub_saved"]() == 15
    assert "sub_saved" in vm
    vm.save_function("sub", "sub_kw", 20, b=8)
    assert vm["sub_kw"]() == 12
    vm.save_function("sub", "sub_kw", b=20, a=8)  # saved again: replaced
    assert vm["sub_kw"]() == -12


def test_save_function_without_return(values_vm):
    vm = values_vm
    vm.save_function("sub", "sub_void", 20, 5, include_return=False)
    assert isinstance(vm["sub_void"], vmjit.Function)  # as every vm[name]
    assert vm["sub_void"]() is None
    vm.save_function("sub", "sub_bad", "text", 5, include_return=False)
    with pytest.raises(vmjit.errors.TypeError):
        vm["sub_bad"]()  # an error still comes out
    vm.save_function("sub", "sub_void", 20, 5)  # include_return again
    assert vm["sub_void"]() == 15


def test_saved_function_hides_the_executables(values_vm):
    vm = values_vm
    assert vm["add"](1, 2) == 3
    vm.save_function("sub", "add", 10, 3)  # vm["add"] is now the binding
    assert vm["add"]() == 7
    assert vm["call_add"](1, 2) == 3  # calls inside the program: unchanged


def test_save_function_keeps_its_tensor(tensors_vm):
    vm = tensors_vm
    x = np.arange(5, dtype="float64")
    vm.save_function("total", "total_saved", x)
    del x
    assert vm["total_saved"]() == 10.0
    assert vm["total_saved"]() == 10.0


#===--- time_evaluator ----------------------------------------------------===#

def test_time_evaluator(make_vm):
    vm = make_vm("fib")
    timer = vm.time_evaluator("main", number=3, repeat=4)
    result = timer(12)
    assert isinstance(result, vmjit.BenchmarkResult)
    assert len(result.results) == 4
    assert all(t > 0 for t in result.results)
    assert result.min <= result.median <= result.max
    assert result.min <= result.mean <= result.max
    assert result.std >= 0
    assert "4 repeats" in repr(result)
    # The timed calls ran: 1 untimed + 3 * 4 timed calls of main.
    calls = {f["name"]: f["calls"] for f in vm.stats()["functions"]}
    assert calls["main"] == 13
    # TVM's signature: a device and min_repeat_ms are accepted.
    result = vm.time_evaluator("main", vmjit.cpu(), number=1, repeat=2,
                               min_repeat_ms=1)(5)
    assert len(result.results) == 2
    assert all(t > 0 for t in result.results)


def test_time_evaluator_errors(values_vm):
    vm = values_vm
    with pytest.raises(builtins.ValueError):
        vm.time_evaluator("add", number=0)
    with pytest.raises(builtins.ValueError):
        vm.time_evaluator("add", repeat=0)
    with pytest.raises(vmjit.errors.TypeError):
        vm.time_evaluator("add", number=2, repeat=2)(1, "x")
    with pytest.raises(vmjit.errors.LookupError):
        vm.time_evaluator("no_such_function")(1)
    assert vm["add"](1, 2) == 3


#===--- The instrument ----------------------------------------------------===#

def test_instrument_sees_every_call(make_vm):
    vm = make_vm("values")
    events = []

    def instrument(func, func_symbol, before_run, ret_value, *args):
        assert isinstance(func, vmjit.Function)
        events.append((func_symbol, before_run, ret_value, args))
        if func_symbol == "scalar.add" and not before_run:
            # A callback may call its own VM's functions again.
            assert func(*args) == ret_value

    vm.set_instrument(instrument)
    assert vm["call_add"](1, 2) == 3
    assert events == [
        ("vm.builtin.copy", True, None, (0,)),
        ("vm.builtin.copy", False, 0, (0,)),
        ("add", True, None, (1, 2)),
        ("scalar.add", True, None, (1, 2)),
        ("scalar.add", False, 3, (1, 2)),
        ("add", False, 3, (1, 2)),
    ]
    vm.set_instrument(None)
    events.clear()
    assert vm["call_add"](1, 2) == 3
    assert events == []


def test_instrument_skip_run(make_vm):
    vm = make_vm("values")
    seen = []

    def skip_add(func, func_symbol, before_run, ret_value, *args):
        seen.append((func_symbol, before_run))
        if func_symbol == "add" and before_run:
            return vmjit.InstrumentReturnKind.SKIP_RUN
        return vmjit.InstrumentReturnKind.NO_OP

    vm.set_instrument(skip_add)
    assert vm["call_add"](1, 2) is None  # add skipped: its result is None
    assert ("add", True) in seen
    assert ("scalar.add", True) not in seen
    assert ("add", False) not in seen
    vm.set_instrument(lambda *a: None)
    assert vm["call_add"](1, 2) == 3


def test_instrument_returning_something_else_is_a_type_error(make_vm):
    vm = make_vm("values")
    vm.set_instrument(lambda *a: "skip")
    with pytest.raises(vmjit.errors.TypeError,
                       match="the instrument returned a 'str'"):
        vm["call_add"](1, 2)
    vm.set_instrument(None)
    assert vm["call_add"](1, 2) == 3


class _Boom(Exception):
    pass


def test_instrument_exception_propagates(make_vm):
    vm = make_vm("values")
    calls = []

    def boom(func, func_symbol, before_run, ret_value, *args):
        calls.append(func_symbol)
        if func_symbol == "scalar.add" and len(calls) < 10:
            raise _Boom("from the instrument")

    vm.set_instrument(boom)
    with pytest.raises(_Boom, match="from the instrument") as info:
        vm["call_add"](1, 2)
    assert type(info.value) is _Boom  # itself, not wrapped
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "in function 'add', instruction 0" in notes
    assert "in function 'call_add', instruction 1" in notes
    # The same VM still runs, with the instrument and without it.
    calls.extend(["x"] * 10)
    assert vm["call_add"](1, 2) == 3
    vm.set_instrument(None)
    assert vm["call_add"](4, 5) == 9


_REPLACE_INSTRUMENT = """
import sys
import vmjit

class Tracker:
    def __del__(self):
        print("instrument freed", flush=True)

def make_instrument():
    tracker = Tracker()
    return lambda *args: tracker and None

path, mode = sys.argv[1], sys.argv[2]
vm = vmjit.VirtualMachine(path, mode)
vm.set_instrument(make_instrument())  # the VM holds the only reference
assert vm["call_add"](1, 2) == 3
vm.set_instrument(make_instrument())  # replaced: the first one goes
vm.set_instrument(None)  # removed: the second one goes
assert vm["call_add"](1, 2) == 3
print("done", flush=True)
"""


def test_replacing_the_instrument(run_python, input_path, mode):
    proc = run_python(_REPLACE_INSTRUMENT, str(input_path("values")), mode)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["instrument", "freed", "instrument",
                                   "freed", "done"]


#===--- Statistics --------------------------------------------------------===#

_TIER = {"bytecode": "interpreter", "baseline": "baseline",
         "compiled": "optimized"}


def test_stats(make_vm, mode):
    vm = make_vm("fib", no_cache=True)
    n_calls = 5
    for _ in range(n_calls):
        assert vm["main"](10) == 55
    vm.wait_compiles()
    assert vm["main"](10) == 55  # tiered: now on the compiled code
    stats = vm.stats()
    assert isinstance(stats, dict)
    assert stats["mode"] == mode
    funcs = {f["name"]: f for f in stats["functions"]}
    assert funcs["main"]["calls"] == n_calls + 1
    assert funcs["fib"]["calls"] == (n_calls + 1) * 177  # fib(10): 177 calls
    for name in ("main", "fib"):
        f = funcs[name]
        assert f["kind"] == "bytecode"
        if mode == "tiered":
            assert f["tier"] in ("baseline", "optimized")
        else:
            assert f["tier"] == _TIER[mode]
        if mode in ("compiled", "tiered") and f["tier"] == "optimized":
            assert f["compile_ms"] > 0  # no_cache: compiled here
        if mode == "bytecode":
            assert f["compile_ms"] == 0
    if mode == "tiered":
        assert stats["tier_threshold"] == 1
        # The last call ran on native code.
        by_tier = funcs["main"]["calls_by_tier"]
        assert by_tier["baseline"] + by_tier["optimized"] >= 1
        assert sum(by_tier.values()) == n_calls + 1
    text = str(stats)
    assert "function" in text and "calls" in text
    assert "main" in text and "fib" in text


def test_stats_before_any_call(make_vm, mode):
    vm = make_vm("fib")
    funcs = {f["name"]: f for f in vm.stats()["functions"]}
    assert funcs["main"]["calls"] == 0
    assert funcs["fib"]["calls"] == 0


#===--- Kernel libraries --------------------------------------------------===#

def test_libs_needed(load_input, mode):
    exe = load_input("kernel_library")
    with pytest.raises(vmjit.errors.LinkError, match="demo_add_int"):
        vmjit.VirtualMachine(exe, mode)  # not without the library


def test_libs(make_vm, mode, demo_kernels):
    vm = make_vm("kernel_library", libs=[demo_kernels])
    assert vm["add_int"](40, 2) == 42
    assert vm["sum_f32"](np.arange(4, dtype="float32")) == 6.0
    with pytest.raises(vmjit.errors.ValueError) as info:
        vm["fail"](7)
    assert info.value.message == "demo_fail: kernel failed with code 7"
    assert info.value.frames[0].startswith("in function 'fail', instruction 0")
    with pytest.raises(vmjit.errors.TypeError, match="must be float32"):
        vm["sum_f32"](np.arange(4, dtype="float64"))
    assert vm["add_int"](1, 2) == 3


#===--- Keyword arguments bind as in a Python call ------------------------===#

def test_keywords_bind_like_a_python_call(values_vm):
    vm = values_vm
    with pytest.raises(builtins.TypeError, match="multiple values for "
                       "parameter 'a'"):
        vm.set_input("sub", 10, a=1)
    with pytest.raises(builtins.TypeError, match="missing the argument 'b'"):
        vm.set_input("pair", a=1)
    with pytest.raises(builtins.TypeError, match="missing the argument 'a'"):
        vm.save_function("pair", "pair_saved", b=2)
    with pytest.raises(builtins.TypeError, match="takes 2 arguments"):
        vm.set_input("sub", 1, 2, 3, b=4)
    assert "pair_saved" not in vm
    # None passed by name is a value like any other.
    vm.set_input("pair", b=None, a=1)
    vm.invoke_stateful("pair")
    assert vm.get_outputs("pair") == (1, None)


def test_functions_outlive_the_vm(make_vm):
    vm = make_vm("values")
    add = vm["add"]
    closure = vm["make_affine"](3, 1)
    del vm
    gc.collect()
    assert add(1, 2) == 3
    assert closure(2) == 7


def test_packed_functions_are_callable(values_vm):
    assert values_vm["scalar.add"](1, 2) == 3
    assert values_vm["vm.builtin.make_tuple"](1, "a") == (1, "a")
    with pytest.raises(vmjit.errors.TypeError, match="scalar.add"):
        values_vm["scalar.add"](1, "a")
