#!/usr/bin/env bash
# Builds the libFuzzer targets (build-fuzz/: clang-19, ASan+UBSan, see
# docs/fuzzing.md) and runs each for a time budget on a scratch copy of its
# seed corpus (fuzz/corpus/<target>/ is never written).
#   scripts/fuzz.sh [--time SECONDS_PER_TARGET] [--seed N] [TARGET...]
# TARGET is loader, assembler or differential (default: all three); the
# budget defaults to 60 s. Prints the executions each target ran. Exits
# non-zero if a target finds a crash, leak, timeout or property violation;
# its input is then in build-fuzz/fuzz-out/<target>/artifacts/. --seed N
# makes libFuzzer's choices repeatable (CI uses one, so that its smoke run
# explores the same inputs every time; campaigns should not).
set -euo pipefail
cd "$(dirname "$0")/.."

time=60
seed=()
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) time="$2"; shift 2 ;;
    --time=*) time="${1#*=}"; shift ;;
    --seed) seed=(-seed="$2"); shift 2 ;;
    --seed=*) seed=(-seed="${1#*=}"); shift ;;
    loader|assembler|differential) targets+=("$1"); shift ;;
    *) echo "usage: scripts/fuzz.sh [--time SECONDS_PER_TARGET] [--seed N] [loader|assembler|differential ...]" >&2; exit 2 ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(loader assembler differential)
[[ "$time" =~ ^[0-9]+$ && "$time" -gt 0 ]] || { echo "scripts/fuzz.sh: --time takes a positive number of seconds" >&2; exit 2; }

scripts/install-deps.sh
dir=build-fuzz
jobs=$(nproc 2>/dev/null || echo 2)
CC=clang-19 CXX=clang++-19 cmake -S . -B "$dir" -G Ninja \
  -DVMJIT_BUILD_FUZZERS=ON -DVMJIT_SANITIZE=address >/dev/null
ninja -C "$dir" -j "$jobs" "${targets[@]/#/vmjit-fuzz-}" >&2

# Per target: largest input (bytes), seconds one input may take, memory.
declare -A max_len=([loader]=16384 [assembler]=8192 [differential]=2048)
declare -A per_input=([loader]=10 [assembler]=10 [differential]=30)
declare -A rss=([loader]=2048 [assembler]=2048 [differential]=4096)
# LLVM keeps caches across JIT compiles, so after most differential inputs
# more was allocated than freed, and libFuzzer would rerun each one under
# LeakSanitizer (5x slower). Leaks are still checked at the end of the run.
declare -A extra=([loader]="" [assembler]="" [differential]="-detect_leaks=0")

# LeakSanitizer stays on; UBSan reports abort (-fno-sanitize-recover).
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# JIT warnings (a failed compile) are reported by the target itself.
export VMJIT_LOG_LEVEL="${VMJIT_LOG_LEVEL:-error}"

failed=()
for t in "${targets[@]}"; do
  out="$dir/fuzz-out/$t"
  rm -rf "$out"
  mkdir -p "$out/corpus" "$out/artifacts"
  cp fuzz/corpus/"$t"/* "$out/corpus/"
  # New inputs go to the first directory only; the regressions are read.
  dirs=("$out/corpus")
  [[ -d fuzz/regressions/$t ]] && dirs+=("fuzz/regressions/$t")
  dict=()
  [[ -f fuzz/dict/$t.dict ]] && dict=(-dict="fuzz/dict/$t.dict")
  status=0
  "$dir/fuzz/vmjit-fuzz-$t" "${dirs[@]}" \
    -max_total_time="$time" -max_len="${max_len[$t]}" \
    -timeout="${per_input[$t]}" -rss_limit_mb="${rss[$t]}" \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/" "${dict[@]}" \
    "${seed[@]}" \
    ${extra[$t]} \
    >"$out/log" 2>&1 || status=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$out/log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$out/log" | tail -n 1 || true)
  echo "fuzz $t: ${execs:-0} executions in ${time} s (${cov:-cov: ?}), exit status $status"
  if [[ $status -ne 0 ]]; then
    failed+=("$t")
    echo "---- last lines of $out/log:"
    tail -n 60 "$out/log"
    echo "---- reproducer(s): $(ls "$out/artifacts" 2>/dev/null | tr '\n' ' ')"
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "scripts/fuzz.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
