# perf-map.sh VMJIT MODE PROG: runs PROG's main(15) with --perf in MODE,
# prints stdout and stderr, then the lines of the run's perf map (sorted),
# and removes the map.
vmjit=$1 mode=$2 prog=$3
"$vmjit" run "$prog" 15 --mode "$mode" --tier-threshold 1 --no-cache --perf 2>&1 &
pid=$!
wait "$pid"
rc=$?
map=/tmp/perf-$pid.map
if [ -f "$map" ]; then
  sort "$map"
  rm -f "$map"
fi
exit "$rc"
