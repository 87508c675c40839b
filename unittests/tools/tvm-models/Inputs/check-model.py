"""Runs a model TVM's compiler wrote in every mode of `vmjit run` and
compares every output with TVM's.

    check-model.py NAME --outdir DIR [--ref TVM_OUT.npy ...] [--vmjit PATH]
                   -- MODEL ARGS...

For each mode of VMJIT_RUN_MODES (';'-separated, as lit.cfg.py sets it;
"tiered --tier-threshold 1" is a mode with its options), runs
`vmjit run --mode MODE MODEL ARGS... --output DIR/<mode>/out.npy`, then
compares what it wrote with the --ref files, in order: one ref is a single
tensor result (out.npy), several are a tuple's elements (out.0.npy,
out.1.npy, ... as docs/command.md names them). Floating-point outputs
must be within max|got - ref| <= 1e-5 * max(1, max|ref|), or with --exact
TVM's bits (what the kernel tier promises); integer and bool outputs must
be equal; dtype and shape must be TVM's. Every mode is run
and every problem reported (one line each, naming model, mode, output and
error) before the exit status says whether any failed (1) or not (0).
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np

RTOL = 1e-5


def compare(got, ref, exact=False):
    """None when `got` matches `ref` (bit for bit when `exact`), else what
    is wrong."""
    if got.dtype != ref.dtype:
        return "dtype %s, TVM's is %s" % (got.dtype, ref.dtype)
    if got.shape != ref.shape:
        return "shape %s, TVM's is %s" % (list(got.shape), list(ref.shape))
    if exact and ref.dtype.kind == "f":
        got = got.view("u%d" % ref.dtype.itemsize)
        ref = ref.view("u%d" % ref.dtype.itemsize)
    if ref.dtype.kind in "biu":
        if np.array_equal(got, ref):
            return None
        bad = np.argwhere(got != ref)
        idx = tuple(int(i) for i in bad[0])
        return ("%d of %d elements differ (exact comparison); first at %s: got %s, "
                "TVM's %s" % (len(bad), ref.size, list(idx), got[idx], ref[idx]))
    if ref.size == 0:
        return None
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    tol = RTOL * max(1.0, float(np.max(np.abs(r))))
    if np.isnan(g).any() and not np.isnan(r).any():
        return "NaN in the result"
    err = float(np.nanmax(np.abs(g - r))) if g.size else 0.0
    if err <= tol:
        return None
    idx = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(np.abs(g - r))), r.shape))
    return ("max abs error %.3g > tolerance %.3g; worst at %s: got %r, TVM's %r"
            % (err, tol, list(idx), float(g[idx]), float(r[idx])))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--outdir", required=True)
    parser.add_argument("--ref", action="append", default=[])
    parser.add_argument("--vmjit", default=os.environ.get("VMJIT", "vmjit"))
    parser.add_argument("--exact", action="store_true",
                        help="floating-point outputs must be TVM's bits")
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.error("give the model and its arguments after --")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    run_args = argv[split + 1:]
    if not run_args or not args.ref:
        parser.error("give the model, its arguments and at least one --ref")
    modes = [m for m in os.environ.get("VMJIT_RUN_MODES", "").split(";") if m.strip()]
    if not modes:
        sys.exit("check-model.py: VMJIT_RUN_MODES is not set (run the tests with lit)")
    refs = [np.load(r) for r in args.ref]
    shutil.rmtree(args.outdir, ignore_errors=True)
    failures = []
    checked = 0
    for mode in modes:
        words = shlex.split(mode)
        label = "-".join(w.lstrip("-") for w in words)
        outdir = os.path.join(args.outdir, label)
        os.makedirs(outdir)
        cmd = ([args.vmjit, "run", "--mode"] + words + run_args
               + ["--output", os.path.join(outdir, "out.npy")])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            msg = proc.stderr.strip().splitlines()
            failures.append("%s: mode %s: vmjit exited with status %d: %s"
                            % (args.name, label, proc.returncode,
                               msg[0] if msg else "(no message)"))
            continue
        if len(refs) == 1:
            names = ["out.npy"]
        else:
            names = ["out.%d.npy" % i for i in range(len(refs))]
        written = sorted(os.listdir(outdir))
        extra = sorted(set(written) - set(names))
        if extra:
            failures.append("%s: mode %s: wrote %s, TVM's result has %d output(s) (%s)"
                            % (args.name, label, ", ".join(written), len(refs),
                               ", ".join(names)))
            continue
        for i, (fname, ref) in enumerate(zip(names, refs)):
            out = "out" if len(refs) == 1 else "out%d" % i
            path = os.path.join(outdir, fname)
            if not os.path.exists(path):
                failures.append("%s: mode %s: output %s: %s was not written"
                                % (args.name, label, out, fname))
                continue
            problem = compare(np.load(path), ref, args.exact)
            if problem:
                failures.append("%s: mode %s: output %s (vs %s): %s"
                                % (args.name, label, out, os.path.basename(args.ref[i]),
                                   problem))
            else:
                checked += 1
    for line in failures:
        print("check-model.py: FAIL: " + line, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("%s: %d output(s) match TVM's in %d mode(s): %s"
          % (args.name, len(refs), len(modes),
             ", ".join(shlex.split(m)[0] for m in modes)))


if __name__ == "__main__":
    main()
