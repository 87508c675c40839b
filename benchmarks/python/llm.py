#!/usr/bin/env python3
"""The llm model's generate loop from Python, timed as TVM's figures were.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/llm.py
        [--models DIR] [--modes bytecode,baseline,compiled,tiered]
        [--rounds 7] [--json OUT] [--kernels | --no-kernels] [--bind]

Drives DIR/llm (default: ../shared/tvm-models next to the source tree)
with examples/python/generate.py's loop and times, per mode, what
DIR/llm/run_tvm.py times with TVM's runtime (perf_counter around each
part):
  prefill_call   vm["prefill"] alone, 8-token prompt, a fresh sequence;
  prefill_step   add_sequence + embed + reshape + begin_forward + prefill +
                 end_forward + argmax;
  decode_call    vm["decode"] alone (sequence length 9..58);
  decode_step    embed + reshape + begin_forward + decode + end_forward +
                 logits.numpy() + argmax.
Each round is run_tvm.py's procedure (30 prefills after 5 untimed, 50
decode steps after 5 untimed); a figure is the median over --rounds rounds
of each round's median. First 1100 untimed decode steps (past the default
tier threshold) and a wait for background compiles, so tiered mode is
timed on the code it settles on. The tokens are checked against
tokens.npy first.

--kernels / --no-kernels: the kernel tier (model.bc compiled for this
CPU) on, compiled before the generator's VM is made (`kernels=None,
wait_kernels=True`), or off (`kernels=False`: TVM's machine code from
model.so). Without either, the VM's default (the tier, compiled in the
background; the warm-up's wait for compiles lets it finish).

--bind: the weights (the params tuple) bound once by `vm.bind_params` in
embed, prefill and decode (as MLC-LLM's engine holds the weights it
loaded): each call passes the activations and the cache alone.

Prints a Markdown table in microseconds beside TVM's figures (the README's
text: measured separately, with TVM's own VM beside a busy process:
compare only figures of one run on one machine).
"""
import argparse
import importlib.util
import json
import pathlib
import re
import statistics
import sys
import time

import numpy as np

import vmjit
from vmjit import Shape

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODES = ("bytecode", "baseline", "compiled", "tiered")
KEYS = ("prefill_call", "prefill_step", "decode_call", "decode_step")

