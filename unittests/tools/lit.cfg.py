# lit configuration for the `vmjit` command tests: each test is a file with
# RUN: lines, checked with FileCheck, as in LLVM's test suite.
import os
import lit.formats

config.name = "vmjit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test", ".vmasm"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "run-all-modes.sh"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.vmjit_obj_root, "unittests", "tools")

config.environment["PATH"] = os.pathsep.join(
    [config.vmjit_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Logging off and no tier threshold from the caller's environment.
for var in ["VMJIT_LOG_LEVEL", "VMJIT_TIER_THRESHOLD", "VMJIT_BASELINE_THRESHOLD", "VMJIT_CACHE_DIR"]:
    config.environment.pop(var, None)
# The object cache the command uses by default: one of the build tree's.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root, "cache")
# Each test starts the command many times: no OpenBLAS thread pool spinning
# up and down for each (the tests' matrices are small).
config.environment["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "1")
for var in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS", "HOME"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%vmjit", os.path.join(config.vmjit_bin_dir, "vmjit")))
# The baseline tier's build-time layout pass (where the tier is built).
config.substitutions.append(
    ("%stencil_layout", os.path.join(config.vmjit_bin_dir, "vmjit-stencil-layout")))
config.environment["VMJIT"] = os.path.join(config.vmjit_bin_dir, "vmjit")
# Every execution test runs in every mode and the modes must agree.
config.substitutions.append(
    ("%run-all-modes", os.path.join(config.test_source_root, "run-all-modes.sh")))
config.substitutions.append(("%kernels", config.demo_kernels))
# The libraries of tvm-library/ (built from tvm-library/Inputs).
_tvm_libs = os.path.join(config.vmjit_obj_root, "unittests", "tools", "tvm-library")
config.substitutions.append(("%tvm_model", os.path.join(_tvm_libs, "model.so")))
config.substitutions.append(("%tvm_compiled", os.path.join(_tvm_libs, "compiled.so")))
config.substitutions.append(("%tvm_libs", _tvm_libs))
config.substitutions.append(("%examples", os.path.join(config.vmjit_src_root, "examples")))
# The built example programs (examples/embed, ...).
config.substitutions.append(("%example_bin", os.path.join(config.vmjit_obj_root, "examples")))
config.substitutions.append(("%src_root", config.vmjit_src_root))
# %python: a Python 3 that has NumPy (examples/scripts/reference.py needs
# it), which need not be the first python3 on PATH (a pyenv shim, say);
# plain python3 when none has it, so that the tests say what is missing.
import shutil
import subprocess
import sys


def _python_with_numpy():
    for cand in [shutil.which("python3"), sys.executable, "/usr/bin/python3"]:
        if not cand or not os.path.exists(cand):
            continue
        try:
            if subprocess.run([cand, "-c", "import numpy"], capture_output=True,
                              timeout=60).returncode == 0:
                return cand
        except (OSError, subprocess.SubprocessError):
            pass
    return "python3"


config.substitutions.append(("%python", _python_with_numpy()))

# Feature "jit": this build's vmjit has the compiled mode (VMJIT_ENABLE_JIT).
import re

try:
    _version = subprocess.run([os.path.join(config.vmjit_bin_dir, "vmjit"), "--version"],
                              capture_output=True, text=True, timeout=60).stdout
    if re.search(r"^  modes: .*compiled", _version, re.M):
        config.available_features.add("jit")
    # Feature "baseline": it has the baseline (copy-and-patch) tier.
    if re.search(r"^  modes: .*\bbaseline\b", _version, re.M):
        config.available_features.add("baseline")
except (OSError, subprocess.SubprocessError):
    pass

# The modes %run-all-modes runs (in this order; the first is the
# reference): bytecode, tiered with threshold 1 so that every tier really
# runs, then each JIT tier alone, then compiled under deopt stress (tier 2
# speculating from wrong feedback, so that frames deoptimize to tier 1 all
# over: docs/jit.md). A sanitizer build (10x the start-up cost
# of each command) runs the tiered one only: it goes through the
# interpreter and both JIT tiers, and the unit tests run every mode alone
# under the sanitizers too.
# Without the JIT, tiered mode runs the interpreter and a threshold would
# only draw the warning that it has no effect.
_modes = ["bytecode", "tiered --tier-threshold 1"
          if "jit" in config.available_features else "tiered"]
if not config.sanitize:
    if "baseline" in config.available_features:
        _modes.append("baseline")
    if "jit" in config.available_features:
        _modes.append("compiled")
        if "baseline" in config.available_features:
            _modes.append("compiled --deopt-stress")
config.environment["VMJIT_RUN_MODES"] = ";".join(_modes)
