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
rc=0
ctest --output-on-failure -j "$jobs" --timeout 900 "${filter[@]}" || rc=$?
if [[ $rc -ne 0 ]]; then
  # The failing tests once more, alone, so that their output ends the log
  # (a CI summary that keeps the log's start and end shows it), and so
  # that an intermittent failure says so. The status stays the first run's.
  echo "test.sh: the failed tests again, one at a time:" >&2
  if ctest --rerun-failed --output-on-failure --timeout 900; then
    echo "test.sh: they passed on the second run: the failure is intermittent" >&2
  fi
  exit "$rc"
fi