_spec = importlib.util.spec_from_file_location(
    "generate_example", ROOT / "examples" / "python" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


class BoundGenerator(generate.Generator):
    """generate.Generator with the params tuple bound in embed, prefill and
    decode (vm.bind_params): the calls pass the other arguments alone."""

    def __init__(self, model_dir, mode, **vm_options):
        super().__init__(model_dir, mode, **vm_options)
        self.folded = 0
        for func, index in (("embed", 1), ("prefill", 2), ("decode", 2)):
            self.folded += len(self.vm.bind_params(func, {index: self.params}))

    def embed(self, ids):
        e = self.vm["embed"](np.asarray(ids, dtype="int32"))
        return generate.reshape(e, Shape([1, len(ids), self.hidden]))

    def step(self, kv, seq_id, ids, func):
        h = self.embed(ids)
        generate.begin_forward(kv, Shape([seq_id]), Shape([len(ids)]))
        logits, kv = self.vm[func](h, kv)
        generate.end_forward(kv)
        return logits.numpy(), kv


def call(gen, func, h, kv):
    """vm[func](h, kv, params), or (h, kv) with the params bound."""
    if isinstance(gen, BoundGenerator):
        return gen.vm[func](h, kv)
    return gen.vm[func](h, kv, gen.params)


def one_round(gen, prompt):
    """run_tvm.py's timings(): the median of each figure, in seconds."""
    pc = time.perf_counter
    out = {k: [] for k in KEYS}
    kv = gen.new_cache()
    for sid in range(1, 36):
        t0 = pc()
        generate.add_sequence(kv, sid)
        h = gen.embed(prompt)
        generate.begin_forward(kv, Shape([sid]), Shape([len(prompt)]))
        t1 = pc()
        logits, kv = call(gen, "prefill", h, kv)
        t2 = pc()
        generate.end_forward(kv)
        int(np.argmax(logits.numpy().reshape(-1)))
        t3 = pc()
        generate.remove_sequence(kv, sid)
        if sid > 5:
            out["prefill_call"].append(t2 - t1)
            out["prefill_step"].append(t3 - t0)
    kv = gen.new_cache()
    generate.add_sequence(kv, 0)
    logits, kv = gen.step(kv, 0, prompt, "prefill")
    tok = int(np.argmax(logits.reshape(-1)))
    for step in range(55):
        t0 = pc()
        h = gen.embed([tok])
        generate.begin_forward(kv, Shape([0]), Shape([1]))
        t1 = pc()
        logits, kv = call(gen, "decode", h, kv)
        t2 = pc()
        generate.end_forward(kv)
        tok = int(np.argmax(logits.numpy().reshape(-1)))
        t3 = pc()
        if step >= 5:
            out["decode_call"].append(t2 - t1)
            out["decode_step"].append(t3 - t0)
    return {k: statistics.median(v) for k, v in out.items()}


def measure(model_dir, mode, rounds, bind=False, **vm_options):
    gen = (BoundGenerator if bind else generate.Generator)(str(model_dir), mode,
                                                           **vm_options)
    prompt = [int(t) for t in np.load(model_dir / "prompt.npy")]
    tokens, _, kv = gen.generate(prompt, 16)
    want = [int(t) for t in np.load(model_dir / "tokens.npy")]
    if tokens != want:
        raise RuntimeError("%s mode generated %s, not TVM's %s"
                           % (mode, tokens, want))
    popn = vmjit.get_global_func("vm.builtin.kv_state_popn")
    tok = tokens[-1]
    for _ in range(1100):
        logits, kv = gen.step(kv, 0, [tok], "decode")
        tok = int(np.argmax(logits.reshape(-1)))
        if int(generate.total_length(kv)) >= 58:
            popn(kv, 0, 49)
    gen.vm.wait_compiles()
    per_round = [one_round(gen, prompt) for _ in range(rounds)]
    return {k: statistics.median(r[k] for r in per_round) * 1e6 for k in KEYS}


def tvm_figures(models):
    """TVM's figures from the README's llm row, in microseconds."""
    text = (models / "README.md").read_text()
    row = next(line for line in text.splitlines()
               if line.startswith("| `llm` |"))
    figs = {}
    for key, label in (("decode_call", "decode call"),
                       ("decode_step", "decode step"),
                       ("prefill_call", "prefill call"),
                       ("prefill_step", "prefill step")):
        m = re.search(label + r" (\d+(?:\.\d+)?) µs", row)
        if m:
            figs[key] = float(m.group(1))
    return figs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(ROOT.parent / "shared" / "tvm-models"))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--kernels", action=argparse.BooleanOptionalAction, default=None,
                    help="the kernel tier on (compiled before timing) or off "
                         "(TVM's machine code); default: the VM's default")
    ap.add_argument("--bind", action="store_true",
                    help="bind the weights once (vm.bind_params) in embed, prefill, decode")
    args = ap.parse_args()
    models = pathlib.Path(args.models)
    modes = [m for m in args.modes.split(",") if m]
    if not vmjit.jit_available:
        modes = [m for m in modes if m == "bytecode"]
    vm_options = {}
    if args.kernels is False:
        vm_options["kernels"] = False
    elif args.kernels:
        vm_options.update(kernels=None, wait_kernels=True)
    results = {m: measure(models / "llm", m, args.rounds, args.bind, **vm_options)
               for m in modes}
    tvm = tvm_figures(models)
    print("Kernel tier: %s; weights %s.\n" % (
        {None: "the VM's default", True: "on (--kernels)", False: "off (--no-kernels)"}[
            args.kernels], "bound (--bind)" if args.bind else "passed on every call"))
    print("| figure (µs) | " + " | ".join(modes) + " | TVM |")
    print("|---|" + "---|" * (len(modes) + 1))
    for k in KEYS:
        cells = ["%.1f" % results[m][k] for m in modes]
        t = tvm.get(k)
        print("| %s | %s | %s |" % (k, " | ".join(cells),
                                    "%.0f" % t if t else "—"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"vmjit": results, "tvm": tvm}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
