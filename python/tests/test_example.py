"""examples/python/decode.py runs and checks itself against NumPy."""

import os
import pathlib
import subprocess
import sys

import vmjit

ROOT = pathlib.Path(__file__).resolve().parents[2]
DECODE = ROOT / "examples" / "python" / "decode.py"


def test_decode_example(tmp_path, mode):
    env = dict(os.environ)
    package_dir = str(pathlib.Path(vmjit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(
        [package_dir] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run(
        [sys.executable, str(DECODE), "--mode", mode, "--calls", "50"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "matches NumPy" in proc.stdout, output
    assert "DOES NOT MATCH" not in proc.stdout, output
    assert "50 calls in %s mode" % mode in proc.stdout, output
