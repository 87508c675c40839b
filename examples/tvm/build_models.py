#!/usr/bin/env python3
"""Build the tiny models vmjit's examples run, with Apache TVM's compiler.

    python3 examples/tvm/build_models.py OUT_DIR [--models mlp,llm]

Needs Apache TVM's Python package (`tvm`, with Relax and its LLVM backend)
and NumPy; it calls TVM's API as TVM 5d4dc87 (August 2026) has it, the
version whose output vmjit's tests check. Each model goes to
OUT_DIR/<model>/: model.so (TVM's `ex.export_library`: the VM executable
and the CPU kernels TVM compiled), model.tvmexec (`ex.mod.write_to_file`:
the executable alone), model.bc (the kernels as LLVM bitcode), the inputs
and what TVM's own VM returned:

  mlp  main(x[1,64], fc1.weight[256,64], fc1.bias[256], fc2.weight[64,256],
       fc2.bias[64]) -> float32[1,64]: Linear, ReLU, Linear
       (relax.frontend.nn); in0.npy..in4.npy, TVM's result out.npy.
  llm  a 2-layer Llama-style decoder (vocab 128, hidden 64, 4 heads of 16)
       with TVM's paged KV cache, as TVM's optimize_llm tutorial builds one:
       VM functions create_tir_paged_kv_cache, embed, prefill and decode;
       the weights param_0.npy.. (passed as one tuple), prompt.npy, and
       TVM's greedy generation of 16 tokens: tokens.npy, logits_step<k>.npy.

Then, from the repository root with vmjit built:

  build/bin/vmjit run OUT_DIR/mlp/model.so OUT_DIR/mlp/in{0,1,2,3,4}.npy
  export PYTHONPATH=build/python
  python3 examples/python/generate.py OUT_DIR/llm --check
"""
import argparse
import math
import os
import sys

try:  # TVM is needed only to build, not for --help
    import numpy as np
    import tvm
    from tvm import relax, te, tirx
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op
    from tvm.relax.frontend.nn.llm.kv_cache import (PagedKVCache, RopeMode,
                                                    TIRPagedKVCache)
    from tvm_ffi import Shape
    MISSING = None
except (ImportError, OSError) as e:
    MISSING = e

MODELS = ("mlp", "llm")
PROMPT = [3, 14, 15, 92, 65, 35, 89, 79]  # token ids < vocab
NEW_TOKENS = 16
# create_tir_paged_kv_cache(max_batch_size, max_total_seq_len,
# prefill_chunk_size, page_size): what examples/python/generate.py passes
KV_CONFIG = (1, 256, 64, 16)
VOCAB, HIDDEN, FFN, LAYERS, HEADS, HEAD_DIM = 128, 64, 128, 2, 4, 16


def export(ex, out):
    """model.so, model.tvmexec and model.bc of executable `ex` in `out`."""
    ex.export_library(os.path.join(out, "model.so"))
    ex.mod.write_to_file(os.path.join(out, "model.tvmexec"))
    llvm = [m for m in ex.mod.imports if m.kind == "llvm"]
    if llvm:
        llvm[0].write_to_file(os.path.join(out, "model.bc"))


def build_mlp(out):
    class MLP(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(64, 256)
            self.fc2 = nn.Linear(256, 64)

        def main(self, x):
            return self.fc2(op.relu(self.fc1(x)))

    # Plain parameters: main takes x, then the weights in declaration order.
    mod, params = MLP().export_tvm(
        spec={"main": {"x": nn.spec.Tensor((1, 64), "float32")}})
    ex = tvm.compile(mod, target="llvm")
    export(ex, out)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((1, 64), dtype=np.float32)]
    args += [0.1 * rng.standard_normal([int(d) for d in p.shape],
                                       dtype=np.float32) for _, p in params]
    for i, a in enumerate(args):
        np.save(os.path.join(out, "in%d.npy" % i), a)
    vm = relax.VirtualMachine(
        tvm.runtime.load_module(os.path.join(out, "model.so")), tvm.cpu())
    result = vm["main"](*[tvm.runtime.tensor(a) for a in args])
    np.save(os.path.join(out, "out.npy"), result.numpy())


