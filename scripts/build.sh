#!/usr/bin/env bash
# Configures and builds vmjit (installing missing packages first).
#   scripts/build.sh [--sanitize address|undefined|thread] [--no-jit]
#                    [--build-dir DIR] [--targets "T1 T2 ..."] [-DVAR=VALUE ...]
# The build directory defaults to build/ (build-asan/, build-tsan/, ...
# for sanitizer builds). Prints the build directory on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize="" jit=ON dir="" targets="" defines=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize) sanitize="$2"; shift 2 ;;
    --sanitize=*) sanitize="${1#*=}"; shift ;;
    --no-jit) jit=OFF; shift ;;
    --build-dir) dir="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    -D*) defines+=("$1"); shift ;;
    *) echo "usage: scripts/build.sh [--sanitize address|undefined|thread] [--no-jit] [--build-dir DIR] [--targets \"T ...\"] [-DVAR=VALUE ...]" >&2; exit 2 ;;
  esac
done
case "$sanitize" in
  "") : "${dir:=build}" ;;
  address) : "${dir:=build-asan}" ;;
  undefined) : "${dir:=build-ubsan}" ;;
  thread) : "${dir:=build-tsan}" ;;
  *) echo "scripts/build.sh: unknown sanitizer '$sanitize'" >&2; exit 2 ;;
esac

scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$dir" -G Ninja -DVMJIT_ENABLE_JIT="$jit" -DVMJIT_SANITIZE="$sanitize" \
  "${defines[@]}" >/dev/null
# shellcheck disable=SC2086
ninja -C "$dir" -j "$jobs" $targets >&2
echo "$dir"
