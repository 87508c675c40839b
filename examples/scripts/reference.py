#!/usr/bin/env python3
"""Expected results of the mlp and decode examples, computed in NumPy.

    reference.py mlp|decode [--weights DIR] [--print | --check]

Reads the same .npy files as examples/mlp.vmasm and examples/decode.vmasm
(examples/weights/NAME/, input x.npy) and computes the result in float64.

--print   print the expected result as the JSON of `vmjit run --json`
          ({"result": {"dtype": ..., "shape": ..., "data": ...}})
--check   read `vmjit run --json` output (or a bare tensor value) on stdin
          and compare its result with the expected one (rtol 1e-4,
          atol 1e-5); exit 0 when it matches, 1 with a message naming the
          worst element when it does not
Without either: --check when something is piped in, else --print.
"""
import argparse
import json
import math
import os
import sys
from typing import Any, Callable, Dict, NoReturn

import numpy as np
import numpy.typing as npt

#: The arrays of the reference: float64.
Array = npt.NDArray[np.float64]

RTOL = 1e-4
ATOL = 1e-5
EPS = 1e-5
LAYERS = 2


def load(d: str, name: str) -> Array:
    a: Array = np.load(os.path.join(d, name + ".npy")).astype(np.float64)
    return a


def mlp(d: str) -> Array:
    h = load(d, "x")
    for i in (1, 2, 3):
        h = h @ load(d, f"w{i}") + load(d, f"b{i}")
        if i < 3:
            h = np.maximum(h, 0.0)
    return h


def rms_norm(x: Array, w: Array) -> Array:
    y: Array = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w
    return y


def softmax(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    y: Array = e / e.sum(axis=-1, keepdims=True)
    return y


def gelu(x: Array) -> Array:
    erf = np.vectorize(math.erf)
    y: Array = 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    return y


def decode(d: str) -> Array:
    x = load(d, "x")
    for layer in range(LAYERS):
        w: Callable[[str], Array] = lambda n: load(d, f"l{layer}_{n}")
        h = rms_norm(x, w("ln1"))
        q, k, v = h @ w("wq"), h @ w("wk"), h @ w("wv")
        keys = np.concatenate([w("kcache"), k])    # [9, 64]
        values = np.concatenate([w("vcache"), v])
        p = softmax(q @ keys.T / math.sqrt(q.shape[-1]))
        x = x + (p @ values) @ w("wo")
        u = rms_norm(x, w("ln2")) @ w("up")
        x = x + gelu(u) @ w("down")
    return rms_norm(x, load(d, "ln_f"))


MODELS: Dict[str, Callable[[str], Array]] = {"mlp": mlp, "decode": decode}


def to_json(a: Array) -> Dict[str, Any]:
    return {"result": {"dtype": "float32", "shape": list(a.shape),
                       "data": a.astype(np.float32).astype(np.float64).tolist()}}


def fail(msg: str) -> NoReturn:
    print(f"reference.py: {msg}", file=sys.stderr)
    sys.exit(1)


def check(name: str, expected: Array, text: str) -> None:
    try:
        got = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{name}: the input is not JSON ({e}): {text[:200]!r}")
    if isinstance(got, dict) and "result" in got:
        got = got["result"]
    elif isinstance(got, dict) and "error" in got:
        fail(f"{name}: vmjit reported an error: {json.dumps(got['error'])}")
    if not isinstance(got, dict) or "data" not in got:
        fail(f"{name}: expected a tensor result, got {json.dumps(got)[:200]}")
    if got.get("dtype") != "float32":
        fail(f"{name}: dtype is {got.get('dtype')}, expected float32")
    if list(got.get("shape", [])) != list(expected.shape):
        fail(f"{name}: shape is {got.get('shape')}, expected "
             f"{list(expected.shape)}")
    data = got["data"]
    bad_strings = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    try:
        arr = np.vectorize(lambda v: bad_strings.get(v, v) if isinstance(
            v, str) else v, otypes=[float])(np.array(data, dtype=object))
    except (TypeError, ValueError) as e:
        fail(f"{name}: data is not a nested list of numbers ({e})")
    if arr.shape != expected.shape:
        fail(f"{name}: data has shape {list(arr.shape)}, expected "
             f"{list(expected.shape)}")
    err = np.abs(arr - expected)
    limit = ATOL + RTOL * np.abs(expected)
    bad = ~(err <= limit)   # NaN counts as a mismatch
    if bad.any():
        excess = np.where(np.isnan(err), np.inf, err - limit)
        i = np.unravel_index(np.argmax(excess), excess.shape)
        fail(f"{name}: {int(bad.sum())} of {expected.size} elements differ "
             f"from the reference (rtol {RTOL}, atol {ATOL}); worst at index "
             f"{list(map(int, i))}: got {arr[i]!r}, expected "
             f"{float(expected[i])!r}")
    print(f"{name}: {expected.size} elements match the reference "
          f"(max abs error {float(err.max()):.3g})")


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(
        description="Expected results of the mlp and decode examples.")
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--weights", help="weights directory "
                    "(default: examples/weights/MODEL)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--print", action="store_true", dest="print_",
                   help="print the expected result as JSON")
    g.add_argument("--check", action="store_true",
                   help="compare `vmjit run --json` output on stdin")
    args = ap.parse_args()
    d = args.weights or os.path.join(here, "..", "weights", args.model)
    expected = MODELS[args.model](d)
    text = None
    if not args.print_ and (args.check or not sys.stdin.isatty()):
        text = sys.stdin.read()
        if not text.strip():
            if args.check:
                fail(f"{args.model}: nothing on stdin to check")
            text = None
    if text is None:
        print(json.dumps(to_json(expected), separators=(",", ":")))
        return
    check(args.model, expected, text)


if __name__ == "__main__":
    main()
