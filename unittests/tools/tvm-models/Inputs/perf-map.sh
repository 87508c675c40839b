# perf-map.sh VMJIT MODEL TMP: runs MODEL/model.so on MODEL/in0.npy in
# compiled mode with its kernels compiled first (no object cache) and
# --perf, prints stdout and stderr, then the lines of the run's perf map
# (sorted), and removes the map.
vmjit=$1 model=$2 tmp=$3
"$vmjit" run "$model/model.so" "$model/in0.npy" --mode compiled \
  --wait-kernels --no-cache --perf 2>&1 &
pid=$!
wait "$pid"
rc=$?
map=/tmp/perf-$pid.map
if [ -f "$map" ]; then
  sort "$map"
  rm -f "$map"
fi
exit "$rc"
