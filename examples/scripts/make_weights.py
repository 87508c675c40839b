#!/usr/bin/env python3
"""Writes every .npy the examples use, deterministically, into examples/weights/.

    python3 examples/scripts/make_weights.py [--out DIR]

mlp/ (examples/mlp.vmasm): a batch-1 MLP 64 -> 64 -> 64 -> 16.
    x.npy [1,64], w1.npy [64,64], b1.npy [64], w2.npy [64,64], b2.npy [64],
    w3.npy [64,16], b3.npy [16]. Every value is a small multiple of a power
    of two (x: k/4, weights and biases: k/16), chosen so that every partial
    sum of every matmul is exactly representable in float32: the result is
    the same bit for bit whatever order a BLAS library sums in, so a test
    can check it exactly. The script asserts that.

decode/ (examples/decode.vmasm): a 2-layer transformer decoder step,
    hidden 64, one attention head, an MLP of 128, a key/value cache of 8
    past positions. x.npy [1,64]; per layer L (0, 1): lL_ln1.npy [64],
    lL_wq/wk/wv/wo.npy [64,64], lL_kcache.npy / lL_vcache.npy [8,64],
    lL_ln2.npy [64], lL_up.npy [64,128], lL_down.npy [128,64]; ln_f.npy [64].

Everything is float32, from numpy's default_rng with a fixed seed, so the
files are the same on every run.
"""
import argparse
import os

import numpy as np

SEED = 20240611
HIDDEN = 64
MLP_OUT = 16
FFN = 128
CACHE = 8
LAYERS = 2


def dyadic(rng, shape, denom, lo, hi):
    """Random integers in [lo, hi] divided by `denom`, as float32."""
    return (rng.integers(lo, hi + 1, size=shape) / denom).astype(np.float32)


def check_exact_matmul(a, w, name):
    """Asserts that a @ w sums exactly in float32, in any order.

    If every product is a multiple of 2^-g and the sum of their absolute
    values stays below 2^(24-g), every partial sum has at most 24
    significant bits."""
    a64 = a.astype(np.float64)
    w64 = w.astype(np.float64)
    prods = np.abs(a64)[..., :, None] * np.abs(w64)
    g = 0
    while not np.all(np.floor(prods * 2.0**g) == prods * 2.0**g):
        g += 1
        assert g < 60, name
    bound = prods.sum(axis=-2).max()
    assert bound < 2.0 ** (24 - g), (
        f"{name}: partial sums may round (bound {bound}, granularity 2^-{g})")


def make_mlp(rng, out):
    d = os.path.join(out, "mlp")
    os.makedirs(d, exist_ok=True)
    t = {
        "x": dyadic(rng, (1, HIDDEN), 4, -4, 4),
        "w1": dyadic(rng, (HIDDEN, HIDDEN), 16, -3, 3),
        "b1": dyadic(rng, (HIDDEN,), 16, -2, 2),
        "w2": dyadic(rng, (HIDDEN, HIDDEN), 16, -3, 3),
        "b2": dyadic(rng, (HIDDEN,), 16, -2, 2),
        "w3": dyadic(rng, (HIDDEN, MLP_OUT), 16, -3, 3),
        "b3": dyadic(rng, (MLP_OUT,), 16, -2, 2),
    }
    h = t["x"]
    for i in (1, 2, 3):
        check_exact_matmul(h, t[f"w{i}"], f"mlp layer {i}")
        h = h.astype(np.float64) @ t[f"w{i}"].astype(np.float64) + t[f"b{i}"]
        assert np.all(h.astype(np.float32) == h), f"mlp layer {i} rounds"
        if i < 3:
            h = np.maximum(h, 0.0)
    for name, a in t.items():
        np.save(os.path.join(d, name + ".npy"), a)


def make_decode(rng, out):
    d = os.path.join(out, "decode")
    os.makedirs(d, exist_ok=True)

    def normal(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {"x": normal((1, HIDDEN), 1.0)}
    for layer in range(LAYERS):
        p = f"l{layer}_"
        t[p + "ln1"] = (1.0 + normal((HIDDEN,), 0.1)).astype(np.float32)
        for w in ("wq", "wk", "wv", "wo"):
            t[p + w] = normal((HIDDEN, HIDDEN), 1.0 / np.sqrt(HIDDEN))
        t[p + "kcache"] = normal((CACHE, HIDDEN), 1.0)
        t[p + "vcache"] = normal((CACHE, HIDDEN), 1.0)
        t[p + "ln2"] = (1.0 + normal((HIDDEN,), 0.1)).astype(np.float32)
        t[p + "up"] = normal((HIDDEN, FFN), 1.0 / np.sqrt(HIDDEN))
        t[p + "down"] = normal((FFN, HIDDEN), 1.0 / np.sqrt(FFN))
    t["ln_f"] = (1.0 + normal((HIDDEN,), 0.1)).astype(np.float32)
    for name, a in t.items():
        np.save(os.path.join(d, name + ".npy"), a)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "weights"),
                    help="output directory (default: examples/weights)")
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    make_mlp(rng, args.out)
    make_decode(rng, args.out)


if __name__ == "__main__":
    main()
