"""The package installed into a virtual environment, as users install it
(CTest's python.venv_install and python.pip_install, python.pip_uninstall).

    install_check.py cmake --build-dir BUILD --venv VENV --version X.Y.Z
    install_check.py pip-install --source SRC --build-dir DIR --venv VENV
                     --version X.Y.Z [-- CMAKE_ARG...]
    install_check.py pip-uninstall --venv VENV

cmake and pip-install make a fresh virtual environment VENV with the
system's site-packages (for NumPy and pytest), install the package into it
and check it: the package in VENV's site-packages, vmjit.__version__, the
stubs and py.typed, a program run on the JIT when the package has it, and
vmjit's command line as ``python -m vmjit`` (``--version``, and ``run``
of examples/fib.vmasm: fib(10) = 55). cmake: ``cmake --install BUILD
--prefix VENV``. pip-install: ``pip install --no-build-isolation SRC``
(setup.py builds in DIR with the CMake arguments given, those of the
calling build, so that ccache has every object); checks the dist-info
too, the ``vmjit`` command pip installs (VENV/bin/vmjit, the same two
runs), and that ``pip install -e`` is refused with a message. pip-uninstall: ``pip uninstall -y
vmjit``, then checks that nothing of it is left. Prints the time of each
step.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

CHECK_INSTALLED = """
import importlib.metadata, os, sys
import vmjit
venv, version, dist_info = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
package = os.path.dirname(os.path.realpath(vmjit.__file__))
site = os.path.join(os.path.realpath(venv), "lib")
assert package.startswith(site + os.sep) and "site-packages" in package, package
assert vmjit.__version__ == version, (vmjit.__version__, version)
for name in ("py.typed", "_vmjit.pyi"):
    assert os.path.isfile(os.path.join(package, name)), name
if dist_info:
    assert importlib.metadata.version("vmjit") == version
    files = [str(f) for f in importlib.metadata.files("vmjit")]
    assert "vmjit/py.typed" in files, files
    assert any(f.startswith("vmjit/lib/libvmjit_runtime.so") for f in files), files
text = chr(10).join([".func main(a, b)", "  %r = call scalar.add(%a, %b)",
                     "  ret %r", ".end"])
mode = "compiled" if vmjit.jit_available else "bytecode"
result = vmjit.VirtualMachine(vmjit.assemble(text), mode)["main"](40, 2)
assert result == 42, result
print("installed:", package, mode)
"""

CHECK_UNINSTALLED = """
import importlib.metadata, importlib.util, sys
assert importlib.util.find_spec("vmjit") is None, importlib.util.find_spec("vmjit")
try:
    importlib.metadata.version("vmjit")
    sys.exit("vmjit's dist-info is still there")
except importlib.metadata.PackageNotFoundError:
    pass
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("how", choices=("cmake", "pip-install", "pip-uninstall"))
    parser.add_argument("--source", type=Path,
                        default=Path(__file__).resolve().parents[2])
    parser.add_argument("--build-dir")
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--version")
    argv, cmake_args = sys.argv[1:], []
    if "--" in argv:
        cut = argv.index("--")
        argv, cmake_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # only the installed package
    python = str(args.venv / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    # Commands run outside the source tree, where nothing but the
    # installed package is importable as vmjit.
    cwd = str(args.venv)

    def step(what, command):
        start = time.monotonic()
        print("install_check:", shlex.join(command), flush=True)
        subprocess.run(command, check=True, env=env, cwd=cwd)
        print("install_check: %s took %.1f s"
              % (what, time.monotonic() - start), flush=True)

    if args.how == "pip-uninstall":
        step("pip uninstall", pip + ["uninstall", "-y", "vmjit"])
        step("check uninstalled", [python, "-c", CHECK_UNINSTALLED])
        leftover = list(args.venv.glob("lib/python*/site-packages/vmjit*"))
        if leftover:
            sys.exit("pip uninstall left %s" % leftover)
        print("pip uninstall ok")
        return

    if args.venv.exists():
        shutil.rmtree(args.venv)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                    str(args.venv)], check=True)
    check = [python, "-c", CHECK_INSTALLED, str(args.venv), args.version]
    def check_command(command):
        """`command` (a way to run vmjit's command line) says its version
        and runs examples/fib.vmasm."""
        for extra, want in ((["--version"], r"\bvmjit %s\b" % re.escape(
                args.version)), (["run", str(args.source / "examples" /
                                           "fib.vmasm"), "10"], r"^55$")):
            start = time.monotonic()
            run = subprocess.run(command + extra, env=env, cwd=cwd,
                                 capture_output=True, text=True)
            said = run.stdout + run.stderr
            print("install_check: %s: exit %d in %.1f s: %s" % (
                shlex.join(command + extra), run.returncode,
                time.monotonic() - start, said.strip()), flush=True)
            if run.returncode != 0 or not re.search(want, run.stdout, re.M):
                sys.exit("%s: expected %r in its output"
                         % (shlex.join(command + extra), want))

    if args.how == "cmake":
        step("cmake --install", ["cmake", "--install", args.build_dir,
                                 "--prefix", str(args.venv)])
        step("check", check + ["0"])
        check_command([python, "-m", "vmjit"])
        print("cmake --install into a venv ok")
        return

    env["VMJIT_PIP_BUILD_DIR"] = args.build_dir
    env["VMJIT_CMAKE_ARGS"] = shlex.join(cmake_args)
    step("pip install", pip + ["install", "--no-build-isolation", "--no-index",
                               "--no-cache-dir", str(args.source)])
    step("check", check + ["1"])
    check_command([python, "-m", "vmjit"])
    check_command([str(args.venv / "bin" / "vmjit")])
    # pip install -e: refused with a message, the installed package kept.
    editable = subprocess.run(
        pip + ["install", "--no-build-isolation", "--no-index",
               "--no-cache-dir", "-e", str(args.source)],
        env=env, cwd=cwd, capture_output=True, text=True)
    said = editable.stdout + editable.stderr
    if editable.returncode == 0 or "vmjit has no editable install" not in said:
        sys.exit("pip install -e: exit %d\n%s" % (editable.returncode, said))
    step("check after pip install -e", check + ["1"])
    print("pip install ok")


if __name__ == "__main__":
    main()
