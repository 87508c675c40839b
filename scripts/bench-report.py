#!/usr/bin/env python3
"""Runs the vmjit-bench harness and writes a report: markdown and an SVG chart.

    scripts/bench-report.py                 # build/, full run (about 25 min)
    scripts/bench-report.py --quick         # smallest sizes, fewer repetitions
    scripts/bench-report.py --update-docs   # write docs/benchmarks.md + .svg
    scripts/bench-report.py --build-dir build-bench --no-build
    scripts/bench-report.py --from-json results.json   # re-render only
    scripts/bench-report.py --tvm-models-table out.json # one table from a
        # vmjit-bench --benchmark_out=out.json run of tvm_models/

The report goes to BUILD_DIR/benchmarks.md (and .svg) unless --out or
--update-docs says otherwise: the tracked docs/benchmarks.md changes only
when asked. The script builds vmjit-bench with CMake and Ninja and never
installs packages; --install-deps runs scripts/install-deps.sh (apt-get)
first.

Each workload group runs as its own vmjit-bench invocation with
--benchmark_repetitions and --benchmark_format=json; every figure in the
report is the median over the repetitions (CPU time, except load and warmup,
which are wall-clock). The raw results are kept with --save-json FILE.

Environment: OPENBLAS_CORETYPE is set (SkylakeX with AVX-512, Haswell with
AVX2) only if the caller did not set it, since OpenBLAS misdetects the CPU
of these VMs as "Prescott"; VMJIT_CACHE_DIR and VMJIT_TIER_THRESHOLD are
removed (the harness measures compiles at the default threshold), and the
report says what was used. Python 3 standard library only.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = ["bytecode", "baseline", "compiled", "tiered", "native"]
TIER_COLORS = {"bytecode": "#d95f02", "baseline": "#e6ab02",
               "compiled": "#1b9e77", "tiered": "#7570b3", "native": "#666666"}

# (group, filter, quick filter). One vmjit-bench run per group.
GROUPS = [
    ("dispatch", r"^dispatch_(int|tensor|int_tvm)/",
     r"^dispatch_(int|tensor|int_tvm)/[a-z]+/(1|1000)$"),
    ("loops", r"^(loop|calls|closure|owned)/", r"^(loop|calls|closure|owned)/"),
    ("models", r"^(mlp|decode)/", r"^(mlp/[a-z]+/H64|decode/[a-z]+/L4_H64)$"),
    ("warmup", r"^warmup/", r"^warmup/"),
    ("compile", r"^compile/", r"^compile/(O1|cached_O1)/(10|50|100)$"),
    ("tier1", r"^(scalar_chain|tier1_size)/",
     r"^(scalar_chain/[a-z]+/(100|10000)|tier1_size/.*)$"),
    ("tvm_format", r"^tvm_(fib|loop_sum|chain)/", r"^tvm_(fib|loop_sum|chain)/"),
    ("load", r"^load/", r"^load/[a-z]+/(1MiB|16MiB)/"),
    # Registered only where ../shared/tvm-models (or VMJIT_TVM_MODELS) is.
    ("tvm_models", r"^tvm_models/", r"^tvm_models/"),
]
TVM_MODEL_TIERS = ["bytecode", "baseline", "compiled", "tiered"]

# Apache TVM Relax VM, measured separately on these machines (TVM 5d4dc87
# runtime built at -O3). Not measured by this script.
TVM_REFERENCE = [
    ("ns per Call, int argument", 53.0, "dispatch_int", "ns"),
    ("ns per Call, Tensor argument", 107.0, "dispatch_tensor", "ns"),
    ("ns per loop iteration (loop_sum)", 57.0, "loop", "ns"),
    ("ns per invocation (fixed cost)", 150.0, "invocation", "ns"),
]

# Apache TVM's Relax VM on the tvm_format workloads (the same TVM-format
# programs, TVM 5d4dc87 runtime, in-process, interleaved, medians of 3
# rounds x 7; TVM calls scalar.* as typed functions), measured separately
# on these machines: time per invocation in ns. Not measured by this script.
TVM_FORMAT_REFERENCE = [
    ("tvm_fib", "20", "fib(20)", 5.5e6),
    ("tvm_loop_sum", "100000", "loop_sum(10^5)", 11.9e6),
    ("tvm_chain", "100", "chain of 100 scalar.add", 4.8e3),
    ("tvm_chain", "1000", "chain of 1000 scalar.add", 40e3),
]

BOOKKEEPING = {
    "name", "family_index", "per_family_instance_index", "run_name",
    "run_type", "repetitions", "repetition_index", "threads", "iterations",
    "real_time", "cpu_time", "time_unit", "aggregate_name", "aggregate_unit",
    "error_occurred", "error_message", "label",
}
TIME_SCALE = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def sh(cmd, **kw):
    return subprocess.run(cmd, check=False, capture_output=True, text=True,
                          **kw).stdout.strip()


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def openblas_coretype():
    """(value, how) for OPENBLAS_CORETYPE."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return os.environ["OPENBLAS_CORETYPE"], "set by the caller"
    flags = cpu_flags()
    if "avx512f" in flags:
        return "SkylakeX", "set by this script (the CPU has AVX-512)"
    if "avx2" in flags:
        return "Haswell", "set by this script (the CPU has AVX2)"
    return None, "not set (the CPU has neither AVX-512 nor AVX2)"


