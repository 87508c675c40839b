#!/usr/bin/env bash
# aot-agrees.sh PROG [ARG...]: compiles PROG with `vmjit compile` and runs
# the library in every mode with run-all-modes.sh, whose reference is PROG
# itself on the interpreter (VMJIT_RUN_REFERENCE): every mode of the
# library must agree with it on stdout, stderr and exit status. Prints the
# output and exits with the status. Tiered mode runs without a tier
# threshold and compiled mode without deopt stress: the library's code has
# no tier to climb and does not speculate, and either option would draw a
# warning that it has no effect.
set -u
vmjit=${VMJIT:-vmjit}
prog=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$vmjit" compile "$prog" -o "$tmp/prog.so"; then
  echo "aot-agrees: vmjit compile $prog failed" >&2
  exit 97
fi
modes="${VMJIT_RUN_MODES:-bytecode}"
modes="${modes// --tier-threshold 1/}"
VMJIT_RUN_MODES="${modes//;compiled --deopt-stress/}" VMJIT_RUN_REFERENCE="$prog" \
  "$(dirname "$0")/../../run-all-modes.sh" "$tmp/prog.so" "$@"