def build_llm(out):
    target = tvm.target.Target("llvm")

    class Layer(nn.Module):
        def __init__(self):
            self.input_norm = nn.RMSNorm(HIDDEN, -1, 1e-5, bias=False)
            self.qkv_proj = nn.Linear(HIDDEN, 3 * HEADS * HEAD_DIM, bias=False)
            self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)
            self.mlp_norm = nn.RMSNorm(HIDDEN, -1, 1e-5, bias=False)
            self.gate_up_proj = nn.Linear(HIDDEN, 2 * FFN, bias=False)
            self.down_proj = nn.Linear(FFN, HIDDEN, bias=False)

        def forward(self, h, cache, layer):
            b, s, _ = h.shape
            qkv = op.reshape(self.qkv_proj(self.input_norm(h)),
                             (b, s, 3 * HEADS, HEAD_DIM))
            # Attention with the cached K and V; the cache applies RoPE.
            a = cache.attention_with_fused_qkv(layer, qkv, HEADS,
                                               sm_scale=HEAD_DIM**-0.5)
            h = h + self.o_proj(op.reshape(a, (b, s, HEADS * HEAD_DIM)))
            gate_up = self.gate_up_proj(self.mlp_norm(h))
            gate, up = op.split(gate_up, 2, axis=-1)
            return h + self.down_proj(op.silu(gate) * up)

    class TinyLlama(nn.Module):
        def __init__(self):
            # First parameter: the embedding, whose [vocab, hidden] shape
            # the generate examples read.
            self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
            self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
            self.norm = nn.RMSNorm(HIDDEN, -1, 1e-5, bias=False)
            self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

        def hidden(self, h, cache):
            for i, layer in enumerate(self.layers):
                h = layer(h, cache, i)
            return self.norm(h)

        def embed(self, input_ids):
            return self.embed_tokens(input_ids)

        def prefill(self, input_embed, paged_kv_cache):
            def last(x):  # x[:, -1:, :]: the prompt's last position
                b, s, d = x.shape
                return te.compute((b, 1, d), lambda i, _, k: x[i, s - 1, k])

            h = self.hidden(input_embed, paged_kv_cache)
            h = op.tensor_expr_op(last, "last_token", [h])
            return self.lm_head(h), paged_kv_cache

        def decode(self, input_embed, paged_kv_cache):
            h = self.hidden(input_embed, paged_kv_cache)
            return self.lm_head(h), paged_kv_cache

        def create_tir_paged_kv_cache(self, max_batch_size, max_total_seq_len,
                                      prefill_chunk_size, page_size):
            return TIRPagedKVCache(
                attn_kind="mha", max_batch_size=max_batch_size,
                max_total_seq_len=max_total_seq_len,
                prefill_chunk_size=prefill_chunk_size, page_size=page_size,
                support_sliding_window=0,
                layer_partition=relax.ShapeExpr([0, LAYERS]),
                num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                num_key_value_heads=HEADS, qk_head_dim=HEAD_DIM,
                v_head_dim=HEAD_DIM, mla_original_qk_head_dim=0,
                mla_original_v_head_dim=0, rope_mode=RopeMode.NORMAL,
                rope_scale=1, rope_theta=10000, rope_scaling={},
                rope_ext_factors=tirx.IntImm("int64", 0), rotary_dim=HEAD_DIM,
                enable_disaggregation=False, dtype="float32", target=target)

    # The weights as one tuple argument of embed, prefill and decode.
    packed = {"param_mode": "packed", "effect_mode": "none"}
    spec = {
        "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"),
                  "$": packed},
        "prefill": {"input_embed": nn.spec.Tensor([1, "seq_len", HIDDEN],
                                                  "float32"),
                    "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
                    "$": packed},
        "decode": {"input_embed": nn.spec.Tensor([1, 1, HIDDEN], "float32"),
                   "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
                   "$": packed},
        "create_tir_paged_kv_cache": {
            "max_batch_size": int, "max_total_seq_len": int,
            "prefill_chunk_size": int, "page_size": int,
            "$": {"param_mode": "none", "effect_mode": "none"}},
    }
    mod, params = TinyLlama().export_tvm(spec=spec)
    # The CPU pipeline that fuses operators (tvm.compile's default does not).
    ex = tvm.compile(mod, target=target,
                     relax_pipeline=relax.get_default_pipeline(target))
    export(ex, out)

    rng = np.random.default_rng(1)
    weights = []
    for i, (name, p) in enumerate(params):
        shape = [int(d) for d in p.shape]
        if name.endswith("norm.weight"):
            w = 1 + 0.1 * rng.standard_normal(shape)
        elif name == "embed_tokens.weight":
            w = rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) / math.sqrt(shape[-1])
        weights.append(w.astype(np.float32))
        np.save(os.path.join(out, "param_%d.npy" % i), weights[-1])
    np.save(os.path.join(out, "prompt.npy"), np.array(PROMPT, np.int32))

    # TVM's generate loop on the exported library: the tokens and logits
    # the examples' --check compares with.
    vm = relax.VirtualMachine(
        tvm.runtime.load_module(os.path.join(out, "model.so")), tvm.cpu())
    weights = [tvm.runtime.tensor(w) for w in weights]

    def builtin(name):
        return tvm.get_global_func("vm.builtin." + name)

    begin = builtin("kv_state_begin_forward")
    end = builtin("kv_state_end_forward")
    kv = vm["create_tir_paged_kv_cache"](*[Shape([v]) for v in KV_CONFIG])
    builtin("kv_state_add_sequence")(kv, 0)
    ids, func, tokens = PROMPT, "prefill", []
    while len(tokens) < NEW_TOKENS:
        e = vm["embed"](tvm.runtime.tensor(np.array(ids, np.int32)), weights)
        h = builtin("reshape")(e, Shape([1, len(ids), HIDDEN]))
        begin(kv, Shape([0]), Shape([len(ids)]))
        logits, kv = vm[func](h, kv, weights)
        end(kv)
        logits = logits.numpy()
        np.save(os.path.join(out, "logits_step%d.npy" % len(tokens)), logits)
        tokens.append(int(np.argmax(logits.reshape(-1))))
        ids, func = [tokens[-1]], "decode"
    np.save(os.path.join(out, "tokens.npy"), np.array(tokens, np.int32))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", metavar="OUT_DIR")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated, from: %s (default: all)"
                    % ", ".join(MODELS))
    args = ap.parse_args()
    models = args.models.split(",")
    for m in models:
        if m not in MODELS:
            ap.error("unknown model %r (known: %s)" % (m, ", ".join(MODELS)))
    if MISSING:
        print("build_models.py: needs Apache TVM's Python package with Relax, "
              "and NumPy (%s): pip install apache-tvm, or build TVM from "
              "source (https://tvm.apache.org/docs/install/)" % MISSING,
              file=sys.stderr)
        return 2
    for m in models:
        out = os.path.join(args.out_dir, m)
        os.makedirs(out, exist_ok=True)
        {"mlp": build_mlp, "llm": build_llm}[m](out)
        print("%s: wrote %s" % (m, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
