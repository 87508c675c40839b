"""examples/python/decode.py runs and checks itself against NumPy."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DECODE = ROOT / "examples" / "python" / "decode.py"


def test_decode_example(run_script, mode):
    proc = run_script(DECODE, "--mode", mode, "--calls", "50")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "matches NumPy" in proc.stdout, output
    assert "DOES NOT MATCH" not in proc.stdout, output
    assert "50 calls in %s mode" % mode in proc.stdout, output
