#!/usr/bin/env bash
# Builds vmjit (installing missing packages first) and runs the demo: one
# step of a 2-layer transformer decoder (examples/decode.vmasm) called 5000
# times under `vmjit run` in tiered mode. The --stats table on stderr shows
# the tier-up: `layer` and `main` start in the interpreter, move to the
# baseline tier (copy-and-patch, microseconds) after 2 calls, and `main` to
# the optimizing tier (LLVM, on the background thread) once hot; `layer`,
# too large for tier 2 to beat tier 1, stays there. The
# "calls interp/base/opt" column says how many calls each tier ran.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh "$@" | tail -n 1)
echo "== vmjit run examples/decode.vmasm (tiered: interpreter, then JIT) ==" >&2
"$dir/bin/vmjit" run examples/decode.vmasm examples/weights/decode/x.npy \
  --repeat 5000 --stats
