#!/usr/bin/env bash
# Builds vmjit and runs every test (unit, program and package tests) with
# CTest. Same options as scripts/build.sh, e.g. `scripts/test.sh --sanitize
# address` for the AddressSanitizer+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh "$@" | tail -n 1)
jobs=$(nproc 2>/dev/null || echo 2)
cd "$dir"
ctest --output-on-failure -j "$jobs" --timeout 600
