#!/usr/bin/env bash
# aot-agrees.sh PROG [ARG...]: compiles PROG with `vmjit compile`, runs the
# library in every mode (run-all-modes.sh: the modes must agree), runs PROG
# itself on the interpreter, and checks that the two agree on stdout, stderr
# and exit status; then prints the library's output and exits with its
# status. The run options after PROG go to both. Tiered mode runs without
# a tier threshold: the library's code has no tier to climb, and the option
# would draw a warning that it has no effect.
set -u
export VMJIT_RUN_MODES="${VMJIT_RUN_MODES:-bytecode}"
VMJIT_RUN_MODES="${VMJIT_RUN_MODES// --tier-threshold 1/}"
vmjit=${VMJIT:-vmjit}
prog=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$vmjit" compile "$prog" -o "$tmp/prog.so"; then
  echo "aot-agrees: vmjit compile $prog failed" >&2
  exit 97
fi
"$(dirname "$0")/../../run-all-modes.sh" "$tmp/prog.so" "$@" >"$tmp/out0" 2>"$tmp/err0"
echo $? >"$tmp/rc0"
"$vmjit" run --mode bytecode "$prog" "$@" >"$tmp/out1" 2>"$tmp/err1"
echo $? >"$tmp/rc1"
sed -i -e 's/"mode":"[a-z]*",\{0,1\}//g' "$tmp/out1"
for f in out err rc; do
  if ! cmp -s "$tmp/${f}0" "$tmp/${f}1"; then
    echo "aot-agrees: the library and $prog disagree on $f:" >&2
    diff "$tmp/${f}1" "$tmp/${f}0" >&2
    exit 99
  fi
done
cat "$tmp/out0"
cat "$tmp/err0" >&2
exit "$(cat "$tmp/rc0")"
