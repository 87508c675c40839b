#!/usr/bin/env bash
# Installs the Debian 12 packages vmjit needs, only those that are missing.
# Idempotent: silent and fast (one dpkg-query) when everything is present.
# Runs apt-get as root, or through sudo when not root.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ git python3 python3-numpy
  python3-dev python3-pybind11 pybind11-dev python3-pytest
  python3-venv python3-pip python3-setuptools python3-wheel python3-mypy
  llvm-19-dev libzstd-dev zlib1g-dev
  libdlpack-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libopenblas-dev libxxhash-dev
  clang-19 libclang-rt-19-dev libomp-19-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "vmjit: installing missing packages: ${missing[*]}" >&2
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "vmjit: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