def build(build_dir, install_deps):
    """Configures (once) and builds vmjit-bench; installs packages only when
    asked."""
    cmds = []
    if install_deps:
        cmds.append([os.path.join(ROOT, "scripts", "install-deps.sh")])
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        cmds.append(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja"])
    cmds.append(["ninja", "-C", build_dir, "vmjit-bench"])
    for cmd in cmds:
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def run_group(binary, flt, reps, min_time, env, series_dir):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    cmd = [binary, "--benchmark_filter=" + flt,
           "--benchmark_repetitions=%d" % reps,
           "--benchmark_min_time=%g" % min_time,
           "--benchmark_format=console",
           "--benchmark_out_format=json", "--benchmark_out=" + out]
    print("+", " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    e = dict(env, VMJIT_BENCH_SERIES_DIR=series_dir)
    # Console output goes to stderr so that progress stays visible.
    rc = subprocess.run(cmd, env=e, stdout=sys.stderr).returncode
    try:
        with open(out) as f:
            data = json.load(f)
    finally:
        os.unlink(out)
    if rc != 0:
        raise SystemExit("vmjit-bench failed (exit status %d)" % rc)
    return data


def run_all(args):
    binary = os.path.join(args.build_dir, "benchmarks", "vmjit-bench")
    if not os.path.isabs(binary):
        binary = os.path.join(ROOT, binary)
    if not args.no_build:
        build(args.build_dir, args.install_deps)
    if not os.access(binary, os.X_OK):
        raise SystemExit("no %s (build it, or drop --no-build)" % binary)
    env = dict(os.environ)
    coretype, how = openblas_coretype()
    if coretype and not env.get("OPENBLAS_CORETYPE"):
        env["OPENBLAS_CORETYPE"] = coretype
    removed = [v for v in ("VMJIT_CACHE_DIR", "VMJIT_TIER_THRESHOLD")
               if env.pop(v, None) is not None]
    results = {"context": None, "benchmarks": [], "series": {},
               "settings": {
                   "quick": args.quick, "repetitions": args.repetitions,
                   "min_time": args.min_time, "filter": args.filter,
                   "openblas_coretype": coretype, "openblas_how": how,
                   "removed_env": removed,
                   "commit": sh(["git", "-C", ROOT, "rev-parse", "--short",
                                 "HEAD"]) or "unknown",
                   "dirty": bool(sh(["git", "-C", ROOT, "status", "--porcelain",
                                     "--untracked-files=no"])),
                   "command": " ".join(shlex.quote(a) for a in sys.argv),
                   "started": datetime.datetime.now(datetime.timezone.utc)
                   .strftime("%Y-%m-%d %H:%M UTC"),
               }}
    listed = sh([binary, "--benchmark_list_tests=true"], env=env).splitlines()
    with tempfile.TemporaryDirectory() as series_dir:
        for group, full, quick in GROUPS:
            # The group's names (and --filter's), as one exact alternation:
            # Google Benchmark's regexes cannot intersect two patterns.
            rx = re.compile(quick if args.quick else full)
            names = [n for n in listed if rx.search(n) and
                     (not args.filter or re.search(args.filter, n))]
            if not names:
                continue
            # (Google Benchmark's std::regex rejects re.escape's "\-".)
            flt = "^(%s)$" % "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])",
                                             r"\\\1", n) for n in names)
            # A warmup iteration reports (manual time) only the steady
            # state, a few ms, but really runs every compile: one
            # iteration per repetition, or a repetition would run for
            # minutes.
            mt = min(args.min_time, 0.001) if group == "warmup" else args.min_time
            data = run_group(binary, flt, args.repetitions, mt, env,
                             series_dir)
            results["context"] = results["context"] or data["context"]
            results["benchmarks"] += data["benchmarks"]
            if args.save_json:  # after every group: a stopped run keeps them
                with open(args.save_json, "w") as f:
                    json.dump(results, f)
        for fn in sorted(os.listdir(series_dir)):
            with open(os.path.join(series_dir, fn)) as f:
                s = json.load(f)
            results["series"][s["name"]] = s
    results["settings"]["load_avg_end"] = os.getloadavg()
    return results


# ---------------------------------------------------------------------------
# Medians
# ---------------------------------------------------------------------------

def base_name(run_name):
    return re.sub(r"(/(real_time|manual_time|repeats:\d+|iterations:\d+|"
                  r"min_time:[0-9.]+))+$", "", run_name)


def medians(benchmarks):
    """{name: {"time": ns, "cpu": ns, "real": ns, counters...}}, medians
    over the repetitions. Counters that are times per item (seconds) are
    converted to ns by name (ns_per_*)."""
    runs = {}
    errors = {}
    # A run with --benchmark_report_aggregates_only has no iteration rows:
    # its "median" aggregates stand in for them.
    has_iterations = any(b.get("run_type") == "iteration" for b in benchmarks)
    for b in benchmarks:
        if b.get("run_type") != "iteration" and (
                has_iterations or b.get("aggregate_name") != "median"):
            continue
        name = base_name(b.get("run_name", b["name"]))
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        scale = TIME_SCALE[b.get("time_unit", "ns")]
        row = {"cpu": b["cpu_time"] * scale, "real": b["real_time"] * scale,
               "manual": b["run_name"].endswith("manual_time"),
               "realtime": "/real_time" in b["run_name"]}
        for k, v in b.items():
            if k in BOOKKEEPING or not isinstance(v, (int, float)):
                continue
            row[k] = v * 1e9 if k.startswith("ns_per_") else v
        runs.setdefault(name, []).append(row)
    out = {}
    for name, rows in runs.items():
        m = {}
        for k in rows[0]:
            if isinstance(rows[0][k], bool):
                m[k] = rows[0][k]
            else:
                m[k] = statistics.median(r[k] for r in rows if k in r)
        m["reps"] = len(rows)
        # The time a workload is judged by: CPU time, wall time where the
        # benchmark asked for it (load, warmup).
        m["time"] = m["real"] if (m["manual"] or m["realtime"]) else m["cpu"]
        out[name] = m
    return out, errors


# ---------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------

def fmt_ns(ns):
    if ns is None:
        return "–"
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.3g ms" % (ns / 1e6) if ns < 1e8 else "%.0f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.3g µs" % (ns / 1e3) if ns < 1e5 else "%.0f µs" % (ns / 1e3)
    return "%.3g ns" % ns if ns < 100 else "%.0f ns" % ns


def fmt_ratio(r):
    if r is None:
        return "–"
    return "%.2f×" % r if r < 10 else "%.1f×" % r


def fmt_num(x, digits=3):
    if x is None:
        return "–"
    return "%.*g" % (digits, x)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def verdict(ok):
    if ok is None:
        return "not measured"
    return "**met**" if ok else "**not met**"


# ---------------------------------------------------------------------------
# Report sections
# ---------------------------------------------------------------------------

