#!/usr/bin/env python3
"""Greedy generation with a language model TVM compiled, run by vmjit alone.

    PYTHONPATH=build/python python3 examples/python/generate.py MODEL_DIR
        [--mode MODE] [--tokens N] [--check]

MODEL_DIR holds what TVM's compiler emits for a Llama-style decoder with
TVM's paged KV cache (the pattern of TVM's optimize_llm tutorial, as MLC-LLM
drives it): model.so with the VM functions create_tir_paged_kv_cache, embed,
prefill and decode, the weights param_0.npy.. (passed as one tuple) and
prompt.npy (int32 token ids). With TVM installed,
`python3 examples/tvm/build_models.py DIR --models llm` writes such a
directory, DIR/llm. The loop is the one TVM users write:

    kv = vm["create_tir_paged_kv_cache"](Shape([1]), Shape([256]), ...)
    add_sequence(kv, 0)
    begin_forward(kv, Shape([0]), Shape([n])); logits, kv = vm["prefill"](..)
    end_forward(kv); token = argmax(logits)
    then per token: embed, begin_forward(.., Shape([1])), vm["decode"](..), ..

With --check, the tokens and each step's logits are compared with
tokens.npy and logits_step<k>.npy from the same directory (the exit status
says whether they match).
"""
import argparse
import os
import sys
from typing import Any, List, Sequence, Tuple

import numpy as np
import numpy.typing as npt

import vmjit
from vmjit import Shape

# create_tir_paged_kv_cache(max_batch_size, max_total_seq_len,
#                           prefill_chunk_size, page_size)
KV_CONFIG = (1, 256, 64, 16)

add_sequence = vmjit.get_global_func("vm.builtin.kv_state_add_sequence")
remove_sequence = vmjit.get_global_func("vm.builtin.kv_state_remove_sequence")
begin_forward = vmjit.get_global_func("vm.builtin.kv_state_begin_forward")
end_forward = vmjit.get_global_func("vm.builtin.kv_state_end_forward")
reshape = vmjit.get_global_func("vm.builtin.reshape")
total_length = vmjit.get_global_func(
    "vm.builtin.attention_kv_cache_get_total_sequence_length")


class Generator:
    """The model, its weights and the generate loop."""

    def __init__(self, model_dir: str, mode: str = "tiered",
                 **vm_options: Any) -> None:
        self.vm = vmjit.VirtualMachine(
            vmjit.load(os.path.join(model_dir, "model.so")), mode=mode,
            **vm_options)
        count = 0
        while os.path.exists(os.path.join(model_dir, "param_%d.npy" % count)):
            count += 1
        self.params = tuple(
            vmjit.tensor(np.load(os.path.join(model_dir, "param_%d.npy" % i)))
            for i in range(count))
        self.hidden = self.params[0].shape[1]  # embedding [vocab, hidden]

    def new_cache(self) -> vmjit.Value:
        return self.vm["create_tir_paged_kv_cache"](
            *[Shape([v]) for v in KV_CONFIG])

    def embed(self, ids: Sequence[int]) -> vmjit.Value:
        e = self.vm["embed"](np.asarray(ids, dtype="int32"), self.params)
        return reshape(e, Shape([1, len(ids), self.hidden]))

    def step(self, kv: vmjit.Value, seq_id: int, ids: Sequence[int],
             func: str) -> Tuple[npt.NDArray[Any], vmjit.Value]:
        """One forward of `ids` for sequence `seq_id` through `func`
        (prefill or decode): the logits of the last token, and the cache."""
        h = self.embed(ids)
        begin_forward(kv, Shape([seq_id]), Shape([len(ids)]))
        # The function returns a tuple (logits, cache): a vmjit.Value that
        # isinstance narrows for mypy.
        result = self.vm[func](h, kv, self.params)
        assert isinstance(result, tuple), result
        logits, kv = result
        assert isinstance(logits, vmjit.Tensor), logits
        end_forward(kv)
        return logits.numpy(), kv

    def generate(self, prompt: Sequence[int], new_tokens: int,
                 kv: vmjit.Value = None, seq_id: int = 0
                 ) -> Tuple[List[int], List[npt.NDArray[Any]], vmjit.Value]:
        """Greedy generation: the new tokens and each step's logits."""
        kv = kv if kv is not None else self.new_cache()
        add_sequence(kv, seq_id)
        logits, kv = self.step(kv, seq_id, prompt, "prefill")
        steps = [logits]
        tokens = [int(np.argmax(logits.reshape(-1)))]
        while len(tokens) < new_tokens:
            logits, kv = self.step(kv, seq_id, [tokens[-1]], "decode")
            steps.append(logits)
            tokens.append(int(np.argmax(logits.reshape(-1))))
        return tokens, steps, kv


def cached_tokens(kv: vmjit.Value) -> int:
    """How many tokens the cache `kv` holds."""
    n = total_length(kv)
    assert isinstance(n, int), n
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--mode", default="tiered",
                    choices=vmjit.virtual_machine.MODES)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--check", action="store_true",
                    help="compare with tokens.npy and logits_step<k>.npy")
    args = ap.parse_args()
    # What the loop reads: a missing file is one line saying how to get it.
    for name in ("model.so", "param_0.npy", "prompt.npy"):
        path = os.path.join(args.model_dir, name)
        if not os.path.exists(path):
            print("generate.py: %s is missing: this example runs a language "
                  "model TVM built; with TVM installed, `python3 "
                  "examples/tvm/build_models.py DIR --models llm` writes one "
                  "to DIR/llm" % path, file=sys.stderr)
            return 2

    gen = Generator(args.model_dir, args.mode)
    prompt = [int(t) for t in np.load(os.path.join(args.model_dir,
                                                   "prompt.npy"))]
    tokens, steps, kv = gen.generate(prompt, args.tokens)
    print("prompt   :", prompt)
    print("generated:", tokens)
    print("cached tokens:", cached_tokens(kv))
    if not args.check:
        return 0
    want = [int(t) for t in np.load(os.path.join(args.model_dir,
                                                 "tokens.npy"))]
    errors = [float(np.max(np.abs(
        got - np.load(os.path.join(args.model_dir, "logits_step%d.npy" % k)))))
        for k, got in enumerate(steps)]
    ok = tokens == want[:len(tokens)] and max(errors) <= 1e-5
    print("max |logits - TVM's| over %d steps: %.2g; tokens %s TVM's" % (
        len(steps), max(errors), "equal" if tokens == want[:len(tokens)]
        else "DIFFER FROM"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
