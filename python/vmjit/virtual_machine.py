"""VirtualMachine: running an executable, as tvm.relax.VirtualMachine."""

from __future__ import annotations

import csv
import enum
import io
import json
import math
import statistics
import warnings
from typing import (Any, Callable, Dict, Iterable, List, NamedTuple, Optional,
                    Tuple, Union)

from . import _vmjit
from .executable import (Executable, KernelsChoice, PathLike, Stats,
                         _checked_kernels, load)
from .values import Device, DeviceLike, Value
from .values import device as _device

MODES = ("bytecode", "baseline", "compiled", "tiered")


class InstrumentReturnKind(enum.IntEnum):
    """What an instrument callback returns (TVM's VMInstrumentReturnKind)."""

    NO_OP = 0
    SKIP_RUN = 1


class BenchmarkResult:
    """What a time_evaluator call returns: seconds per call, one entry per
    repeat (``results``), and their statistics."""

    def __init__(self, results: Iterable[float]) -> None:
        self.results: Tuple[float, ...] = tuple(results)

    @property
    def mean(self) -> float:
        """The mean of ``results``."""
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        """The median of ``results``."""
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        """The smallest of ``results``."""
        return min(self.results)

    @property
    def max(self) -> float:
        """The largest of ``results``."""
        return max(self.results)

    @property
    def std(self) -> float:
        """The population standard deviation of ``results``."""
        return statistics.pstdev(self.results)

    def __repr__(self) -> str:
        return ("BenchmarkResult(median=%.3g s, mean=%.3g s, std=%.3g s, "
                "%d repeats)" % (self.median, self.mean, self.std,
                                 len(self.results)))


class ProfileRow(NamedTuple):
    """One callee of a profiled call: how often the interpreter called it
    and for how long in all (inclusive of what it called), in ns."""

    name: str
    calls: int
    total_ns: float

    @property
    def mean_ns(self) -> float:
        """The mean time of one call in ns (0 for no calls)."""
        return self.total_ns / self.calls if self.calls else 0.0


