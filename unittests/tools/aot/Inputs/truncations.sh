#!/usr/bin/env bash
# truncations.sh LIB ARG...: runs `vmjit run` on LIB cut after N bytes, for
# N from 1 byte to all but the last one; each must exit 2 (an input error)
# or, when only what the loader does not read was cut (the section
# headers at the end), give the whole library's output: never crash.
# Prints one line per distinct first line of the error messages.
set -u
vmjit=${VMJIT:-vmjit}
lib=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
size=$(stat -c %s "$lib")
"$vmjit" run "$lib" "$@" >"$tmp/whole" 2>&1 || exit 1
for n in 1 16 64 100 512 1000 4096 8192 12000 $((size / 2)) $((size - 100)) $((size - 1)); do
  ((n > 0 && n < size)) || continue
  head -c "$n" "$lib" >"$tmp/cut.so"
  "$vmjit" run "$tmp/cut.so" "$@" >"$tmp/out" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]] && cmp -s "$tmp/out" "$tmp/whole"; then
    continue
  fi
  if [[ $rc -ne 2 ]]; then
    echo "truncations: $n of $size bytes: exit $rc" >&2
    cat "$tmp/out" >&2
    exit 1
  fi
  head -n 1 "$tmp/out" | sed -e "s|$tmp/cut.so|CUT|g" -e 's/[0-9][0-9]*/N/g'
done | sort -u
