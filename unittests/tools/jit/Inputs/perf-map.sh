# perf-map.sh VMJIT ARG...: runs `VMJIT run ARG... --perf`, prints its
# stdout and stderr, then the lines of the run's perf map (sorted), and
# removes the map; exits with the run's status.
vmjit=$1
shift
"$vmjit" run "$@" --perf 2>&1 &
pid=$!
wait "$pid"
rc=$?
map=/tmp/perf-$pid.map
if [ -f "$map" ]; then
  sort "$map"
  rm -f "$map"
fi
exit "$rc"
