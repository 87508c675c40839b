#!/usr/bin/env bash
# Builds vmjit (installing missing packages first) and runs the demo.
#
# `vmjit run` arrives with the interpreter; until then the demo is the ABI
# tour: a kernel library written in C loaded and called through the same
# safe-call ABI the interpreter and the JIT use.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh "$@" | tail -n 1)
echo "== vmjit demo: the value and call ABI (the interpreter and 'vmjit run' are not built yet) =="
"$dir/bin/vmjit" --version
"$dir/examples/abi_tour" "$dir/lib/libvmjit_demo_kernels.so"