class ProfileReport:
    """What :meth:`VirtualMachine.profile` returns: ``rows`` (one
    :class:`ProfileRow` per callee, the most total time first) and
    ``total_ns`` (the whole call). Prints as a table, as TVM's report."""

    def __init__(self, total_ns: float,
                 rows: Iterable[Tuple[str, int, float]]) -> None:
        self.total_ns = float(total_ns)
        self.rows = sorted((ProfileRow(*r) for r in rows),
                           key=lambda r: -r.total_ns)

    def table(self) -> str:
        """The rows as a text table: callee, calls, total, mean, share of
        the call."""
        width = max([6] + [len(r.name) for r in self.rows])
        lines = ["%-*s  %8s  %12s  %12s  %6s" % (
            width, "callee", "calls", "total (us)", "mean (us)", "%")]
        for r in self.rows:
            share = 100.0 * r.total_ns / self.total_ns if self.total_ns else 0
            lines.append("%-*s  %8d  %12.3f  %12.3f  %6.1f" % (
                width, r.name, r.calls, r.total_ns / 1e3, r.mean_ns / 1e3,
                share))
        lines.append("the call: %.3f us" % (self.total_ns / 1e3))
        return "\n".join(lines)

    def json(self) -> str:
        """The report as JSON text: total_ns and the rows."""
        return json.dumps({"total_ns": self.total_ns, "calls": [
            {"name": r.name, "calls": r.calls, "total_ns": r.total_ns,
             "mean_ns": r.mean_ns} for r in self.rows]})

    def csv(self) -> str:
        """The rows as CSV text, as TVM's ``Report.csv()``: a header line
        (``Name,Count,Duration (us),Mean (us),Percent``), then one line per
        callee, the most time first; the whole call is not a row."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["Name", "Count", "Duration (us)", "Mean (us)",
                         "Percent"])
        for r in self.rows:
            share = 100.0 * r.total_ns / self.total_ns if self.total_ns else 0
            writer.writerow([r.name, r.calls, "%.3f" % (r.total_ns / 1e3),
                             "%.3f" % (r.mean_ns / 1e3), "%.2f" % share])
        return out.getvalue()

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return "<vmjit.ProfileReport %d callees, %.3f us>" % (
            len(self.rows), self.total_ns / 1e3)


def _is_device(value: object) -> bool:
    return isinstance(value, Device) or hasattr(value, "device_type")


def _check_devices(device: Union[DeviceLike, List[DeviceLike]]) -> None:
    """Raises ValueError unless `device` (one, or a list of them as TVM
    takes) is the CPU."""
    for d in device if isinstance(device, list) else [device]:
        _device(d)


def _seconds(timeout: Optional[float]) -> float:
    if timeout is None:
        return 0.0
    seconds = float(timeout)
    if not seconds > 0 or math.isinf(seconds):
        raise ValueError("timeout must be a positive number of seconds")
    return seconds


def _steps(max_steps: Optional[int]) -> int:
    if max_steps is None:
        return 0
    if int(max_steps) <= 0:
        raise ValueError("max_steps must be positive")
    return int(max_steps)


def _kernel_options(opts: _vmjit.MachineOptions, exe: Executable,
                    kernels: KernelsChoice, wait_kernels: bool,
                    fast_math: bool) -> None:
    """Fills the kernel tier's options: ``kernels`` (checked), else the
    executable's choice; without the JIT, one RuntimeWarning when they
    were given."""
    choice = exe.kernels if kernels is None else kernels
    opts.no_kernels = choice is False
    if not _vmjit.jit_available:
        if choice not in (None, False) or wait_kernels or fast_math:
            warnings.warn("the JIT is not in this build: kernels, "
                          "wait_kernels and fast_math are ignored (TVM's "
                          "machine code runs)", RuntimeWarning, stacklevel=3)
        return
    if choice is False:
        return
    if choice is None:
        opts.find_kernels = exe.name is not None
        opts.program = exe.name or ""
    else:
        opts.kernels = str(choice)
    opts.wait_kernels = bool(wait_kernels)
    opts.fast_math = bool(fast_math)


def _keep_kernel_tier(exe: Executable, opts: _vmjit.MachineOptions,
                      tier: object) -> None:
    """Keeps a VM's kernel tier alive with its executable: later VMs of it
    with the same options share the compiled kernels."""
    if tier is not None:
        key = (opts.kernels, opts.program, opts.fast_math, opts.cache_dir,
               opts.no_cache, tuple(opts.libs))
        exe._kernel_tiers[key] = tier


class VirtualMachine:
    """Runs an :class:`Executable` (or a program file's path).

    ``mode``: "tiered" (the interpreter first, hot functions moving up to
    native code), "bytecode" (the interpreter only), "baseline" or
    "compiled" (every function at that JIT tier before the first call). A
    device such as ``vmjit.cpu()`` in its place is accepted, as in
    ``tvm.relax.VirtualMachine(ex, tvm.cpu())``; vmjit runs on the CPU.

    ``kernels``: TVM's kernels compiled for this CPU from their LLVM
    bitcode (the kernel tier, docs/tvm.md): None, the executable's choice
    (``load(path, kernels=...)``; by default the ``STEM.bc`` beside the
    program's file, if there is one); a path, that bitcode file; False,
    TVM's machine code only. The compile runs in the background (TVM's
    code runs until the compiled kernels are swapped in), or before the VM
    is made with ``wait_kernels=True``; ``fast_math=True`` lets it fuse and
    reassociate floating-point operations (the outputs then differ from
    TVM's in the last bits). A bitcode that does not match the model is
    one RuntimeWarning, and TVM's code runs; ``stats()["kernel_tier"]``
    says where the tier stands.

    Calls (``vm["main"](x)``) release the GIL. One VirtualMachine runs one
    call at a time: a second thread calling it waits; create one per thread
    to run in parallel (they may share the executable).
    """

    def __init__(self, exe: Union[Executable, PathLike],
                 mode: Union[str, DeviceLike, List[DeviceLike]] = "tiered",
                 *, tier_threshold: Optional[int] = None,
                 baseline_threshold: Optional[int] = None,
                 opt_level: Optional[int] = None,
                 libs: Iterable[PathLike] = (),
                 max_steps: Optional[int] = None,
                 timeout: Optional[float] = None,
                 cache_dir: Optional[PathLike] = None, no_cache: bool = False,
                 device: Union[DeviceLike, List[DeviceLike], None] = None,
                 profile: bool = False, kernels: KernelsChoice = None,
                 wait_kernels: bool = False,
                 fast_math: bool = False) -> None:
        if _is_device(mode) or (isinstance(mode, list) and mode
                                and all(_is_device(d) for d in mode)):
            device, mode = mode, "tiered"
        if device is not None:
            _check_devices(device)
        if not isinstance(mode, str) or mode not in MODES:
            raise ValueError("mode %r: expected one of %s"
                             % (mode, ", ".join(MODES)))
        kernels = _checked_kernels(kernels)
        if not isinstance(exe, Executable):
            exe = load(exe)
        aot = exe.aot_producer is not None and mode in ("compiled", "tiered")
        if mode != "bytecode" and not _vmjit.jit_available and not aot:
            warnings.warn("the JIT is not in this build: mode %r runs on the "
                          "interpreter" % mode, RuntimeWarning, stacklevel=2)
        opts = _vmjit.MachineOptions()
        opts.mode = mode
        opts.tier_threshold = int(tier_threshold or 0)
        opts.baseline_threshold = int(baseline_threshold or 0)
        if opt_level is not None:
            opts.opt_level = int(opt_level)
        opts.cache_dir = str(cache_dir or "")
        opts.no_cache = bool(no_cache)
        opts.libs = [str(p) for p in libs]
        opts.max_steps = _steps(max_steps)
        opts.timeout = _seconds(timeout)
        _kernel_options(opts, exe, kernels, wait_kernels, fast_math)
        self.executable = exe
        self._m = _vmjit.Machine(exe._handle, opts)
        _keep_kernel_tier(exe, opts, self._m.kernel_tier())
        self._limits = (opts.max_steps, opts.timeout)
        self._funcs: Dict[str, _vmjit.Function] = {}
        # The parameters of functions bind_params changed, by name.
        self._params: Dict[str, Tuple[str, ...]] = {}

    @property
    def mode(self) -> str:
        """The execution mode: "bytecode", "baseline", "compiled" or "tiered"."""
        return self._m.mode

    def __getitem__(self, name: str) -> _vmjit.Function:
        """The function ``name`` (or a function saved with save_function),
        as a callable."""
        f = self._funcs.get(name)
        if f is None:
            f = self._funcs[name] = self._m.function(name, False)
        return f

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self[name]
            return True
        except LookupError:
            return False

    # TVM's stateful API.
    def _positional(self, func_name: str, args: Tuple[object, ...],
                    kwargs: Dict[str, object]) -> Tuple[object, ...]:
        if not kwargs:
            return args
        info = {f.name: f for f in self.executable.functions}.get(func_name)
        params = self._params.get(func_name, info.params if info else ())
        if not params:
            raise TypeError("%s: keyword arguments need parameter names" % func_name)
        if len(args) > len(params):
            raise TypeError("%s takes %d arguments but %d were given" % (
                func_name, len(params), len(args) + len(kwargs)))
        # As a Python call binds them: no parameter given twice, none left
        # out (None is a value a program may be passed: never a default).
        missing = object()
        values = list(args) + [missing] * (len(params) - len(args))
        for key, value in kwargs.items():
            if key not in params:
                raise TypeError("%s has no parameter %r" % (func_name, key))
            index = params.index(key)
            if index < len(args):
                raise TypeError("%s got multiple values for parameter %r" % (
                    func_name, key))
            values[index] = value
        absent = [p for p, v in zip(params, values) if v is missing]
        if absent:
            raise TypeError("%s is missing the argument%s %s" % (
                func_name, "s" if len(absent) > 1 else "",
                ", ".join(repr(p) for p in absent)))
        return tuple(values)

    def set_input(self, func_name: str, *args: object,
                  **kwargs: object) -> None:
        """Stores the arguments of a later invoke_stateful(func_name)."""
        self._m.set_input(func_name, self._positional(func_name, args, kwargs))

    def invoke_stateful(self, func_name: str) -> None:
        """Calls func_name with the stored inputs; keeps the result."""
        self._m.invoke_stateful(func_name)

    def get_outputs(self, func_name: str) -> Value:
        """The result of the last invoke_stateful(func_name)."""
        return self._m.get_output(func_name)

    def save_function(self, func_name: str, saved_name: str, *args: object,
                      include_return: bool = True, **kwargs: object) -> None:
        """Binds every argument: vm[saved_name]() then calls
        func_name(*args) (returning None with include_return=False)."""
        args = self._positional(func_name, args, kwargs)
        self._m.save_function(func_name, saved_name, args)
        self._funcs.pop(saved_name, None)
        if not include_return:
            self._funcs[saved_name] = self._m.function(saved_name, True)

    def bind_params(self, func_name: str,
                    params: Dict[Union[str, int], object]
                    ) -> List[Dict[str, Any]]:
        """Binds parameters of ``func_name`` (by name, or by 0-based index)
        to values given once, as TVM's ``relax.transform.BindParams`` does
        at compile time: the function then takes only its other parameters,
        in order. Kernel calls the kernels' effects prove to read only bound
        values and constants and to write fresh buffers run now, once; the
        list of those calls (dicts with function, callee, instruction) is
        returned, and is ``stats()["bind"]["folded"]``. Bound arrays are
        read, never written: a kernel that would write one is a
        ``vmjit.errors.BindError``, as are an unknown or repeated parameter
        and a value the function's checks refuse. The VM is made again for
        the bound program (its limits and tier kept; functions taken with
        ``vm[name]`` before, saved functions and stored inputs are not)."""
        info = {f.name: f for f in self.executable.functions}.get(func_name)
        names = self._params.get(func_name, info.params if info else ())
        folded = self._m.bind_params(func_name, dict(params))
        bound = {names[k] if isinstance(k, int) and 0 <= k < len(names)
                 else k for k in params}
        self._params[func_name] = tuple(n for n in names if n not in bound)
        self._funcs.clear()
        return folded

    def time_evaluator(self, func_name: str, dev: object = None,
                       number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0,
                       cooldown_interval_ms: float = 0,
                       repeats_to_cooldown: int = 1, f_preproc: str = ""
                       ) -> Callable[..., BenchmarkResult]:
        """A function that, called with the arguments, times func_name:
        ``repeat`` repeats of ``number`` calls each (more if a repeat would
        take less than min_repeat_ms), after one untimed call, in a C++ loop
        with the GIL released. Returns a :class:`BenchmarkResult`."""
        if number < 1 or repeat < 1:
            raise ValueError("number and repeat must be at least 1")
        if f_preproc:
            raise ValueError("f_preproc is not supported")

        def evaluate(*args: object) -> BenchmarkResult:
            return BenchmarkResult(self._m.time_calls(
                func_name, args, int(number), int(repeat),
                float(min_repeat_ms), float(cooldown_interval_ms)))

        return evaluate

    def profile(self, func_name: str, *args: object,
                **kwargs: object) -> ProfileReport:
        """Calls ``func_name(*args)`` once with the VM's profiler on and
        returns a :class:`ProfileReport`: per callee (the packed functions,
        TVM's ops, and bytecode functions it calls), the calls and the time
        spent in them, as ``tvm.relax.VirtualMachine.profile``. During the
        call bytecode functions run on the interpreter, which times every
        call it makes; the result of the call is dropped."""
        args = self._positional(func_name, args, kwargs)
        total_ns, rows = self._m.profile_call(func_name, args)
        return ProfileReport(total_ns, rows)

    def set_instrument(self, instrument: Optional[Callable[..., object]]
                       ) -> None:
        """Calls ``instrument(func, func_symbol, before_run, ret_value,
        *args)`` before and after every Call instruction (then every function
        runs on the interpreter). Returning InstrumentReturnKind.SKIP_RUN
        before a call skips it. None removes the instrument."""
        self._m.set_instrument(instrument)

    # Statistics and control.
    def stats(self) -> Stats:
        """Per function: calls, the tier it runs in now, calls per tier,
        compile time: a dict with the keys of ``vmjit run --stats --json``
        (mode, thresholds, functions), printing as a table."""
        functions, table = self._m.stats()
        doc: Dict[str, Any] = {"mode": self.mode}
        doc.update(self._m.thresholds())
        doc.update(json.loads(functions))
        return Stats(doc, "mode: %s\n%s" % (self.mode, table))

    def wait_compiles(self) -> None:
        """Waits until background tier-2 compiles are done."""
        self._m.wait_compiles()

    def interrupt(self) -> None:
        """Stops the running call (from any thread): it raises
        vmjit.InterruptedError at its next step. A request made while no
        call runs stops the next one; clear_interrupt() withdraws it."""
        self._m.interrupt()

    def clear_interrupt(self) -> None:
        """Withdraws an interrupt() that no call has taken yet."""
        self._m.clear_interrupt()

    @property
    def max_steps(self) -> Optional[int]:
        """The step limit of every call (None: no limit); settable."""
        return self._limits[0] or None

    @max_steps.setter
    def max_steps(self, value: Optional[int]) -> None:
        self._limits = (_steps(value), self._limits[1])
        self._m.set_limits(*self._limits)

    @property
    def timeout(self) -> Optional[float]:
        """The time limit of every call in seconds (None: no limit); settable."""
        return self._limits[1] or None

    @timeout.setter
    def timeout(self, value: Optional[float]) -> None:
        self._limits = (self._limits[0], _seconds(value))
        self._m.set_limits(*self._limits)

    def __repr__(self) -> str:
        return "<vmjit.VirtualMachine %s, mode=%s>" % (
            self.executable.name or "(assembled)", self.mode)
