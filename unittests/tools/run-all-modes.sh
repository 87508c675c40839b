#!/usr/bin/env bash
# Runs `vmjit run "$@"` in each mode of VMJIT_RUN_MODES (the first is
# the reference), checks that all modes agree on stdout, stderr and exit
# status (with the "mode" field of --json output set aside), then prints the
# bytecode run's stdout and stderr and exits with its status.
# With VMJIT_RUN_REFERENCE=PROG2, the reference is PROG2 (the same arguments)
# on the interpreter instead, and every mode of PROG must agree with it
# (aot/Inputs/aot-agrees.sh: a `vmjit compile` library against its program).
# Used by the program tests as %run-all-modes.
set -u
vmjit=${VMJIT:-vmjit}
# VMJIT_RUN_MODES: the modes, separated by ';' (lit.cfg.py sets it from
# `vmjit --version`; it is the one place that decides them).
if [[ -z "${VMJIT_RUN_MODES:-}" ]]; then
  echo "run-all-modes: VMJIT_RUN_MODES is not set (run the tests with lit)" >&2
  exit 98
fi
IFS=';' read -r -a modes <<<"$VMJIT_RUN_MODES"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
runs=()
if [[ -n "${VMJIT_RUN_REFERENCE:-}" ]]; then
  runs+=("bytecode:$VMJIT_RUN_REFERENCE")
fi
for m in "${modes[@]}"; do
  runs+=("$m:$1")
done
shift
for r in "${runs[@]}"; do
  # shellcheck disable=SC2086
  "$vmjit" run --mode ${r%%:*} "${r#*:}" "$@" >"$tmp/out$i" 2>"$tmp/err$i"
  echo $? >"$tmp/rc$i"
  sed -i -e 's/"mode":"[a-z]*",\{0,1\}//g' "$tmp/out$i"
  i=$((i + 1))
done
for ((j = 1; j < i; j++)); do
  for f in out err rc; do
    if ! cmp -s "$tmp/${f}0" "$tmp/$f$j"; then
      echo "run-all-modes: '${runs[0]}' and '${runs[$j]}' disagree on $f:" >&2
      diff "$tmp/${f}0" "$tmp/$f$j" >&2
      exit 99
    fi
  done
done
cat "$tmp/out0"
cat "$tmp/err0" >&2
exit "$(cat "$tmp/rc0")"
