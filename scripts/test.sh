#!/usr/bin/env bash
# Builds vmjit and runs every test (unit, program and package tests) with
# CTest. Same options as scripts/build.sh, e.g. `scripts/test.sh --sanitize
# address` for the AddressSanitizer+UBSan build, plus `--tests REGEX` to run
# only the CTest tests whose names match.
set -euo pipefail
cd "$(dirname "$0")/.."
filter=()
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tests) filter=(-R "$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
dir=$(scripts/build.sh "${args[@]}" | tail -n 1)
jobs=$(nproc 2>/dev/null || echo 2)
cd "$dir"
ctest --output-on-failure -j "$jobs" --timeout 900 "${filter[@]}"
