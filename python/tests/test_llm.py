"""A language model TVM compiled with its paged KV cache
(shared/tvm-models/llm), driven from Python as TVM users drive it:
examples/python/generate.py's loop gives TVM's tokens and logits in every
mode; two sequences interleaved keep their own tokens; a fork goes on like
its parent; misuse of the cache raises an error and leaves it working.

Without shared/tvm-models the whole file is skipped.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import vmjit
from vmjit import Shape

ROOT = pathlib.Path(__file__).resolve().parents[2]
LLM = ROOT.parent / "shared" / "tvm-models" / "llm"
GENERATE = ROOT / "examples" / "python" / "generate.py"

if not (LLM / "model.so").is_file():
    pytest.skip("%s is absent: the model TVM's compiler wrote is not here"
                % LLM, allow_module_level=True)

_spec = importlib.util.spec_from_file_location("generate_example", GENERATE)
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

PROMPT = [int(t) for t in np.load(LLM / "prompt.npy")]
TOKENS = [int(t) for t in np.load(LLM / "tokens.npy")]


@pytest.fixture
def gen(mode):
    return generate.Generator(str(LLM), mode, tier_threshold=1)


def test_the_example_checks_itself(run_script, mode):
    proc = run_script(GENERATE, str(LLM), "--mode", mode, "--check")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "generated: %s" % TOKENS in proc.stdout, output
    assert "tokens equal TVM's" in proc.stdout, output


def test_tokens_and_logits_are_tvms(gen):
    tokens, steps, kv = gen.generate(PROMPT, 16)
    assert tokens == TOKENS
    for k, got in enumerate(steps):
        want = np.load(LLM / ("logits_step%d.npy" % k))
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) <= 1e-5, k
    assert int(generate.total_length(kv)) == len(PROMPT) + 15


def test_two_interleaved_sequences_keep_their_own_tokens(gen):
    other = PROMPT[::-1]
    want_other, _, _ = gen.generate(other, 8)
    kv = gen.new_cache()
    a, b = [], []
    for seq, prompt, out in ((0, PROMPT, a), (5, other, b)):
        generate.add_sequence(kv, seq)
        logits, kv = gen.step(kv, seq, prompt, "prefill")
        out.append(int(np.argmax(logits)))
    while len(b) < 8:
        for seq, out in ((0, a), (5, b)):
            logits, kv = gen.step(kv, seq, [out[-1]], "decode")
            out.append(int(np.argmax(logits)))
    assert a == TOKENS[:8]
    assert b == want_other


def test_a_fork_goes_on_like_its_parent(gen):
    fork = vmjit.get_global_func("vm.builtin.kv_state_fork_sequence")
    kv = gen.new_cache()
    generate.add_sequence(kv, 0)
    logits, kv = gen.step(kv, 0, PROMPT, "prefill")
    fork(kv, 0, 1, -1)
    toks = {0: [int(np.argmax(logits))], 1: [int(np.argmax(logits))]}
    while len(toks[1]) < 6:
        for seq in (1, 0):
            logits, kv = gen.step(kv, seq, [toks[seq][-1]], "decode")
            toks[seq].append(int(np.argmax(logits)))
    assert toks[0] == TOKENS[:6] and toks[1] == TOKENS[:6]


def test_misuse_raises_and_leaves_the_cache_working(gen):
    kv = gen.new_cache()
    with pytest.raises(vmjit.errors.ValueError,
                       match='The sequence "9" cannot be found in KV cache'):
        generate.begin_forward(kv, Shape([9]), Shape([1]))
    with pytest.raises(vmjit.errors.ValueError,
                       match="without kv_state_begin_forward"):
        generate.end_forward(kv)
    generate.add_sequence(kv, 9)
    generate.begin_forward(kv, Shape([9]), Shape([4]))
    with pytest.raises(vmjit.errors.ValueError, match="called again before"):
        generate.begin_forward(kv, Shape([9]), Shape([4]))
    generate.end_forward(kv)
    # The model's decode outside a forward fails at its attention call.
    h = gen.embed([1])
    with pytest.raises(vmjit.errors.ValueError,
                       match="attention needs a forward"):
        gen.vm["decode"](h, kv, gen.params)
    generate.remove_sequence(kv, 9)
    with pytest.raises(vmjit.errors.ValueError,
                       match='The sequence "9" cannot be found'):
        generate.remove_sequence(kv, 9)
    with pytest.raises(vmjit.errors.TypeError):
        generate.add_sequence(np.zeros(3, "float32"), 0)
    tokens, _, _ = gen.generate(PROMPT, 16, kv=kv)
    assert tokens == TOKENS
