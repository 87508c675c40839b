#!/usr/bin/env bash
# sigint.sh MODE ARGS...: starts `vmjit run --mode MODE ARGS...`, waits
# until the command has installed its SIGINT handler (the call is about to
# run or running), sends Ctrl-C's signal, and prints the command's stdout,
# stderr and "exit: STATUS".
set -u
mode=$1; shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${VMJIT:-vmjit}" run --mode "$mode" "$@" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do
  mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  if [[ -n "$mask" ]] && (( (16#$mask & 2) != 0 )); then break; fi
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
status=$?
cat "$tmp/out" "$tmp/err"
echo "exit: $status"