def machine_section(res, build_dir):
    ctx = res["context"] or {}
    st = res["settings"]
    model = "unknown"
    cores = os.cpu_count()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = "%.1f GiB" % (kb / 2**20)
    except (OSError, ValueError, IndexError):
        pass
    cache = {}
    bdir = build_dir if os.path.isabs(build_dir) else os.path.join(ROOT, build_dir)
    try:
        with open(os.path.join(bdir, "CMakeCache.txt")) as f:
            for line in f:
                m = re.match(r"([A-Za-z_]+):[A-Z]+=(.*)", line)
                if m:
                    cache[m.group(1)] = m.group(2)
    except OSError:
        pass
    cxx = cache.get("CMAKE_CXX_COMPILER", "c++")
    compiler = sh([cxx, "--version"]).splitlines()[:1] or ["unknown"]
    # The tree when the harness ran (recorded by run_all).
    commit = st.get("commit", "unknown")
    dirty = st.get("dirty", False)
    gbench = sh(["dpkg-query", "-W", "-f=${Version}", "libbenchmark-dev"])
    caches = ", ".join(
        "L%d %s %d KiB" % (c["level"], c["type"].lower(), c["size"] // 1024)
        for c in ctx.get("caches", []))
    rows = [
        ("CPU", "%s, %d logical CPUs%s" % (
            model, cores, (", LLVM host CPU `%s`" % ctx["llvm_host_cpu"])
            if ctx.get("llvm_host_cpu") else "")),
        ("caches", caches or "unknown"),
        ("memory", mem),
        ("kernel", platform.release()),
        ("compiler", "%s (%s build)" % (compiler[0],
                                       cache.get("CMAKE_BUILD_TYPE", "?"))),
        ("LLVM (JIT)", ctx.get("llvm_version", "JIT off")),
        ("Google Benchmark", gbench or "unknown"),
        ("OpenBLAS core type", "`OPENBLAS_CORETYPE=%s`, %s" % (
            st["openblas_coretype"], st["openblas_how"])
            if st["openblas_coretype"] else st["openblas_how"]),
        ("git commit", commit + (" (with uncommitted changes)" if dirty else "")),
        ("date", st["started"]),
        ("load average", "%s at the start, %s at the end" % (
            " ".join("%.2f" % x for x in ctx.get("load_avg", [])) or "?",
            " ".join("%.2f" % x for x in st.get("load_avg_end", [])) or "?")),
        ("settings", "%d repetitions, `--benchmark_min_time=%g`%s%s" % (
            st["repetitions"], st["min_time"],
            ", quick subset" if st["quick"] else "",
            (", filter `%s`" % st["filter"]) if st["filter"] else "")),
        ("environment removed", ", ".join(st["removed_env"]) or "none"),
    ]
    return table(["", ""], rows)


def slope(m, workload, tier):
    a = m.get("%s/%s/1" % (workload, tier))
    b = m.get("%s/%s/1000" % (workload, tier))
    if not a or not b:
        return None, None
    s = (b["time"] - a["time"]) / 999.0
    return s, a["time"] - s


def tier_table(m, workload, sizes, metric, unit_fmt, driver=False):
    """Rows per size and tier: value, ×native, ×bytecode (and the driver's
    share for model workloads)."""
    header = ["size", "tier", "time", "× native", "× bytecode"]
    if driver:
        header += ["driver (tier − native)", "driver share"]
    rows = []
    for size in sizes:
        vals = {}
        for t in TIERS:
            r = m.get("%s/%s/%s" % (workload, t, size))
            if r is not None:
                vals[t] = metric(r)
        if not vals:
            continue
        for t in TIERS:
            if t not in vals:
                continue
            v = vals[t]
            nat = vals.get("native")
            byt = vals.get("bytecode")
            row = [size, t, unit_fmt(v),
                   fmt_ratio(v / nat) if nat else "–",
                   fmt_ratio(v / byt) if byt else "–"]
            if driver:
                if nat is not None and t != "native":
                    row += [unit_fmt(v - nat) if v >= nat
                            else "−" + unit_fmt(nat - v),
                            "%.1f%%" % (100.0 * (v - nat) / v)]
                else:
                    row += ["", ""]
            rows.append(row)
    return table(header, rows)


def ratio(m, a, b, key="time"):
    if a in m and b in m and m[b][key]:
        return m[a][key] / m[b][key]
    return None


def targets_section(m, series):
    rows = []

    def add(what, figure, ok):
        rows.append([what, figure, verdict(ok)])

    for wl, limit in (("dispatch_int", 12.0), ("dispatch_tensor", 20.0)):
        s, _ = slope(m, wl, "bytecode")
        add("%s bytecode ≤ %g ns per Call" % (wl, limit),
            "%s ns" % fmt_num(s) if s is not None else "–",
            None if s is None else s <= limit)
        sc, _ = slope(m, wl, "compiled")
        sn, _ = slope(m, wl, "native")
        r = sc / sn if sc is not None and sn else None
        add("%s compiled ≤ 1.15× native (per Call)" % wl,
            "%s / %s ns = %s" % (fmt_num(sc), fmt_num(sn), fmt_ratio(r))
            if r is not None else "–", None if r is None else r <= 1.15)
    lc = m.get("loop/compiled/1000000")
    v = lc.get("ns_per_iter") if lc else None
    add("loop compiled ≤ 1.0 ns per iteration",
        "%s ns" % fmt_num(v) if v is not None else "–",
        None if v is None else v <= 1.0)
    r = ratio(m, "calls/compiled/25", "calls/native/25")
    add("calls (fib 25) compiled ≤ 0.6× native",
        "%s vs %s = %s" % (fmt_ns(m["calls/compiled/25"]["time"]),
                           fmt_ns(m["calls/native/25"]["time"]), fmt_ratio(r))
        if r is not None else "–", None if r is None else r <= 0.6)
    r = ratio(m, "closure/compiled/100000", "closure/native/100000")
    add("closure compiled ≤ 1.2× native",
        "%s vs %s = %s" % (fmt_ns(m["closure/compiled/100000"]["time"]),
                           fmt_ns(m["closure/native/100000"]["time"]),
                           fmt_ratio(r))
        if r is not None else "–", None if r is None else r <= 1.2)
    ct = m.get("compile/typed_O1/50")
    add("tier-2 compile ≤ 10 ms, 50 typed instructions (O1, after feedback)",
        fmt_ns(ct["time"]) if ct else "–",
        None if not ct else ct["time"] <= 10e6)
    ir = ct.get("ir_per_instr") if ct else None
    add("≤ 5 IR instructions per bytecode instruction on typed code (after "
        "the pipeline; %s as lowered)" %
        (fmt_num(ct["ir_per_instr_lowered"]) if ct and
         "ir_per_instr_lowered" in ct else "–"),
        fmt_num(ir) if ir is not None else "–",
        None if ir is None else ir <= 5)
    for prog in ("decode", "mlp"):
        w = m.get("warmup/tiered/" + prog)
        if not w:
            continue
        add("warmup %s: after the swap, tiered within 5%% of compiled" % prog,
            "%s vs %s µs per call = %s" % (fmt_num(w["tiered_us"]),
                                           fmt_num(w["compiled_us"]),
                                           fmt_ratio(w["tiered_vs_compiled"])),
            w["tiered_vs_compiled"] <= 1.05)
        add("warmup %s: steady state ≤ threshold calls + 2 ms" % prog,
            "%s ms (target %s ms; swap after call %d)" % (
                fmt_num(w["steady_ms"]), fmt_num(w["target_ms"]),
                int(w["swap_call"])),
            w["steady_ms"] <= w["target_ms"])
    for wl, sizes in (("mlp", ["H64", "H256", "H1024"]),
                      ("decode", ["L4_H64", "L4_H512", "L32_H64", "L32_H512"])):
        for size in sizes:
            r = ratio(m, "%s/compiled/%s" % (wl, size),
                      "%s/native/%s" % (wl, size))
            if r is None:
                continue
            add("%s %s compiled ≤ 1.05× native" % (wl, size),
                "%s vs %s = %s" % (
                    fmt_ns(m["%s/compiled/%s" % (wl, size)]["time"]),
                    fmt_ns(m["%s/native/%s" % (wl, size)]["time"]),
                    fmt_ratio(r)), r <= 1.05)
    per = [(n, m["compile/baseline/%d" % n]["time"] / n)
           for n in BASELINE_SIZES if "compile/baseline/%d" % n in m]
    if per:
        add("baseline compile ≤ 1 µs per instruction at every size (10 .. 10^5)",
            ", ".join("%d: %s" % (n, fmt_ns(t)) for n, t in per),
            max(t for _, t in per) <= 1e3)
    # Never slower than the interpreter: every native tier on every
    # workload and size that has a bytecode run (the worst ratio shown).
    for tier in ("baseline", "compiled", "tiered"):
        worst = None
        for name, t in m.items():
            parts = name.split("/")
            if len(parts) != 3 or parts[1] != tier:
                continue
            b = m.get("%s/bytecode/%s" % (parts[0], parts[2]))
            if b and b["time"] > 0:
                r = t["time"] / b["time"]
                if worst is None or r > worst[0]:
                    worst = (r, name, t["time"], b["time"])
        if worst:
            r, name, tt, bt = worst
            add("%s ≤ 1.0× bytecode on every workload and size (worst)" % tier,
                "%s: %s vs %s = %s" % (name, fmt_ns(tt), fmt_ns(bt),
                                       fmt_ratio(r)), r <= 1.0)
    # Per-call cost does not depend on the file format the program came in.
    for tier in ("bytecode", "compiled"):
        t = m.get("dispatch_int_tvm/%s/1000" % tier)
        v = m.get("dispatch_int/%s/1000" % tier)
        if t and v:
            r = t["time"] / v["time"]
            add("TVM-format program, %s: per Call within 5%% of vmjit's "
                "format (dispatch_int_tvm vs dispatch_int, N = 1000)" % tier,
                "%s vs %s = %s" % (fmt_ns(t["time"] / 1000),
                                   fmt_ns(v["time"] / 1000), fmt_ratio(r)),
                r <= 1.05)
    cb = m.get("scalar_chain/baseline/10000")
    cy = m.get("scalar_chain/bytecode/10000")
    r = cb["time"] / cy["time"] if cb and cy else None
    add("tier 1 on straight-line code: scalar_chain (10^4 scalar.add) "
        "baseline ≤ 0.5× bytecode",
        "%s vs %s = %s" % (fmt_ns(cb["time"]), fmt_ns(cy["time"]),
                           fmt_ratio(r)) if r is not None else "–",
        None if r is None else r <= 0.5)
    sizes = [(sh, m["tier1_size/" + sh].get("hot_bytes"))
             for sh in ("scalar_rr", "scalar_ri") if "tier1_size/" + sh in m]
    if sizes:
        add("tier 1: ≤ 80 bytes of hot code per two-operand scalar Call",
            ", ".join("%s: %s B" % (sh, fmt_num(b)) for sh, b in sizes),
            max(b for _, b in sizes) <= 80)
    c50 = m.get("compile/O1/50")
    add("compile ≤ 1 ms, 50 instructions at the tier-up level (O1)",
        fmt_ns(c50["time"]) if c50 else "–",
        None if not c50 else c50["time"] <= 1e6)
    growth = compile_growth(m, "O1")
    if growth:
        worst = max(g for _, _, g in growth)
        add("compile time grows linearly with size (O1; each ×10 in size "
            "costs ≤ 12× in time)",
            ", ".join("%d→%d: %s" % (a, b, fmt_ratio(g)) for a, b, g in growth),
            worst <= 12)
    lg = m.get("load/verify/1GiB")
    add("load 1 GiB ≤ 50 ms (default: data checksum verified)",
        fmt_ns(lg["time"]) if lg else "–", None if not lg else lg["time"] <= 50e6)
    ln = m.get("load/noverify/1GiB")
    if ln:
        add("load 1 GiB ≤ 50 ms without the checksum", fmt_ns(ln["time"]),
            ln["time"] <= 50e6)
    return table(["target", "measured (median)", "verdict"], rows)


COMPILE_SIZES = [10, 50, 100, 1000, 10000]
BASELINE_SIZES = [10, 50, 100, 1000, 10000, 100000]


def compile_growth(m, level):
    out = []
    sizes = [n for n in COMPILE_SIZES if "compile/%s/%d" % (level, n) in m]
    for a, b in zip(sizes, sizes[1:]):
        if a * 10 == b:
            out.append((a, b, m["compile/%s/%d" % (level, b)]["time"] /
                        m["compile/%s/%d" % (level, a)]["time"]))
    return out


def compile_section(m):
    levels = ["O0", "O1", "O2", "cached_O1", "baseline"]
    rows = []
    for n in BASELINE_SIZES:
        cells = [m.get("compile/%s/%d" % (lv, n)) for lv in levels]
        if not any(cells):
            continue
        o1, base = cells[1], cells[4]
        rows.append([n] + [fmt_ns(c["time"]) if c else "–" for c in cells] +
                    [fmt_ns(o1["time"] / n) if o1 else "–",
                     fmt_ns(base["time"] / n) if base else "–"])
    return table(["instructions", "O0", "O1 (tier 2)", "O2",
                  "O1, warm object cache", "baseline (tier 1)",
                  "O1 per instruction", "baseline per instruction"], rows)


def typed_compile_section(m):
    rows = []
    for n in (10, 50):
        c = m.get("compile/typed_O1/%d" % n)
        if c:
            rows.append([n, fmt_ns(c["time"]),
                         fmt_num(c.get("ir_per_instr_lowered", 0)),
                         fmt_num(c.get("ir_per_instr", 0))])
    return table(["instructions", "O1 with feedback", "IR per instruction, "
                  "lowered", "IR per instruction, optimized"], rows)


def load_section(m):
    rows = []
    for size, nbytes in (("1MiB", 2**20), ("16MiB", 2**24),
                         ("256MiB", 2**28), ("1GiB", 2**30)):
        v = m.get("load/verify/" + size)
        n = m.get("load/noverify/" + size)
        t = m.get("load/tvm/" + size)
        if not v and not n and not t:
            continue
        rows.append([size, fmt_ns(v["time"]) if v else "–",
                     "%.1f GB/s" % (nbytes / v["time"]) if v else "–",
                     fmt_ns(n["time"]) if n else "–",
                     fmt_ns(t["time"]) if t else "–",
                     "%.1f GB/s" % (nbytes / t["time"]) if t else "–"])
    return table(["tensor data", "load + verify (default)", "verify rate",
                  "load, no checksum",
                  "TVM's format (weights copied)", "TVM copy rate"], rows)


def tvm_format_section(m):
    tiers = ["bytecode", "baseline", "compiled", "tiered"]
    rows = []
    for wl, size, what, tvm in TVM_FORMAT_REFERENCE:
        cells = []
        for t in tiers:
            r = m.get("%s/%s/%s" % (wl, t, size))
            cells.append("%s (%s)" % (fmt_ns(r["time"]),
                                      fmt_ratio(tvm / r["time"]))
                         if r else "–")
        rows.append([what, fmt_ns(tvm)] + cells)
    return table(["workload", "TVM's VM (reference)"] +
                 ["vmjit %s (× faster than TVM)" % t for t in tiers], rows)


TIER1_SHAPES = ["scalar_rr", "scalar_ri", "scalar_const", "packed_call",
                "pool_call", "null_value", "if"]


def tier1_section(m):
    rows = []
    for sh in TIER1_SHAPES:
        r = m.get("tier1_size/" + sh)
        if r:
            rows.append([sh, fmt_num(r.get("hot_bytes", 0)),
                         fmt_num(r.get("bytes", 0)),
                         fmt_ns(r.get("ns_per_instr", 0))])
    return table(["shape", "hot bytes per instruction",
                  "bytes per instruction (with slow paths)",
                  "time per instruction"], rows)


def tvm_models_section(m):
    """Per model TVM built (VMJIT_TVM_MODELS) and tier: µs per call, the
    kernels-only floor, and the driver's overhead (tier − floor)."""
    models = []
    for name in m:
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == "tvm_models" and \
                parts[1] not in models:
            models.append(parts[1])
    if not models:
        return ("Not run: no models folder (`VMJIT_TVM_MODELS`, such as "
                "the one `examples/tvm/build_models.py` writes, or the test "
                "fixtures `../shared/tvm-models` beside the source tree).")
    us = lambda ns: fmt_num(ns / 1e3)
    rows = []
    for model in models:
        fl = m.get("tvm_models/%s/floor" % model)
        floor = fl["time"] if fl else None
        for t in TVM_MODEL_TIERS:
            r = m.get("tvm_models/%s/%s" % (model, t))
            if not r:
                continue
            v = r["time"]
            rows.append([model, t, us(v),
                         us(floor) if floor is not None else "–",
                         us(v - floor) if floor is not None else "–",
                         "%.0f%%" % (100.0 * (v - floor) / v)
                         if floor is not None and v else "–"])
        if fl:
            rows.append([model, "floor (%d kernel calls)" % int(fl.get(
                "kernels", 0)), us(floor), "", "", ""])
    return table(["model", "tier", "µs per call", "floor µs",
                  "overhead µs (tier − floor)", "overhead share"], rows)


def warmup_section(m, series):
    out = []
    for prog in ("decode", "mlp"):
        name = "warmup/tiered/" + prog
        w = m.get(name)
        if not w:
            continue
        fns = sorted(k[len("swap_call_"):] for k in w
                     if k.startswith("swap_call_"))
        out.append("**%s** (`examples/%s.vmasm`, threshold %d):\n" %
                   (prog, prog, int(w["threshold"])))
        rows = [
            ["time to steady state (every function native)",
             "%s ms" % fmt_num(w["steady_ms"])],
            ["target: threshold × interpreted call + 2 ms",
             "%s ms" % fmt_num(w["target_ms"])],
            ["call after which every function is native", "%d" % w["swap_call"]],
        ]
        for f in fns:
            rows.append(["`%s`: native after call / background compile" % f,
                         "%d / %s ms" % (w["swap_call_" + f],
                                         fmt_num(w["compile_ms_" + f]))])
        rows += [
            ["interpreted call (median before the first swap)",
             "%s µs" % fmt_num(w["bytecode_us"])],
            ["tiered call after the swap (median)", "%s µs" % fmt_num(w["tiered_us"])],
            ["compiled-mode call (median)", "%s µs" % fmt_num(w["compiled_us"])],
            ["tiered / compiled", fmt_ratio(w["tiered_vs_compiled"])],
        ]
        rows.append(["calls 0, 1, 10, 50, 99, 100, 150, 199 (µs)",
                     ", ".join(fmt_num(w.get("call%d_us" % k))
                               for k in (0, 1, 10, 50, 99, 100, 150, 199))])
        out.append(table(["", ""], rows))
        s = series.get(name)
        if s:
            calls = s["calls_us"]
            bins = []
            for lo in range(0, min(200, len(calls)), 20):
                seg = calls[lo:lo + 20]
                bins.append("%d–%d: %s" % (lo, lo + len(seg) - 1,
                                           fmt_num(statistics.median(seg))))
            swap = int(w["swap_call"])
            around = calls[max(0, swap - 3):swap + 4]
            out.append(
                "\nPer-call series (median over iterations, µs), first 200 "
                "calls in bins of 20 (median per bin): %s. Around the swap "
                "(calls %d–%d): %s. The full series is in the raw JSON "
                "(`--save-json`).\n" % (
                    "; ".join(bins), max(0, swap - 3),
                    max(0, swap - 3) + len(around) - 1,
                    ", ".join(fmt_num(x) for x in around)))
        out.append("")
    return "\n".join(out)


def tvm_section(m):
    rows = []
    for what, tvm, key, _ in TVM_REFERENCE:
        if key in ("dispatch_int", "dispatch_tensor"):
            ours = {t: slope(m, key, t)[0] for t in ("bytecode", "compiled")}
        elif key == "loop":
            ours = {t: (m.get("loop/%s/1000000" % t) or {}).get("ns_per_iter")
                    for t in ("bytecode", "compiled")}
        else:
            ours = {t: slope(m, "dispatch_int", t)[1]
                    for t in ("bytecode", "compiled")}
        rows.append([what, "%g" % tvm,
                     fmt_num(ours["bytecode"]), fmt_num(ours["compiled"])])
    return table(["", "Apache TVM Relax VM (measured separately)",
                  "vmjit bytecode", "vmjit compiled"], rows)


# ---------------------------------------------------------------------------
# SVG
# ---------------------------------------------------------------------------

def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chart_rows(m):
    """(label, {tier: ratio to native}) for the chart."""
    rows = []

    def add(label, names):
        nat = m.get(names["native"])
        if not nat:
            return
        rs = {}
        for t in ("bytecode", "compiled", "tiered"):
            r = m.get(names[t])
            if r:
                rs[t] = r["time"] / nat["time"]
        if rs:
            rows.append((label, rs))

    for wl in ("dispatch_int", "dispatch_tensor"):
        nat = slope(m, wl, "native")[0]
        if nat:
            rs = {t: slope(m, wl, t)[0] / nat for t in ("bytecode", "compiled",
                                                         "tiered")
                  if slope(m, wl, t)[0] is not None}
            rows.append((wl + " (per Call)", rs))
    for wl, size, label in (("loop", "1000000", "loop"),
                            ("calls", "25", "calls fib(25)"),
                            ("closure", "100000", "closure")):
        add(label, {t: "%s/%s/%s" % (wl, t, size) for t in TIERS})
    for size in ("H64", "H256", "H1024"):
        add("mlp " + size, {t: "mlp/%s/%s" % (t, size) for t in TIERS})
    for size in ("L4_H64", "L4_H512", "L32_H64", "L32_H512"):
        add("decode " + size, {t: "decode/%s/%s" % (t, size) for t in TIERS})
    return rows


def svg_chart(m, series):
    rows = chart_rows(m)
    tiers = ["bytecode", "compiled", "tiered"]
    W, left, right = 760, 170, 30
    bar_h, gap = 9, 8
    top = 56
    plot_w = W - left - right
    ratios = [r for _, rs in rows for r in rs.values() if r > 0]
    lo = min(ratios + [0.5])
    hi = max(ratios + [2.0])
    lo_e = math.floor(math.log2(lo))
    hi_e = math.ceil(math.log2(hi))

    def x(r):
        return left + (math.log2(r) - lo_e) / (hi_e - lo_e) * plot_w

    group_h = len(tiers) * bar_h + gap
    plot_h = len(rows) * group_h
    parts = []
    y0 = top
    parts.append('<text x="%d" y="22" font-size="15" font-weight="bold">'
                 'Time relative to the native floor (log scale; 1 = hand-written '
                 'C++ driver)</text>' % 10)
    # legend
    lx = left
    for t in tiers:
        parts.append('<rect x="%d" y="32" width="12" height="10" fill="%s"/>'
                     '<text x="%d" y="41" font-size="12">%s</text>' %
                     (lx, TIER_COLORS[t], lx + 16, t))
        lx += 100
    for e in range(lo_e, hi_e + 1):
        xx = x(2.0 ** e)
        parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" '
                     'stroke-width="%s"/>' % (xx, y0 - 4, xx, y0 + plot_h,
                                             "#000" if e == 0 else "#ddd",
                                             "1.2" if e == 0 else "1"))
        label = ("%g×" % (2.0 ** e))
        parts.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">'
                     '%s</text>' % (xx, y0 + plot_h + 14, label))
    for i, (label, rs) in enumerate(rows):
        gy = y0 + i * group_h
        parts.append('<text x="%d" y="%d" font-size="12" text-anchor="end">%s'
                     '</text>' % (left - 8, gy + group_h // 2 + 2, esc(label)))
        for j, t in enumerate(tiers):
            if t not in rs:
                continue
            r = rs[t]
            x1, x2 = sorted((x(1.0), x(r)))
            by = gy + j * bar_h
            parts.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                         'fill="%s"><title>%s %s: %.3g×</title></rect>' %
                         (x1, by, max(x2 - x1, 1), bar_h - 1, TIER_COLORS[t],
                          esc(label), t, r))
            tx = x(r) + 3 if r >= 1 else x(r) - 3
            parts.append('<text x="%.1f" y="%d" font-size="8" fill="#333" '
                         'text-anchor="%s">%.2f</text>' %
                         (tx, by + bar_h - 2, "start" if r >= 1 else "end", r))
    H = y0 + plot_h + 30

    # Warmup panels: per-call time of the first calls, log scale.
    panels = [(n, s) for n, s in sorted(series.items())]
    panel_h, ph_top = 170, H + 20
    for k, (name, s) in enumerate(panels):
        calls = s["calls_us"]
        swaps = sorted(set(v for vs in s["functions"].values()
                           for v in [statistics.median(vs)]))
        last_swap = int(statistics.median(s["swap_calls"]))
        n = min(len(calls), max(200, last_swap + 50))
        pts = calls[:n]
        if not pts:
            continue
        py = ph_top + k * (panel_h + 40)
        ymin = max(min(pts), 1e-3)
        ymax = max(pts)
        ylo, yhi = math.floor(math.log10(ymin)), math.ceil(math.log10(ymax))
        if yhi == ylo:
            yhi += 1

        def px(i):
            return left + i / max(n - 1, 1) * plot_w

        def py_(v):
            v = max(v, ymin)
            return py + 20 + (1 - (math.log10(v) - ylo) / (yhi - ylo)) * (panel_h - 30)

        parts.append('<text x="10" y="%d" font-size="13" font-weight="bold">'
                     '%s: time of each call, µs (log), calls 0–%d</text>' %
                     (py + 8, esc(name), n - 1))
        for e in range(ylo, yhi + 1):
            yy = py_(10.0 ** e)
            parts.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                         '<text x="%d" y="%.1f" font-size="11" text-anchor="end">'
                         '%g</text>' % (left, yy, left + plot_w, yy, left - 6,
                                        yy + 4, 10.0 ** e))
        thr = s.get("threshold", 100)
        marks = [(thr, "threshold (%d)" % thr, "#999")]
        for fname, vs in s["functions"].items():
            marks.append((int(statistics.median(vs)), "%s native" % fname,
                          TIER_COLORS["compiled"]))
        for idx, (ci, text, color) in enumerate(marks):
            if ci >= n:
                continue
            xx = px(ci)
            parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" '
                         'stroke-dasharray="4,3"/><text x="%.1f" y="%d" '
                         'font-size="10" fill="%s">%s</text>' %
                         (xx, py + 16, xx, py + panel_h - 10, color, xx + 3,
                          py + 28 + 11 * idx, color, esc(text)))
        d = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", px(i), py_(v))
                     for i, v in enumerate(pts))
        parts.append('<path d="%s" fill="none" stroke="%s" stroke-width="1"/>'
                     % (d, TIER_COLORS["tiered"]))
        parts.append('<text x="%d" y="%d" font-size="11" text-anchor="middle">'
                     'call index</text>' % (left + plot_w // 2, py + panel_h + 4))
        H = py + panel_h + 20
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" font-family="sans-serif">\n'
            '<rect width="100%%" height="100%%" fill="white"/>\n%s\n</svg>\n' %
            (W, H, W, H, "\n".join(parts)))


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------

# The analysis behind the misses (investigated by hand; see docs/jit.md).
# Prose only: the figures are in the tables above.
WHY_MISSED = """\
- **dispatch_tensor, bytecode.** The hand-written C++ floor making the same
  calls is itself above 20 ns: each call takes a new reference to the
  returned Tensor and drops the one the destination register held, two
  atomic read-modify-writes that cost about 9 ns each on this VM. The
  interpreter adds about 2-3 ns to that. Closing it needs fewer atomic
  operations, not a faster dispatch loop: a return convention that lets a
  callee hand back one of its (borrowed) arguments without a new
  reference, or biased (thread-owned, non-atomic) reference counts.
- **compile latency (tier 2) and its growth.** Tier 2 compiles in the
  background at the tier threshold while tier 1 (copy-and-patch, under
  100 ns per instruction) serves the calls, so its latency no longer
  delays anything (the 1 ms target predates tier 1, which meets it). Its
  growth from 1000 to 10^4 instructions sits at the 12x line (11.3x to
  14.4x between runs; the 1000-instruction compile alone moved from 568
  to 480 ms between the last two reports). `perf record` of one
  10^4-instruction compile shows no pass that dominates: page faults of
  LLVM's growing heap (about 11%), malloc (5%), unreachable-block removal in SimplifyCFG (3%), instcombine
  (2%), the IR verifier (2%), fast register allocation (1%). Functions
  that large never reach tier 2 in tiered or compiled mode (they keep
  tier-1 code, docs/jit.md), so this is the cost of an explicit
  `compileNow` only.
- **mlp H64 and decode: a tier slower than bytecode or native.** At these
  sizes the time goes to glibc `malloc`/`free` of the kernels'
  64-byte-aligned result buffers (about half of all samples in `perf
  record` in every tier: `_int_free`, `_int_malloc`, `_mid_memalign`,
  `malloc_consolidate`); the JIT's own dispatch is a few ns per call. The
  tiers make the same allocations (counted with an `LD_PRELOAD` shim over
  `vmjit run examples/mlp.vmasm --repeat`: 8 `malloc`, 16 aligned
  allocations and 24 `free` per call in bytecode and compiled mode alike);
  they differ in how the allocator's free lists end up, which moves the
  time by more than the driver costs: the same binary measured mlp/H64
  bytecode at 1.37 to 2.13 us in separate processes, and the hand-written
  C++ driver (native) is itself slower than the interpreter in some runs.
  A size-class cache for tensor buffers (as TVM's pooled storage allocator
  does) or destination-passing kernels would remove it.
- **decode at H512, L4 and L32** (met in some runs, missed in others).
  The step is the kernels' (OpenBLAS matrix-vector products; at L32 about
  400 MB of weights read per step, memory-bound), and its time moves by
  10-30% between runs, the C++ floor's as much as the tiers'; the
  driver's share (tens of calls per layer) is far below that noise. An
  interleaved A/B of L4_H512 between two builds whose drivers differ
  (`vmjit-bench --benchmark_filter='^decode/(compiled|native)/L4_H512'
  --benchmark_repetitions=7`, twice each) gave compiled 1998 and 1816 us
  for the older build, 1981 and 1787 us for the newer, and the same
  native floor 1736 to 2014 us across the four runs.
- **load with the checksum.** Verifying reads every byte of the weights
  once (XXH3, about 11 GB/s here), so 1 GiB takes about 90 ms; without the
  data checksum the weights are only mapped. Per-chunk checksums verified
  in parallel, or verified lazily when a tensor is first used, would
  close it; the metadata sections are always verified.
- **TVM's format: weights are copied.** The format has no alignment, so
  every tensor constant is copied into fresh 64-byte aligned memory as it
  loads; at 256 MiB and above the copy runs at under 1 GB/s here (first
  touch of every destination page, plus the source pages of the mapped
  file, on a VM where a page fault costs microseconds), with a large
  spread between repetitions. `vmjit convert model.tvmexec -o model.bin`
  once gives a file whose weights are mapped in place (the two columns to
  its left).
"""


def report(res, build_dir, svg_name):
    m, errors = medians(res["benchmarks"])
    series = res.get("series", {})
    st = res["settings"]
    ns = lambda v: fmt_ns(v)
    per = lambda key: (lambda r: r.get(key, r["time"]))
    L = []
    L.append("# Benchmarks\n")
    L.append(
        "Generated by `scripts/bench-report.py` from `vmjit-bench` (Google "
        "Benchmark): every figure is the median over %d repetitions%s, CPU "
        "time of the benchmarking thread unless marked otherwise. The machine "
        "is a shared, noisy VM: figures move by 10–20%% between runs. "
        "Regenerate with `scripts/bench-report.py --update-docs` (without it "
        "the report goes to `build/benchmarks.md`; add `--quick` for the "
        "smallest sizes only).\n" % (
            st["repetitions"], " (quick subset)" if st["quick"] else ""))
    L.append("Tiers: `bytecode` (the interpreter), `compiled` (every function "
             "compiled before the first call), `tiered` (after warm-up and the "
             "swap: the steady state), `native` (a hand-written C++ driver "
             "making the same calls through the same safe-call entries: the "
             "floor). Sources: `benchmarks/*.cpp` (each file's header says "
             "what it measures).\n")
    L.append("Measurements this script does not make (one-run before-and-after "
             "comparisons, older tables, allocation counts, the Python and "
             "language-model figures) are in [measurements.md]"
             "(measurements.md): this file is regenerated whole.\n")
    L.append("## Machine\n")
    L.append(machine_section(res, build_dir) + "\n")
    if errors:
        L.append("**Benchmarks that reported an error:** " + "; ".join(
            "`%s`: %s" % kv for kv in sorted(errors.items())) + "\n")
    L.append("## Targets\n")
    L.append(targets_section(m, series) + "\n")
    L.append("![Time relative to native, per tier](%s)\n" % svg_name)

    L.append("## dispatch: ns per Call\n")
    L.append("A chain of N calls `r[i+1] = f(r[i])` of a trivial packed "
             "function (`dispatch_int`: an int increment; `dispatch_tensor`: "
             "returns its Tensor argument). Time is ns per Call (one "
             "invocation / N). *Per Call* below is the slope from N = 1 to "
             "N = 1000 (the targets use it); *fixed* is the cost of one "
             "invocation beyond its calls.\n")
    for wl in ("dispatch_int", "dispatch_tensor"):
        L.append("**%s**\n" % wl)
        L.append(tier_table(m, wl, ["1", "10", "100", "1000"],
                            per("ns_per_call"), ns) + "\n")
        rows = []
        for t in TIERS:
            s, fixed = slope(m, wl, t)
            if s is not None:
                rows.append([t, "%s ns" % fmt_num(s), "%s ns" % fmt_num(fixed)])
        L.append(table(["tier", "per Call (slope)", "fixed per invocation"],
                       rows) + "\n")

    L.append("## loop, calls, closure\n")
    L.append("`loop`: `examples/loop_sum.vmasm`, n = 10^6, ns per iteration "
             "(four instructions: add, add, compare, branch). `native` calls "
             "`scalar.add`/`scalar.ge` through their safe-call entries; JIT code "
             "inlines these builtins, so it can beat that floor.\n")
    L.append(tier_table(m, "loop", ["1000000"], per("ns_per_iter"), ns) + "\n")
    L.append("`calls`: recursive fib(25) of `examples/fib.vmasm` (VM-to-VM "
             "calls), time per fib(25); `native` is a recursive C++ fib calling "
             "the same scalar functions.\n")
    L.append(tier_table(m, "calls", ["25"], per("time"), ns) + "\n")
    call = m.get("calls/compiled-call/25")
    if call and "calls/native/25" in m:
        L.append("`compiled-call`: compiled mode with "
                 "`JITOptions::DirectBodyLimit` 0, fib's direct entry calling "
                 "its code instead of holding a copy (docs/jit.md, \"Direct "
                 "calls\"): %s, %s native.\n" % (
                     fmt_ns(call["time"]),
                     fmt_ratio(ratio(m, "calls/compiled-call/25",
                                     "calls/native/25"))))
    L.append("`closure`: `examples/closure.vmasm`, a loop of 10^5 calls of "
             "`vm.builtin.invoke_closure`, ns per iteration; `native` is the "
             "loop in C++ with the closure as a C++ lambda.\n")
    L.append(tier_table(m, "closure", ["100000"], per("ns_per_iter"), ns) + "\n")
    L.append("`owned`: `examples/thread_state.vmasm`, a state tuple handed from "
             "call to call at its last use (two calls of bytecode functions and "
             "a `make_tuple` per iteration), ns per iteration; `compiled-lent` "
             "is compiled mode with owned arguments off "
             "(`JITOptions::OwnedArguments`), every argument lent: an increment "
             "in the callee and a decrement in the caller per call "
             "(docs/jit.md, \"Owned arguments\").\n")
    rows = []
    for t in ["bytecode", "compiled-lent", "compiled", "tiered"]:
        r = m.get("owned/%s/100000" % t)
        if r is not None and "ns_per_iter" in r:
            lent = m.get("owned/compiled-lent/100000")
            rows.append([t, ns(r["ns_per_iter"]),
                         fmt_ratio(r["ns_per_iter"] / lent["ns_per_iter"])
                         if lent and "ns_per_iter" in lent else "–"])
    if rows:
        L.append(table(["tier", "per iteration", "× compiled-lent"], rows)
                 + "\n")

    L.append("## mlp and decode: what the driver costs\n")
    L.append("`mlp/TIER/H<h>`: batch-1 MLP `relu(relu(x W1 + b1) W2 + b2) W3 + "
             "b3`, x [1, h], W1, W2 [h, h], W3 [h, 16], OpenBLAS matmuls "
             "(single-threaded). `decode/TIER/L<l>_H<h>`: one step of "
             "`examples/decode.vmasm`'s decoder generated for l layers and "
             "hidden size h (FFN 2h, 8 cached positions). Random weights. "
             "Time per step; *driver* is the tier's time minus native's (the "
             "kernels' time), *driver share* that as a share of the tier's "
             "time.\n")
    L.append("**mlp**\n")
    L.append(tier_table(m, "mlp", ["H64", "H256", "H1024"], per("time"), ns,
                        driver=True) + "\n")
    L.append("**decode**\n")
    L.append(tier_table(m, "decode", ["L4_H64", "L4_H512", "L32_H64",
                                      "L32_H512"], per("time"), ns,
                        driver=True) + "\n")

    L.append("## warmup: tiered mode from the first call\n")
    L.append("A fresh VM in tiered mode (default threshold, no object cache, "
             "background compile thread) calls `main` until every function "
             "runs natively, timing each call (wall clock). Medians over the "
             "iterations and repetitions. The threshold only queues a "
             "function; it is swapped when its background compile is done, "
             "so the time to steady state is about the compile times (see "
             "*compile*), during which the interpreter keeps running calls. "
             "The bottom panels of the chart plot the per-call series.\n")
    L.append(warmup_section(m, series) + "\n")

    L.append("## compile: JIT compile latency\n")
    L.append("One function of N instructions (scalar calls and a loop) "
             "compiled by `TierManager::compileNow` (lowering, IR pipeline, "
             "codegen, link), a fresh executable per iteration; object cache "
             "off, except in the warm-cache column (key hashing, reading and "
             "linking the cached object). Units of more than 200 instructions "
             "get O0 codegen at every level (see docs/jit.md). O2 is not "
             "run at 10^4 instructions: it did not finish in 95 s "
             "(`benchmarks/CompileBench.cpp`). At 10^4 "
             "instructions one compile takes seconds, so those rows rest on "
             "one iteration per repetition.\n")
    L.append(compile_section(m) + "\n")
    L.append("`compile/typed_O1/N`: a counted loop of N instructions over "
             "four registers (`typedProgram` in `benchmarks/CompileBench.cpp`)"
             " compiled at O1 after one interpreted call, whose type feedback "
             "tier 2 speculates on (docs/jit.md, \"Speculation and "
             "deoptimization\"); IR instructions per bytecode instruction as "
             "lowered and after the pipeline.\n")
    L.append(typed_compile_section(m) + "\n")

    L.append("## tier1: straight-line code and code size\n")
    L.append("`scalar_chain/TIER/N`: a function of N `scalar.add` Calls on "
             "registers and `ret` (`benchmarks/Tier1Bench.cpp`), time per "
             "instruction: beyond a few thousand instructions the size of "
             "tier-1 code, not its work, sets its speed.\n")
    L.append(tier_table(m, "scalar_chain", ["100", "1000", "3000", "10000"],
                        per("ns_per_instr"), ns) + "\n")
    L.append("`tier1_size/SHAPE`: tier-1 code of a function of 1000 "
             "instructions of one shape (docs/jit.md, \"Tier 1 code "
             "size\"): *hot* bytes are the code that runs when every "
             "instruction takes its fast path, laid out in order; the slow "
             "paths and the stencils' out-of-line parts follow the "
             "function.\n")
    L.append(tier1_section(m) + "\n")

    L.append("## tvm_format: small programs in TVM's format, beside TVM's VM\n")
    L.append("`tvm_fib`, `tvm_loop_sum`, `tvm_chain` "
             "(`benchmarks/TvmFormatBench.cpp`): `examples/fib.vmasm` "
             "(fib(20)), `examples/loop_sum.vmasm` (n = 10^5) and chains of "
             "100 and 1000 `scalar.add` Calls, written in Apache TVM's "
             "VMExecutable format and loaded back; time per invocation. The "
             "reference column is TVM's own Relax VM running the same "
             "TVM-format programs (TVM 5d4dc87 runtime, in-process, medians "
             "of 3 rounds × 7; TVM calls `scalar.*` as typed functions), "
             "**measured separately** on these machines, not by this script; "
             "in parentheses, how many times faster than it each tier is.\n")
    L.append(tvm_format_section(m) + "\n")

    L.append("## load: executables with large tensor constants\n")
    L.append("`loadExecutable` of a file (in the page cache) whose tensor "
             "constants total 1 MiB to 1 GiB, then destroying it; wall time. "
             "By default the DATA section's XXH3 checksum is verified, which "
             "reads every page; without it the weights are only mapped.\n")
    L.append(load_section(m) + "\n")

    L.append("## tvm_models: models TVM's compiler built\n")
    L.append("`tvm_models/MODEL/TIER`: one call of a model TVM's compiler "
             "built (its `export_library` output) with its "
             "own inputs. `floor`: the same kernel calls, recorded once by an "
             "instrument and replayed from a C++ loop on preallocated "
             "buffers; *overhead* is the tier's time minus the floor's "
             "(allocation, checks, dispatch). `compiled_mode` (TVM's "
             "exec_mode=\"compiled\") has no floor: its own code calls the "
             "kernels, unseen by an instrument. Models: the folder "
             "`VMJIT_TVM_MODELS` names (such as the one "
             "`examples/tvm/build_models.py` writes), by default the test "
             "fixtures `../shared/tvm-models` beside the source tree; alone: "
             "`vmjit-bench --benchmark_filter='tvm_models/' "
             "--benchmark_repetitions=7 "
             "--benchmark_report_aggregates_only=true`.\n")
    L.append(tvm_models_section(m) + "\n")

    L.append("## Why targets are missed, and what would close the gaps\n")
    L.append(WHY_MISSED)
    L.append("## Apache TVM Relax VM (external reference)\n")
    L.append("**Measured separately** on these machines, not by this script: "
             "Apache TVM's Relax VM at commit 5d4dc87, runtime built at -O3, "
             "the same kinds of workloads. vmjit's figures next to them are "
             "from this report (per Call: the slopes above; invocation: the "
             "fixed cost of a `dispatch_int` invocation).\n")
    L.append(tvm_section(m) + "\n")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--build-dir", default="build",
                    help="build directory (default: build)")
    ap.add_argument("--no-build", action="store_true",
                    help="use the existing vmjit-bench, do not build it")
    ap.add_argument("--install-deps", action="store_true",
                    help="run scripts/install-deps.sh (apt-get) before building")
    ap.add_argument("--quick", action="store_true",
                    help="only the smallest sizes (and N = 1000 for dispatch); "
                         "3 repetitions, min time 0.05 s unless given")
    ap.add_argument("--repetitions", type=int, default=None,
                    help="--benchmark_repetitions (default 5; 3 with --quick)")
    ap.add_argument("--min-time", type=float, default=None,
                    help="--benchmark_min_time in seconds (default 0.5; 0.05 "
                         "with --quick)")
    ap.add_argument("--filter", default="",
                    help="keep only benchmarks whose names match this regex "
                         "(applied within each group)")
    ap.add_argument("--out", default=None,
                    help="markdown output (default BUILD_DIR/benchmarks.md); "
                         "the SVG goes next to it with the extension .svg")
    ap.add_argument("--update-docs", action="store_true",
                    help="write docs/benchmarks.md and docs/benchmarks.svg "
                         "(the tracked report)")
    ap.add_argument("--save-json", help="also write the raw results here")
    ap.add_argument("--from-json", help="render from saved raw results instead "
                                        "of running the harness")
    ap.add_argument("--tvm-models-table", metavar="JSON",
                    help="print the tvm_models table (markdown) of a "
                         "vmjit-bench --benchmark_out JSON file and exit")
    args = ap.parse_args()
    if args.tvm_models_table:
        with open(args.tvm_models_table) as f:
            m, _ = medians(json.load(f)["benchmarks"])
        print(tvm_models_section(m))
        return
    if args.update_docs and args.out:
        ap.error("--update-docs and --out name two different reports")
    if args.update_docs:
        args.out = os.path.join(ROOT, "docs", "benchmarks.md")
    elif not args.out:
        args.out = os.path.join(args.build_dir, "benchmarks.md")
    if args.repetitions is None:
        args.repetitions = 3 if args.quick else 5
    if args.min_time is None:
        args.min_time = 0.05 if args.quick else 0.5

    if args.from_json:
        with open(args.from_json) as f:
            res = json.load(f)
    else:
        res = run_all(args)
    if args.save_json:
        with open(args.save_json, "w") as f:
            json.dump(res, f)
    svg_path = os.path.splitext(args.out)[0] + ".svg"
    m, _ = medians(res["benchmarks"])
    with open(svg_path, "w") as f:
        f.write(svg_chart(m, res.get("series", {})))
    with open(args.out, "w") as f:
        f.write(report(res, args.build_dir, os.path.basename(svg_path)))
    print("wrote %s and %s" % (args.out, svg_path), file=sys.stderr)


if __name__ == "__main__":
    main()
