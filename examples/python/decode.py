#!/usr/bin/env python3
"""One decoding step of a 2-layer transformer decoder, driven from Python.

    PYTHONPATH=build/python python3 examples/python/decode.py [--calls N]
                                                              [--mode MODE]

Loads examples/decode.vmasm (its weights are .npy files beside it), calls
`main` on a NumPy input N times (default 2000) in tiered mode, checks the
result against the NumPy reference (examples/scripts/reference.py), prints
the tier-up statistics (which tier each function reached, calls per tier,
compile time) and the time per call measured by time_evaluator.
"""
import argparse
import os
import sys

import numpy as np

import vmjit

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(EXAMPLES, "scripts"))
import reference  # noqa: E402  (examples/scripts/reference.py)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--mode", default="tiered", choices=vmjit.virtual_machine.MODES)
    args = ap.parse_args()

    exe = vmjit.load(os.path.join(EXAMPLES, "decode.vmasm"))
    vm = vmjit.VirtualMachine(exe, mode=args.mode)
    weights = os.path.join(EXAMPLES, "weights", "decode")
    x = np.load(os.path.join(weights, "x.npy"))  # float32 [1, 64]

    for _ in range(args.calls):
        y = vm["main"](x)  # x goes in without a copy
    vm.wait_compiles()
    # A call returns a vmjit.Value (any value a program can return): this
    # one is a tensor, as mypy learns from the isinstance.
    assert isinstance(y, vmjit.Tensor), y

    got = y.numpy()  # shares y's memory
    want = reference.decode(weights)
    err = float(np.max(np.abs(got - want)))
    ok = np.allclose(got, want, rtol=reference.RTOL, atol=reference.ATOL)
    print("main(x): %s %s, max abs difference from NumPy %.2g: %s" % (
        y.dtype, y.shape, err, "matches NumPy" if ok else "DOES NOT MATCH"))

    print("\n%d calls in %s mode:" % (args.calls, vm.mode))
    print(vm.stats())

    timer = vm.time_evaluator("main", number=200, repeat=5)
    r = timer(x)
    print("\ntime per call: median %.1f us over %d repeats" % (
        r.median * 1e6, len(r.results)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
