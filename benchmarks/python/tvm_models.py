#!/usr/bin/env python3
"""Time per call of the models TVM's compiler wrote, in each vmjit mode.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/tvm_models.py
        [--models DIR] [--modes bytecode,baseline,compiled,tiered]
        [--target-ms 200] [--repeat 7] [--json OUT]
        [--kernels | --no-kernels] [--bind]

For each model of DIR (default: ../shared/tvm-models next to the source
tree; its README.md describes them; the `llm` folder is left out), each
function and input set, and each mode: loads the library with
`vmjit.load`, makes a `vmjit.VirtualMachine(exe, mode)`, checks the result
against TVM's out*.npy (max abs error <= 1e-5 * max(1, max|ref|)), then
times it in-process as TVM's figures were timed (kvcache/../common.py:
bench): a 50 ms estimate of the time per call, N calls per repeat so that
a repeat lasts about --target-ms (10 <= N <= 200000), then
`vm.time_evaluator(name, number=N, repeat=7)` and the median of the 7
repeats. First 1100 untimed calls (past the default tier threshold of
1000) and a wait for background compiles: tiered mode, with the default
thresholds, is timed on the code it settles on.

--kernels / --no-kernels: the kernel tier (model.bc beside the library
compiled for this CPU, docs/python.md) on, compiled before the VM is made
(`kernels=None, wait_kernels=True`), or off (`kernels=False`: TVM's
machine code from the library). Without either, the VM's default: the
tier when model.bc is there, compiled in the background (the warm-up's
wait for compiles lets it finish before timing).

--bind: also a row per model whose weights are arguments (mlp: every
argument after x) with those weights bound once by `vm.bind_params`
(TVM's BindParams at run time; with the kernel tier the weight transposes
fold at bind time), each call passing x alone.

Prints a Markdown table, microseconds per call: TVM's figure is the text
of the README's table (measured separately, with TVM's own VM: compare
only figures of one run on one machine). `compiled_mode.so` is the mlp
built with TVM's exec_mode="compiled" (its functions are TVM-native code,
run by vmjit), beside vmjit's own modes of mlp/model.so. A model that
fails to load or run, or whose result is not TVM's, has the error in its
row's notes (its cells "—" or "wrong") instead of stopping the script.
"""
import argparse
import json
import os
import pathlib
import platform
import re
import sys
import time

import numpy as np

import vmjit

MODES = ("bytecode", "baseline", "compiled", "tiered")
ROOT = pathlib.Path(__file__).resolve().parents[2]
RTOL = 1e-5
WARMUP_CALLS = 1100

_MLP_IN = ["in%d.npy" % i for i in range(5)]
_CTL_IN = ["in%d.npy" % i for i in range(3)]
_CTL_IN_FALSE = ["in%d_false.npy" % i for i in range(3)]
# (label, folder, library, function, input folder, inputs, TVM's outputs,
#  which part of the README's figure for the folder: an index into its
#  " / "-separated parts, or a regex the part must match; None: no figure).
CASES = [
    ("mlp", "mlp", "model.so", "main", "mlp", _MLP_IN, ["out.npy"], 0),
    ("compiled_mode.so (mlp, TVM exec_mode=compiled)", "compiled_mode", "compiled_mode.so",
     "main", "compiled_mode", _MLP_IN, ["out.npy"], 0),
    ("dynshape n=3", "dynshape", "model.so", "main", "dynshape",
     ["in0.npy", "in1.npy", "in2.npy"], ["out0.npy", "out1.npy"], 0),
    ("dynshape n=5", "dynshape", "model.so", "main", "dynshape",
     ["in0_n5.npy", "in1_n5.npy", "in2_n5.npy"], ["out0_n5.npy", "out1_n5.npy"], None),
    ("control (true)", "control", "model.so", "main", "control", _CTL_IN,
     ["out0.npy", "out1.npy", "out2.npy"], 0),
    ("control (false)", "control", "model.so", "main", "control", _CTL_IN_FALSE,
     ["out0_false.npy", "out1_false.npy", "out2_false.npy"], None),
    ("control_compiled_mode.so (true, TVM exec_mode=compiled)", "compiled_mode",
     "control_compiled_mode.so", "main", "control", _CTL_IN,
     ["control_out0.npy", "control_out1.npy", "control_out2.npy"], 1),
    ("many_small", "many_small", "model.so", "main", "many_small", ["in0.npy"],
     ["out.npy"], 0),
    ("kvcache run3", "kvcache", "model.so", "run3", "kvcache",
     ["in0.npy", "in1.npy", "in2.npy"], ["out.npy"], 0),
]
# With --bind, a row after the case of the same label: (label of the row,
# label of the case, how many leading arguments stay arguments; the rest
# are bound by vm.bind_params).
BOUND = [("mlp, weights bound", "mlp", 1)]


