"""Builds the vmjit Python package with CMake, for `pip install .`.

pip runs this through setuptools' build backend (pyproject.toml). The
build step configures the vmjit project in a build directory of its own
(VMJIT_PIP_BUILD_DIR, default build-pip/ beside build/, so that ccache's
objects of build/ are reused), builds the target vmjit_python (the
extension with the runtime, the JIT and the standard library it loads),
and installs the CMake component `python` into setuptools' build tree:
vmjit/ with the extension, the Python layer, the type stubs, py.typed and
lib/ with libvmjit_runtime.so and libvmjit_jit.so (the extension's RPATH
is $ORIGIN/lib). setuptools then makes the wheel and its dist-info.

Environment:
  VMJIT_PIP_BUILD_DIR   the CMake build directory (kept between builds)
  VMJIT_CMAKE_ARGS      more arguments to CMake's configure step, e.g.
                        "-DVMJIT_ENABLE_JIT=OFF" (shell quoting)
  CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: the CPUs available)
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Command, Distribution, setup
from setuptools.command.build import build

ROOT = Path(__file__).resolve().parent
BUILD_DIR = Path(os.environ.get("VMJIT_PIP_BUILD_DIR") or ROOT / "build-pip").resolve()


def project_version():
    """The version of project(vmjit VERSION x.y.z) in CMakeLists.txt: the
    one version of vmjit (vmjit.__version__ is written from it too)."""
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*vmjit\s+VERSION\s+([0-9][0-9.]*)", text)
    if not match:
        sys.exit("setup.py: no project(vmjit VERSION ...) in CMakeLists.txt")
    return match.group(1)


class BinaryDistribution(Distribution):
    """The wheel holds compiled code: platform- and Python-specific."""

    def has_ext_modules(self):
        return True


class build_cmake(Command):
    """Configures, builds and installs the CMake component `python` into
    the build's platform library directory."""

    description = "build the vmjit package with CMake"
    user_options = []

    def initialize_options(self):
        self.build_lib = None

    def finalize_options(self):
        self.set_undefined_options("build", ("build_lib", "build_lib"))

    def _run(self, *args):
        print("setup.py:", shlex.join(str(a) for a in args), flush=True)
        subprocess.run([str(a) for a in args], check=True)

    def run(self):
        cmake = shutil.which("cmake")
        if not cmake:
            sys.exit("setup.py: vmjit's package is built with CMake (Debian: "
                     "cmake; scripts/install-deps.sh installs what is missing)")
        configure = [cmake, "-S", ROOT, "-B", BUILD_DIR,
                     "-DPython3_EXECUTABLE=" + sys.executable,
                     "-DVMJIT_BUILD_PYTHON=ON", "-DVMJIT_PYTHON_WHEEL=ON",
                     "-DVMJIT_PYTHON_INSTALL_DIR=.",
                     "-DVMJIT_BUILD_TESTS=OFF", "-DVMJIT_BUILD_BENCHMARKS=OFF",
                     "-DVMJIT_BUILD_EXAMPLES=OFF"]
        if not (BUILD_DIR / "CMakeCache.txt").exists() and shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("VMJIT_CMAKE_ARGS", ""))
        self._run(*configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or len(os.sched_getaffinity(0))
        self._run(cmake, "--build", BUILD_DIR, "--target", "vmjit_python",
                  "--parallel", jobs)
        package = Path(self.build_lib) / "vmjit"
        if package.exists():  # no file of an earlier build stays behind
            shutil.rmtree(package)
        self._run(cmake, "--install", BUILD_DIR, "--component", "python",
                  "--prefix", Path(self.build_lib).resolve(), "--strip")


class no_editable(Command):
    """pip install -e: not supported (the package is CMake's build)."""

    description = "refuse an editable install"
    # The options setuptools' build backend passes to editable_wheel.
    user_options = [("dist-dir=", "d", ""), ("dist-info-dir=", "I", ""),
                    ("mode=", None, "")]

    def initialize_options(self):
        self.dist_dir = self.dist_info_dir = self.mode = None

    def finalize_options(self):
        pass

    def run(self):
        sys.exit("vmjit has no editable install: build with CMake and put "
                 "build/python on PYTHONPATH (docs/python.md)")


class build_with_cmake(build):
    sub_commands = build.sub_commands + [("build_cmake", None)]


BUILD_DIR.mkdir(parents=True, exist_ok=True)
setup(
    version=project_version(),
    distclass=BinaryDistribution,
    packages=[],
    py_modules=[],
    cmdclass={"build": build_with_cmake, "build_cmake": build_cmake,
              "editable_wheel": no_editable},
    options={"build": {"build_base": str(BUILD_DIR / "setuptools")},
             "egg_info": {"egg_base": str(BUILD_DIR)}},
)
