#!/usr/bin/env python3
"""The cost of one call into vmjit from Python, per execution mode.

    PYTHONPATH=build/python python3 benchmarks/python/call_overhead.py
        [--repetitions 7] [--number 200000] [--modes bytecode,compiled]
        [--json OUT]

Times, with timeit, calls of trivial functions (Inputs below) through a
held function object `f = vm["f"]` and through `vm["f"]` each time:
  int      f(1)      an int in, the same int out
  array    g(a)      a float32 NumPy array [4] in, an int out
  array_id f(a)      the array in, the same tensor out (a vmjit.Tensor)
  python   a Python function of one argument (the floor of a call here)
  wrap     vmjit.tensor(a): the array as a vmjit.Tensor (no copy)
  memoryview  memoryview(a): Python's own wrapping of the array's buffer
Each figure is the median over the repetitions of the mean per call, in
nanoseconds. docs/python.md quotes a run.
"""
import argparse
import json
import statistics
import sys
import timeit

import numpy as np

import vmjit

PROGRAM = """
.func ident(x)
  ret %x
.end
.func drop(x)
  %r = call scalar.add(1, 2)
  ret %r
.end
"""


def median_ns(fn, number, repetitions):
    times = timeit.repeat(fn, number=number, repeat=repetitions)
    return statistics.median(times) / number * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=7)
    ap.add_argument("--number", type=int, default=200000)
    ap.add_argument("--modes", default="bytecode,compiled")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    exe = vmjit.assemble(PROGRAM, "call_overhead.vmasm")
    a = np.zeros(4, "float32")
    rows = []

    def python_floor(x):
        return x

    floor = median_ns(lambda: python_floor(1), args.number, args.repetitions)
    wrap = median_ns(lambda: vmjit.tensor(a), args.number, args.repetitions)
    view = median_ns(lambda: memoryview(a), args.number, args.repetitions)
    for mode in args.modes.split(","):
        vm = vmjit.VirtualMachine(exe, mode)
        f, g = vm["ident"], vm["drop"]
        cases = {
            "int": lambda: f(1),
            "int_lookup": lambda: vm["ident"](1),
            "array": lambda: g(a),
            "array_lookup": lambda: vm["drop"](a),
            "array_id": lambda: f(a),
        }
        for name, fn in cases.items():
            rows.append({"mode": mode, "case": name,
                         "ns": median_ns(fn, args.number, args.repetitions)})
    print("%-10s %-14s %10s" % ("mode", "case", "ns/call"))
    print("%-10s %-14s %10.0f" % ("-", "python", floor))
    print("%-10s %-14s %10.0f" % ("-", "wrap", wrap))
    print("%-10s %-14s %10.0f" % ("-", "memoryview", view))
    for r in rows:
        print("%-10s %-14s %10.0f" % (r["mode"], r["case"], r["ns"]))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"python_floor_ns": floor, "wrap_ns": wrap,
                       "memoryview_ns": view, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