def readme_figures(models):
    """{folder: the text of the README table's last column}."""
    figures = {}
    try:
        text = (models / "README.md").read_text()
    except OSError:
        return figures
    for line in text.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|", line)
        if m:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            figures[m.group(1)] = cells[-1]
    return figures


def tvm_figure(figures, folder, part):
    if part is None or folder not in figures:
        return "—"
    parts = [p.strip() for p in figures[folder].split(" / ")]
    return parts[part] if part < len(parts) else figures[folder]


def flatten(result):
    if isinstance(result, vmjit.Tensor):
        return [np.array(result.numpy(), copy=True)]
    if isinstance(result, tuple):
        return [a for item in result for a in flatten(item)]
    raise TypeError("result is not a tensor or a tuple: %r" % (result,))


def check(result, refs):
    """None when `result` is TVM's, else what differs."""
    outs = flatten(result)
    if len(outs) != len(refs):
        return "%d outputs, TVM's %d" % (len(outs), len(refs))
    for i, (got, ref) in enumerate(zip(outs, refs)):
        if got.dtype != ref.dtype or got.shape != ref.shape:
            return "output %d: %s%s, TVM's %s%s" % (i, got.dtype, list(got.shape),
                                                     ref.dtype, list(ref.shape))
        if ref.dtype.kind in "biu":
            if not np.array_equal(got, ref):
                return "output %d differs" % i
            continue
        if ref.size:
            r = ref.astype(np.float64)
            err = float(np.max(np.abs(got.astype(np.float64) - r)))
            tol = RTOL * max(1.0, float(np.max(np.abs(r))))
            if not err <= tol:
                return "output %d: max abs error %.3g > %.3g" % (i, err, tol)
    return None


def time_case(vm, func, args, target_ms, repeat):
    """(median µs per call, N), as common.py's bench times TVM."""
    f = vm[func]
    # Warm-up: past the default tier threshold (1000 calls), so that tiered
    # mode is timed on the code it settles on.
    for _ in range(WARMUP_CALLS):
        f(*args)
    vm.wait_compiles()
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < 0.05:
        f(*args)
        k += 1
    per = (time.perf_counter() - t0) / k
    number = int(max(10, min(200000, (target_ms / 1e3) / max(per, 1e-9))))
    res = vm.time_evaluator(func, number=number, repeat=repeat)(*args)
    return res.median * 1e6, number


def fmt_us(us):
    return "%.1f" % us if us >= 10 else "%.2f" % us


def first_line(e):
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__).replace("|", "\\|")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(ROOT.parent / "shared" / "tvm-models"))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--target-ms", type=float, default=200.0)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--kernels", action=argparse.BooleanOptionalAction, default=None,
                    help="the kernel tier on (compiled before timing) or off "
                         "(TVM's machine code); default: the VM's default")
    ap.add_argument("--bind", action="store_true",
                    help="also time the models with their weights bound (vm.bind_params)")
    args = ap.parse_args()
    models = pathlib.Path(args.models)
    if not models.is_dir():
        sys.exit("tvm_models.py: %s is absent (the models TVM's compiler wrote)" % models)
    modes = [m for m in args.modes.split(",") if m]
    if not vmjit.jit_available:
        modes = [m for m in modes if m == "bytecode"]
    elif not vmjit.baseline_available:
        modes = [m for m in modes if m != "baseline"]
    figures = readme_figures(models)
    vm_options = {}
    if args.kernels is False:
        vm_options["kernels"] = False
    elif args.kernels:
        vm_options.update(kernels=None, wait_kernels=True)
    cases = []
    for case in CASES:
        cases.append((case, None))
        if args.bind:
            cases += [((bound_label,) + case[1:], keep)
                      for bound_label, of, keep in BOUND if of == case[0]]

    rows = []
    executables = {}
    for (label, folder, library, func, in_folder, inputs, outs, part), keep in cases:
        row = {"model": label, "function": func, "tvm": tvm_figure(figures, folder, part),
               "us": {}, "number": {}, "notes": []}
        rows.append(row)
        key = (folder, library)
        if key not in executables:
            try:
                executables[key] = vmjit.load(str(models / folder / library))
            except Exception as e:  # noqa: BLE001 - reported in the row
                executables[key] = e
        exe = executables[key]
        if isinstance(exe, Exception):
            row["notes"].append("load: " + first_line(exe))
            print("%s: %s" % (label, first_line(exe)), file=sys.stderr)
            continue
        try:
            call_args = [np.load(models / in_folder / n) for n in inputs]
            refs = [np.load(models / folder / n) for n in outs]
        except OSError as e:
            row["notes"].append(first_line(e))
            continue
        for mode in modes:
            try:
                vm = vmjit.VirtualMachine(exe, mode, **vm_options)
                if keep is not None:
                    vm.bind_params(func, {i: call_args[i]
                                          for i in range(keep, len(call_args))})
                problem = check(vm[func](*call_args[:keep]), refs)
                if problem:
                    row["us"][mode] = "wrong"
                    row["notes"].append("%s: result is not TVM's: %s" % (mode, problem))
                    continue
                us, number = time_case(vm, func, call_args[:keep], args.target_ms,
                                       args.repeat)
                row["us"][mode] = us
                row["number"][mode] = number
                print("%s %s: %s us (N=%d)" % (label, mode, fmt_us(us), number),
                      file=sys.stderr)
            except Exception as e:  # noqa: BLE001 - reported in the row
                row["us"][mode] = "error"
                row["notes"].append("%s: %s" % (mode, first_line(e)))
                print("%s %s: %s" % (label, mode, first_line(e)), file=sys.stderr)

    loadavg = (" ".join(open("/proc/loadavg").read().split()[:3])
               if os.path.exists("/proc/loadavg") else "?")
    print("vmjit from %s; %s, %d CPUs, Python %s, NumPy %s; loadavg %s" % (
        pathlib.Path(vmjit.__file__).resolve().parents[1], platform.machine(),
        os.cpu_count(), platform.python_version(), np.__version__, loadavg))
    print("Medians of %d repeats of vm.time_evaluator(name, number=N, repeat=%d), "
          "µs per call, in-process; TVM's column is the text of %s/README.md (measured "
          "separately with TVM's VM; a bound row's is TVM's figure for the model, unbound).\n"
          % (args.repeat, args.repeat, models))
    print("Kernel tier: %s.\n" % {None: "the VM's default (model.bc beside the library, if any)",
                                   True: "on (--kernels)", False: "off (--no-kernels)"}[args.kernels])
    header = ["model", "function", "TVM's VM (README)"] + ["vmjit %s" % m for m in modes] + ["notes"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] * 3 + ["---:"] * len(modes) + ["---"]) + "|")
    for row in rows:
        cells = [row["model"], "`%s`" % row["function"], row["tvm"]]
        for m in modes:
            v = row["us"].get(m, "—")
            cells.append(fmt_us(v) if isinstance(v, float) else v)
        cells.append("; ".join(row["notes"]))
        print("| " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
