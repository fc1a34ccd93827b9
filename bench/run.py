#!/usr/bin/env python3
"""bench/run.py -- run the benchmarks, compare the evaluators, draw the figures.

What `make bench` runs (after building the release preset):

    python3 bench/run.py [--quick] [--no-compile] [--only attention_core,attention_mha] [--report-only]

1. Runs every bench_<stem> program in $ARGUS_BUILD_DIR/bench (default build/release/bench)
   with --benchmark_out=bench/results/<stem>.json --benchmark_out_format=json, one at a time.
   --quick adds --benchmark_min_time=0.05 and drops every row at n >= 4096 and the memory run
   below (QUICK_EXCLUDE; `make bench-quick` takes under 5 minutes) and compile times with
   clang++ (step 5); the full run keeps Google
   Benchmark's default minimum time. BM_mha_memory (n = 16384) runs alone, in its own
   process, into bench/results/attention_mha_memory.json, so that its resident-memory
   figures are its own. --repetitions N runs each row N times and reports the median;
   --filter REGEX runs only the matching rows (and no memory run); --interleave runs the
   repetitions of all rows in a random order.
2. Prints, per matching row (same family and arguments), the time of fused against unfused,
   eigen, and the library peers onednn and torch where the programs have them (BM_core,
   BM_core_causal, BM_core_window, BM_core_bias, BM_mha; bench/peers/), a peer table, and runs
   Google Benchmark's own /usr/share/benchmark/compare.py in `filters` mode on the same JSON.
3. Draws docs/img/gflops_vs_n.png, peak_pct_vs_n.png and time_vs_h.png (matplotlib, Agg), and
   where the run has a library peer, peers_vs_n.png; a --quick or --filter run draws them into
   bench/results/img/ instead, so that its short, partial figures never replace the plots
   docs/performance.md shows.
4. Writes bench/results/summary.md: the tables in Markdown, the issue targets, the compile table.
5. Unless --no-compile, runs bench/compile/measure.py (compile time of the full MHA program
   with g++-12 and clang++-14), which writes bench/results/compile.json.

--report-only skips step 1 and reads the JSON of an earlier run.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
IMG = os.path.join(ROOT, "docs", "img")
COMPARE_PY = "/usr/share/benchmark/compare.py"
EVALUATORS = ("fused", "fused_prepacked", "unfused", "eigen", "onednn", "torch", "torch_native")
# The library peers (bench/peers/); absent where not built. torch_native: libtorch's fused
# inference path for the MHA (at::_native_multi_head_attention), in the MHA programs only.
PEERS = ("onednn", "torch", "torch_native")
# --quick leaves out every row at n >= 4096 (and the kernel rows of that size), the library
# peers at n 2048, the models of bench/models.cpp at n 1024 and on 2 threads, and the
# n = 16384 memory run, and measures compile times with g++-12 only: under 5 minutes for
# `make bench-quick` on the 2-vCPU Zen 1 machine of docs/performance.md, peers included.
# (Google Benchmark's regular expressions are POSIX extended: no \w.)
QUICK_EXCLUDE = (r"/n:(4096|8192)/|flash_attention/(4096|8192)/|(onednn|torch|torch_native)/n:2048/|"
                 r"^BM_model_[a-z0-9_]+/[a-z_]+/(n:1024/|.*/threads:2/)")
MEMORY_FAMILY = "BM_mha_memory"
TRAIN_MEMORY = "BM_train_memory"  # bench_attention_backward: one training step at n 16384, alone


def reexec_with_system_python():
    """matplotlib, numpy and scipy come from Debian packages (make deps), which only the
    system interpreter sees; a python3 from pyenv or a venv first on PATH does not."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    system = "/usr/bin/python3"
    if os.environ.get("ARGUS_BENCH_REEXEC") or not os.path.exists(system) or \
            os.path.realpath(sys.executable) == os.path.realpath(system):
        return
    print("run.py: matplotlib is not importable from %s; re-running with %s" % (sys.executable, system), flush=True)
    env = dict(os.environ, ARGUS_BENCH_REEXEC="1")
    os.execve(system, [system] + sys.argv, env)


# --- running ---------------------------------------------------------------------------------

def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run_program(exe, out_json, extra, first):
    cmd = [exe, "--benchmark_out=" + out_json, "--benchmark_out_format=json"] + extra
    print("\n$ " + " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd), flush=True)
    load = load_average()
    # Later programs see the load of the ones before them (up to 2 threads each), so only the
    # first reading says whether the machine was quiet.
    if first and load is not None and load >= 1.0:
        print("run.py: note: 1-minute load average is %.2f before the first program: other work is running, "
              "timings taken now are not quiet" % load, flush=True)
    t0 = time.monotonic()
    rc = subprocess.call(cmd, cwd=ROOT)
    print("run.py: %s finished in %.1f s (exit %d)" % (os.path.basename(exe), time.monotonic() - t0, rc), flush=True)
    return rc


def run_benchmarks(bench_dir, quick, only, repetitions=1, row_filter="", interleave=False):
    if not os.path.isdir(bench_dir):
        sys.exit("run.py: %s does not exist: build first (cmake --preset release && "
                 "cmake --build --preset release -j2), or set ARGUS_BUILD_DIR" % bench_dir)
    programs = sorted(f for f in os.listdir(bench_dir)
                      if f.startswith("bench_") and os.access(os.path.join(bench_dir, f), os.X_OK)
                      and os.path.isfile(os.path.join(bench_dir, f)))
    if only:
        programs = [p for p in programs if p[len("bench_"):] in only]
    if not programs:
        sys.exit("run.py: no bench_* programs in %s" % bench_dir)
    os.makedirs(RESULTS, exist_ok=True)
    common = ["--benchmark_min_time=0.05"] if quick else []
    if repetitions > 1:
        common += ["--benchmark_repetitions=%d" % repetitions]
    if interleave:
        common += ["--benchmark_enable_random_interleaving=true"]
    exclude = MEMORY_FAMILY + "|" + TRAIN_MEMORY + ("|" + QUICK_EXCLUDE if quick else "")
    selection = "--benchmark_filter=" + (row_filter if row_filter else "-(%s)" % exclude)
    failures = 0
    for i, p in enumerate(programs):
        stem = p[len("bench_"):]
        exe = os.path.join(bench_dir, p)
        rc = run_program(exe, os.path.join(RESULTS, stem + ".json"), common + [selection], i == 0)
        failures += rc != 0
        if stem == "attention_mha" and not row_filter and not quick:
            rc = run_program(exe, os.path.join(RESULTS, stem + "_memory.json"), ["--benchmark_filter=" + MEMORY_FAMILY],
                             False)
            failures += rc != 0
        if stem == "attention_backward" and not row_filter and not quick:
            rc = run_program(exe, os.path.join(RESULTS, stem + "_memory.json"), ["--benchmark_filter=" + TRAIN_MEMORY],
                             False)
            failures += rc != 0
    return failures


def backward_report(backward, train_memory):
    """Markdown lines: the backward's ratio tables, dropout's cost and the training memory."""
    table = rows_of(backward)
    out = []
    if not table:
        return out
    grad = {k: v for k, v in table.items()
            if k[0] in ("BM_backward", "BM_backward_causal", "BM_forward_backward", "BM_train_step")}
    for other in ("unfused", "eigen"):
        t = ratio_table(grad, other)
        if len(t) > 2:
            out += ["### Backward: fused against %s" % other, ""] + t + [""]
    drop = []
    for (family, config), evs in sorted(table.items()):
        if not family.startswith("BM_dropout_") or not config.endswith("dropout_pct:10"):
            continue
        base = table.get((family, config[: -len("10")] + "0"), {})
        for ev in ("fused", "unfused"):
            if ev in evs and ev in base and base[ev]["ms"]:
                drop.append("| %s | %s | %s | %.1f | %.1f | %.2f |" % (
                    family, ev, config.replace("/dropout_pct:10", ""), base[ev]["ms"], evs[ev]["ms"],
                    evs[ev]["ms"] / base[ev]["ms"]))
    if drop:
        out += ["### Dropout's cost (rate 10 % against 0, same run)", "",
                "| family | evaluator | config | rate 0 ms | rate 0.1 ms | ratio |", "|---|---|---|---:|---:|---:|"] + drop + [""]
    for b in (train_memory or {}).get("benchmarks", []):
        if b["name"].startswith(TRAIN_MEMORY):
            out += ["### One training step at n = 16384 (%s)" % TRAIN_MEMORY, "",
                    "RSS growth %.0f MiB against %.0f MiB of inputs, weights, output and gradients: "
                    "ratio **%.2f** (target < 2); %.0f ms." % (b.get("rss_growth_mb", 0), b.get("ideal_mb", 0),
                                                                b.get("memory_ratio", 0),
                                                                b["real_time"] * TO_MS[b.get("time_unit", "ns")]), ""]
    return out


# --- reading ---------------------------------------------------------------------------------

NAME = re.compile(r"^(?P<family>BM_\w+)/(?P<ev>fused_vs_\w+?|fused_prepacked|fused|unfused|eigen|onednn|torch_native|torch)/(?P<config>.*?)(/iterations:\d+)?(/real_time)?$")
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def load_json(stem):
    path = os.path.join(RESULTS, stem + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        try:
            return json.load(f)
        except ValueError as e:  # a program that stopped early (a bad --benchmark_filter) leaves it empty
            print("run.py: %s is not a benchmark result (%s); left out" % (os.path.relpath(path, ROOT), e))
            return None


def results(data):
    """(name, benchmark) for each row of a run: the row itself, or with --repetitions the
    median of its repetitions (Google Benchmark's `median` aggregate, counters included),
    named as the row (without the _median suffix)."""
    benchmarks = (data or {}).get("benchmarks", [])
    medians = {b["run_name"]: b for b in benchmarks
               if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    seen = set()
    for b in benchmarks:
        if b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("run_name", b["name"])
        if name in seen:  # a later repetition of the same row
            continue
        seen.add(name)
        yield name, medians.get(name, b)


def rows_of(data):
    """{(family, config): {evaluator: row}} for the rows named BM_<family>/<evaluator>/<args>."""
    table = {}
    for name, b in results(data):
        m = NAME.match(name)
        if not m:
            continue
        row = {
            "ms": b["real_time"] * TO_MS[b.get("time_unit", "ns")],
            "cpu_ms": b["cpu_time"] * TO_MS[b.get("time_unit", "ns")],
            "gflops": b.get("GFLOPS"),
            "peak_pct": b.get("peak_pct"),
            "bytes": b.get("bytes_materialised"),
            "rss": b.get("peak_rss_mb"),
            "error": b.get("error_message") if b.get("error_occurred") else None,
            "label": b.get("label"),
            "raw": b,
        }
        table.setdefault((m.group("family"), m.group("config")), {})[m.group("ev")] = row
    return table


def peaks_of(data):
    out = {}
    for name, b in results(data):
        m = re.match(r"^BM_peak_fma/threads:(\d+)", name)
        if m:
            out[int(m.group(1))] = b.get("GFLOPS")
    return out


def arg(config, name):
    m = re.search(r"(?:^|/)" + re.escape(name) + r":(\d+)", config)
    return int(m.group(1)) if m else None


def sort_key(item):
    (family, config), _ = item
    nums = [int(x) for x in re.findall(r":(\d+)", config)]
    return (family, arg(config, "threads") or 0, nums)


# --- tables ----------------------------------------------------------------------------------

def fmt(x, spec="%.1f"):
    return "" if x is None else spec % x


def mib(x):
    return "" if x is None else "%.1f" % (x / 2 ** 20)


def ratio_table(table, other):
    lines = ["| benchmark | arguments | fused ms | %s ms | %s ÷ fused |" % (other, other), "|---|---|---:|---:|---:|"]
    for (family, config), evs in sorted(table.items(), key=sort_key):
        if family == MEMORY_FAMILY or "fused" not in evs or other not in evs:
            continue
        f, o = evs["fused"], evs[other]
        r = o["ms"] / f["ms"] if f["ms"] and not f["error"] and not o["error"] else None
        lines.append("| %s | %s | %s | %s | %s |" % (family, config, fmt(f["ms"], "%.3f"), fmt(o["ms"], "%.3f"),
                                                     fmt(r, "%.2f×")))
    return lines


def present(table):
    """The evaluators with at least one row in `table`, in EVALUATORS order."""
    have = {e for evs in table.values() for e in evs}
    return [e for e in EVALUATORS if e in have]


def detail_table(table):
    evs_order = present(table)
    names = " / ".join(evs_order)
    head = ("| benchmark | arguments | GFLOP/s %s | %% of peak %s | MiB materialised %s | peak RSS MiB %s |"
            % (names, names, names, names))
    lines = [head, "|---|---|---|---|---|---|"]
    for (family, config), evs in sorted(table.items(), key=sort_key):
        if family == MEMORY_FAMILY:
            continue

        def cells(key, f):
            return " / ".join(f(evs[e][key]) if e in evs and evs[e][key] is not None else "–" for e in evs_order)

        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            family, config, cells("gflops", lambda x: "%.1f" % x), cells("peak_pct", lambda x: "%.1f" % x),
            cells("bytes", mib), cells("rss", lambda x: "%.0f" % x)))
    return lines


def peer_table(table, family):
    """The library peers against fused, for the rows of `family` that have them: time ratios
    (peer ÷ fused: above 1, fused is faster) of real time, and on 1 thread also of CPU time (the
    calling thread's, which on 1 thread is all the work: it leaves out the time other processes
    took the core, so it is the steadier figure on a shared machine), GFLOP/s, and each peer's
    check against fused."""
    peers = [p for p in PEERS if any(p in evs for (fam, _), evs in table.items() if fam == family)]
    if not peers:
        return []
    lines = ["| threads | n | fused ms | %s | %s | GFLOP/s fused · %s | max diff to fused %s |" % (
                 " | ".join("%s ÷ fused" % p for p in peers),
                 " | ".join("%s ÷ fused, CPU time" % p for p in peers), " · ".join(peers), " · ".join(peers)),
             "|---:|---:|---:|" + "---:|" * (2 * len(peers)) + "---|---|"]
    for (fam, config), evs in sorted(table.items(), key=sort_key):
        if fam != family or "fused" not in evs or not any(p in evs for p in peers):
            continue
        f = evs["fused"]
        one_thread = arg(config, "threads") == 1
        ratios, cpu_ratios, rates, diffs = [], [], [fmt(f["gflops"])], []
        for p in peers:
            r = evs.get(p)
            if r is None or r["error"] or f["error"]:
                ratios.append("failed: %s" % r["error"] if r is not None and r["error"] else "")
                cpu_ratios.append("")
                rates.append("–")
                diffs.append("–")
                continue
            ratios.append(fmt(r["ms"] / f["ms"], "%.2f×"))
            cpu_ratios.append(fmt(r["cpu_ms"] / f["cpu_ms"], "%.2f×") if one_thread else "–")
            rates.append(fmt(r["gflops"]))
            diffs.append(fmt(r["raw"].get("max_diff"), "%.1e"))
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            arg(config, "threads"), arg(config, "n"), fmt(f["ms"], "%.2f"), " | ".join(ratios), " | ".join(cpu_ratios),
            " · ".join(rates), " · ".join(diffs)))
    return lines if len(lines) > 2 else []


def paired_table(table):
    """The fused_vs_<other> rows (argus/bench/register.hpp, module_rows::paired): each
    iteration one fused call and one call of the other back to back, the ratio other ÷ fused
    per pair; its median and quartiles, and the medians of both times."""
    lines = ["| benchmark | threads | n | other | other ÷ fused, median of pairs | quartiles | fused ms | other ms | pairs |",
             "|---|---:|---:|---|---:|---|---:|---:|---:|"]
    for (fam, config), evs in sorted(table.items(), key=sort_key):
        for ev, r in sorted(evs.items()):
            if not ev.startswith("fused_vs_"):
                continue
            raw = r["raw"]
            if r["error"]:
                lines.append("| %s | %s | %s | %s | failed: %s | | | | |" % (
                    fam, arg(config, "threads"), arg(config, "n"), ev[len("fused_vs_"):], r["error"]))
                continue
            lines.append("| %s | %s | %s | %s | %s | %s – %s | %s | %s | %s |" % (
                fam, arg(config, "threads"), arg(config, "n"), ev[len("fused_vs_"):],
                fmt(raw.get("ratio"), "%.3f×"), fmt(raw.get("ratio_q1"), "%.3f"),
                fmt(raw.get("ratio_q3"), "%.3f"), fmt(raw.get("fused_ms"), "%.2f"),
                fmt(raw.get("other_ms"), "%.2f"), fmt(raw.get("pairs"), "%.0f")))
    return lines if len(lines) > 2 else []


def comparison_table(table):
    """Every row of `table` against fused: time ratios (evaluator ms ÷ fused ms) for each
    evaluator the run has, fused's GFLOP/s and share of peak."""
    others = [e for e in present(table) if e != "fused"]
    lines = ["| benchmark | arguments | fused ms | %s | GFLOP/s fused | %% of peak fused |" % " | ".join(
                 "%s ÷ fused" % e for e in others),
             "|---|---|---:|" + "---:|" * len(others) + "---:|---:|"]
    for (family, config), evs in sorted(table.items(), key=sort_key):
        f = evs.get("fused")
        if f is None or f["error"]:
            continue
        cells = []
        for e in others:
            r = evs.get(e)
            cells.append("" if r is None else "failed" if r["error"] else fmt(r["ms"] / f["ms"], "%.2f×"))
        lines.append("| %s | %s | %s | %s | %s | %s |" % (family, config, fmt(f["ms"], "%.2f"), " | ".join(cells),
                                                       fmt(f["gflops"]), fmt(f["peak_pct"])))
    return lines if len(lines) > 2 else []


def peer_labels(table):
    """How each peer was set up (its rows' label: library version, threads, BLAS), once per label."""
    out = []
    for (_, _), evs in sorted(table.items(), key=sort_key):
        for p in PEERS:
            label = evs.get(p, {}).get("label")
            if label and "%s: %s" % (p, label) not in out:
                out.append("%s: %s" % (p, label))
    return out


def memory_table(data):
    lines = ["| row | time ms | GFLOP/s | RSS growth MiB | ideal MiB | ratio | MiB materialised | unfused would materialise MiB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for b in (data or {}).get("benchmarks", []):
        if not b["name"].startswith(MEMORY_FAMILY):
            continue
        lines.append("| %s | %.0f | %.1f | %.0f | %.0f | %.2f | %s | %s |" % (
            b["name"].replace("/iterations:1/real_time", ""), b["real_time"] * TO_MS[b.get("time_unit", "ns")],
            b.get("GFLOPS", 0), b.get("rss_growth_mb", 0), b.get("ideal_mb", 0), b.get("memory_ratio", 0),
            mib(b.get("bytes_materialised")), mib(b.get("unfused_bytes_materialised"))))
    return lines


def parts_table(data):
    """BM_mha_parts: the fused forward against the sum of its parts, per (n, threads)."""
    parts = {}
    for name, b in results(data):
        m = re.match(r"^BM_mha_parts/(project_heads|project|core_strided|core|forward)/(.*?)(/real_time)?$", name)
        if m:
            parts.setdefault(m.group(2), {})[m.group(1)] = b["real_time"] * TO_MS[b.get("time_unit", "ns")]
    lines = ["| arguments | 3 head-major projections ms | output projection ms | core ms | sum ms | forward ms | "
             "forward - sum ms | core share of forward | core on strided views ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    need = ("project_heads", "project", "core", "forward")
    for config, p in sorted(parts.items(), key=lambda kv: (arg(kv[0], "threads"), arg(kv[0], "n"))):
        if any(k not in p for k in need):
            continue
        total = 3 * p["project_heads"] + p["project"] + p["core"]
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %+.2f | %.0f%% | %s |" % (
            config, 3 * p["project_heads"], p["project"], p["core"], total, p["forward"], p["forward"] - total,
            100 * p["core"] / p["forward"], fmt(p.get("core_strided"), "%.2f")))
    return lines if len(lines) > 2 else []


def targets(core, mha, memory):
    """The issue-3 targets and the issue-10 peer targets, each with the figures it rests on."""
    out = []

    def check(label, table, family, ns, threads, minimum):
        vals = []
        for n in ns:
            cfg = [c for (fam, c) in table if fam == family and arg(c, "n") == n and arg(c, "threads") == threads]
            for c in cfg:
                r = table[(family, c)].get("fused")
                if r and r["peak_pct"] is not None:
                    vals.append((n, r["peak_pct"]))
        if not vals:
            out.append("- %s: not measured in this run" % label)
            return
        ok = all(v >= minimum for _, v in vals)
        out.append("- %s: **%s** (%s)" % (label, "met" if ok else "not met",
                                          ", ".join("n %d: %.1f%%" % (n, v) for n, v in vals)))

    check("core fused >= 70% of peak, 1 thread, n 1024-8192", core, "BM_core", (1024, 2048, 4096, 8192), 1, 70)
    check("core fused >= 65% of peak, 2 threads, n 1024-8192", core, "BM_core", (1024, 2048, 4096, 8192), 2, 65)
    check("MHA fused >= 70% of peak, 1 thread, n >= 1024", mha, "BM_mha", (1024, 2048, 4096, 8192), 1, 70)
    def check_peer(peer, ns, minimum):
        """fused at least `minimum` times faster than `peer` (time ratio) on the full MHA;
        minimum None: the ratios only (a peer without a target)."""
        vals = []
        for (fam, c), evs in sorted(mha.items(), key=sort_key):
            if fam == "BM_mha" and arg(c, "n") in ns and "fused" in evs and peer in evs and \
                    not evs["fused"]["error"] and not evs[peer]["error"]:
                vals.append((arg(c, "n"), arg(c, "threads"), evs[peer]["ms"] / evs["fused"]["ms"]))
        label = ("MHA fused >= %.1f× %s" % (minimum, peer) if minimum is not None else
                 "MHA fused ÷ %s (no target)" % peer) + ", n %s" % "/".join(str(n) for n in ns)
        if not vals:
            out.append("- %s: not measured in this run" % label)
            return
        ratios = ", ".join("n %d, %d thread%s: %.2f×" % (n, t, "s" if t > 1 else "", v) for n, t, v in vals)
        # The torch rows' label says when OpenBLAS ran an older CPU's kernels (bench/peers/
        # torch_attention.cpp): a ratio against those flatters argus.
        if any("older CPU's" in (evs.get(peer, {}).get("label") or "")
               for (fam, _), evs in mha.items() if fam == "BM_mha"):
            ratios += ("; libtorch ran on OpenBLAS's kernels for an older CPU (the rows' label names the "
                       "OPENBLAS_CORETYPE for this one): not a fair ratio")
        if minimum is None:
            out.append("- %s: %s" % (label, ratios))
            return
        ok = all(v >= minimum for _, _, v in vals)
        out.append("- %s: **%s** (%s)" % (label, "met" if ok else "not met", ratios))

    check_peer("onednn", (1024,), 1.1)
    check_peer("onednn", (4096, 8192), 1.3)
    check_peer("torch", (1024, 2048, 4096, 8192), 2.0)
    check_peer("torch_native", (1024, 2048, 4096, 8192), None)
    mem = [b for b in (memory or {}).get("benchmarks", []) if b["name"].startswith(MEMORY_FAMILY + "/fused")]
    if mem:
        r = mem[0].get("memory_ratio", float("nan"))
        out.append("- MHA fused memory at n 16384 < 1.5 × (inputs + weights + Q, K, V + output): **%s** (%.2f×: %.0f MiB "
                   "over %.0f MiB)" % ("met" if r < 1.5 else "not met", r, mem[0].get("rss_growth_mb", 0),
                                        mem[0].get("ideal_mb", 0)))
    else:
        out.append("- MHA fused memory at n 16384: not measured in this run")
    return out


# --- compare.py ------------------------------------------------------------------------------

def run_compare_py(stem, baseline, contender):
    path = os.path.join(RESULTS, stem + ".json")
    if not os.path.exists(path):
        return
    if not os.path.exists(COMPARE_PY):
        print("run.py: %s is missing (Debian package libbenchmark-tools); skipped" % COMPARE_PY)
        return
    cmd = [sys.executable, COMPARE_PY, "--no-color", "filters", path, "/%s/" % baseline, "/%s/" % contender]
    print("\n$ %s (Time/CPU columns: (contender - baseline) / baseline; -0.50 = contender takes half the time)"
          % " ".join(["compare.py"] + cmd[3:4] + [os.path.relpath(path, ROOT)] + cmd[5:]), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no message"])[-1]
        print("run.py: compare.py failed (%s); continuing. It needs numpy and scipy for the interpreter "
              "running it (%s): `make deps` installs python3-numpy and python3-scipy." % (last, sys.executable))
        return
    print(p.stdout)


# --- plots -----------------------------------------------------------------------------------

STYLE = {"fused": dict(color="C0", marker="o"), "unfused": dict(color="C1", marker="s"),
         "fused_prepacked": dict(color="C5", marker="x", ls=":"),
         "eigen": dict(color="C2", marker="^"), "onednn": dict(color="C3", marker="D", ls="--"),
         "torch": dict(color="C4", marker="v", ls="--"),
         "torch_native": dict(color="C6", marker="<", ls="--")}


def series(table, family, x_arg, threads, key):
    out = {}
    for (fam, config), evs in table.items():
        if fam != family or arg(config, "threads") != threads:
            continue
        x = arg(config, x_arg)
        for e, r in evs.items():
            if r["error"] is None and (r[key] if key != "ms" else r["ms"]) is not None:
                out.setdefault(e, []).append((x, r[key]))
    return {e: sorted(v) for e, v in out.items()}


def plots(core, mha, peaks, img=IMG):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    except ImportError as e:
        print("run.py: no plots (%s); `make deps` installs python3-matplotlib" % e)
        return []
    os.makedirs(img, exist_ok=True)
    written = []

    def n_axis(ax, xs):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(xs))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "%d" % v))

    def grid(panels, x_arg, key, evaluators, ylabel, xlabel, suptitle, fname, decorate=None, title_suffix=""):
        """One figure: a row per (family, title, table) of `panels`, a column per thread count;
        decorate(ax, family, threads, xs) adds what only this figure has (a peak line, limits)."""
        fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
        # The panels share their x axis, hence one set of ticks: every n of any panel.
        all_xs = sorted({x for family, _, table in panels for threads in (1, 2)
                         for v in series(table, family, x_arg, threads, key).values() for x, _ in v})
        for i, (family, title, table) in enumerate(panels):
            for j, threads in enumerate((1, 2)):
                ax = axes[i][j]
                s = series(table, family, x_arg, threads, key)
                xs = sorted({x for v in s.values() for x, _ in v})
                for e in evaluators:
                    if e in s:
                        ax.plot([x for x, _ in s[e]], [y for _, y in s[e]], label=e, **STYLE[e])
                if decorate:
                    decorate(ax, family, threads, xs)
                if all_xs:
                    n_axis(ax, all_xs)
                ax.set_title("%s%s, %d thread%s" % (title, title_suffix, threads, "s" if threads > 1 else ""),
                             fontsize=10)
                ax.grid(alpha=0.3)
                if j == 0:
                    ax.set_ylabel(ylabel)
                if i == 1:
                    ax.set_xlabel(xlabel)
                ax.legend(fontsize=8, loc="best")
        fig.suptitle(suptitle)
        fig.tight_layout()
        path = os.path.join(img, fname)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    def gflops_peak(ax, family, threads, xs):
        if peaks.get(threads):
            ax.axhline(peaks[threads], color="grey", ls="--", lw=1)
            ax.text(xs[0] if xs else 128, peaks[threads] * 0.97, "FMA peak %.0f" % peaks[threads],
                    va="top", fontsize=8, color="grey")
            ax.set_ylim(0, peaks[threads] * 1.08)

    def peak_pct_target(ax, family, threads, xs):
        # The targets: core 70% (1 thread) and 65% (2 threads); MHA 70% (1 thread).
        if family == "BM_core" or threads == 1:
            ax.axhline(70 if threads == 1 else 65, color="grey", ls="--", lw=1)
        ax.set_ylim(0, 100)

    def peers_peak(ax, family, threads, xs):
        if peaks.get(threads):
            ax.axhline(peaks[threads], color="grey", ls="--", lw=1)
            ax.set_ylim(0, peaks[threads] * 1.08)
        else:
            ax.set_ylim(bottom=0)

    def from_zero(ax, family, threads, xs):
        ax.set_ylim(bottom=0)

    n_label = "n = seq_q = seq_kv"
    panels = [("BM_core", "attention core (h 8, d_k 64)", core), ("BM_mha", "full MHA (d_model 512, h 8)", mha)]
    grid(panels, "n", "gflops", EVALUATORS, "GFLOP/s", n_label,
         "GFLOP/s against sequence length (higher is better; dashed: the measured FMA peak)",
         "gflops_vs_n.png", gflops_peak)
    grid(panels, "n", "peak_pct", EVALUATORS, "% of measured FMA peak", n_label,
         "Share of the measured FMA peak against sequence length (higher is better; dashed: the target)",
         "peak_pct_vs_n.png", peak_pct_target)
    # The library peers against fused (and Eigen where the run has it), when the run has a peer.
    if any(p in present(t) for t in (core, mha) for p in PEERS):
        grid(panels, "n", "gflops", ("fused", "eigen") + PEERS, "GFLOP/s", n_label,
             "argus fused against oneDNN and libtorch (higher is better; dashed: the measured FMA peak)",
             "peers_vs_n.png", peers_peak)
    heads_panels = [("BM_core_heads", "attention core, d_k = 512 / h", core),
                    ("BM_mha_heads", "full MHA, d_model 512", mha)]
    grid(heads_panels, "h", "ms", EVALUATORS, "time per call, ms", "heads h",
         "Time against the number of heads at a fixed d_model 512 (lower is better)",
         "time_vs_h.png", from_zero, title_suffix=", n 1024")
    return written


# --- main ------------------------------------------------------------------------------------

def machine():
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
        m = re.search(r"Model name:\s*(.+)", out)
        return m.group(1).strip() if m else "unknown CPU"
    except OSError:
        return "unknown CPU"


def main():
    reexec_with_system_python()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short minimum time; fewer rows at large n (QUICK_EXCLUDE)")
    ap.add_argument("--no-compile", action="store_true", help="skip bench/compile/measure.py")
    ap.add_argument("--only", default="", help="comma-separated stems to run (e.g. attention_core,attention_mha)")
    ap.add_argument("--report-only", action="store_true", help="do not run: read bench/results/*.json")
    ap.add_argument("--repetitions", type=int, default=1,
                    help="run each row N times (--benchmark_repetitions); the tables use the median")
    ap.add_argument("--interleave", action="store_true",
                    help="run the repetitions of all rows in a random order "
                         "(--benchmark_enable_random_interleaving), so that a disturbance of the "
                         "machine spreads over every evaluator instead of falling on one")
    ap.add_argument("--filter", default="",
                    help="only the rows matching this regular expression (--benchmark_filter), and no "
                         "separate %s run" % MEMORY_FAMILY)
    args = ap.parse_args()
    t0 = time.monotonic()
    build = os.environ.get("ARGUS_BUILD_DIR", "build/release")
    bench_dir = os.path.join(build if os.path.isabs(build) else os.path.join(ROOT, build), "bench")
    load_before = load_average()
    print("run.py: %s, 1-minute load average %s, %s run" % (machine(), fmt(load_before, "%.2f"),
                                                           "quick" if args.quick else "full"), flush=True)

    failures = 0
    if not args.report_only:
        failures = run_benchmarks(bench_dir, args.quick, [s for s in args.only.split(",") if s], args.repetitions,
                                  args.filter, args.interleave)

    core, mha = load_json("attention_core"), load_json("attention_mha")
    # A run without the memory run (--quick, --filter) must not report an earlier one's figures.
    memory = None if not args.report_only and (args.quick or args.filter) else load_json("attention_mha_memory")
    core_rows, mha_rows = rows_of(core), rows_of(mha)
    peaks = peaks_of(core) or peaks_of(mha)
    errors = [(k, e, r["error"]) for t in (core_rows, mha_rows) for k, evs in t.items() for e, r in evs.items()
              if r["error"]]

    # The date and load of the run that produced the JSON (Google Benchmark records both),
    # so that --report-only describes that run, not the moment of the report.
    context = (core or mha or {}).get("context", {})
    run_load = (context.get("load_avg") or [load_before])[0]
    md = ["# Benchmark summary", "",
          "From the run of %s on %s%s; 1-minute load average %s when the first attention "
          "benchmark started. Times are real (wall-clock) time per call; ratios compare rows of "
          "the same run." % (context.get("date", "unknown date"), machine(),
                             " (`--quick`)" if args.quick else "", fmt(run_load, "%.2f")), ""]
    if peaks:
        md += ["Measured FMA peak: " + ", ".join("%d thread%s %.1f GFLOP/s" % (t, "s" if t > 1 else "", p)
                                                 for t, p in sorted(peaks.items())), ""]
    for title, table in (("Attention core (bench_attention_core)", core_rows),
                         ("Full multi-head attention (bench_attention_mha)", mha_rows)):
        if not table:
            continue
        print("\n== %s: fused against unfused ==" % title)
        t1 = ratio_table(table, "unfused")
        print("\n".join(t1))
        print("\n== %s: fused against eigen ==" % title)
        t2 = ratio_table(table, "eigen")
        print("\n".join(t2))
        md += ["## " + title, "", "### Fused against unfused", ""] + t1 + ["", "### Fused against Eigen", ""] + t2
        for peer in PEERS:
            if peer in present(table):
                tp = ratio_table(table, peer)
                print("\n== %s: fused against %s ==" % (title, peer))
                print("\n".join(tp))
                md += ["", "### Fused against %s" % peer, ""] + tp
        md += ["", "### Rates, memory", ""] + detail_table(table) + [""]
    peer_md = []
    for title, family, table in (("attention core", "BM_core", core_rows), ("full MHA", "BM_mha", mha_rows)):
        t = peer_table(table, family)
        if t:
            print("\n== The library peers against fused: %s (%s) ==" % (title, family))
            print("\n".join(t))
            peer_md += ["### %s (%s)" % (title, family), ""] + t + [""]
    tpaired = paired_table(mha_rows)
    if tpaired:
        print("\n== Paired: fused and another evaluator call by call ==")
        print("\n".join(tpaired))
        peer_md += ["### Paired, call by call (BM_mha_paired)", "",
                    "Each iteration times one fused call and one call of the other evaluator back "
                    "to back (alternating which goes first); the ratio is the median over the pairs, "
                    "the quartiles its spread. Steadier than two rows' ratio on a shared machine. "
                    "Read the 1-thread rows: on more than one thread an OpenMP peer's idle threads "
                    "either poll through argus's calls or, passive, are woken for each of its own "
                    "(OMP_WAIT_POLICY in this run: %s)."
                    % os.environ.get("OMP_WAIT_POLICY", "not set"), ""] \
            + tpaired + [""]
    labels = peer_labels(core_rows) + peer_labels(mha_rows)
    for ctx in (core, mha):
        missing = (ctx or {}).get("context", {}).get("argus_peers_missing")
        if missing:
            print("\nrun.py: %s" % missing)
            peer_md += ["Not in this run: %s" % missing, ""]
            break
    if peer_md:
        md += ["## The library peers (bench/peers/)", "",
               "Time ratios: peer ms ÷ fused ms (above 1: fused is faster). Max diff: the largest "
               "|peer − fused| / (1 + |fused|) over the output, checked once per row.", ""] + peer_md
        if labels:
            md += ["How the peers ran (their rows' labels):", ""] + ["- " + l for l in labels] + [""]
    models_rows = rows_of(load_json("models"))
    mt = comparison_table(models_rows)
    if mt:
        print("\n== Published module shapes (bench_models, argus/bench/register.hpp) ==")
        print("\n".join(mt))
        md += ["## Published module shapes (bench_models)", ""] + mt + [""]
    pt = parts_table(mha)
    if pt:
        print("\n== Where the fused forward's time goes (BM_mha_parts) ==")
        print("\n".join(pt))
        md += ["## Where the fused forward's time goes (BM_mha_parts)", ""] + pt + [""]
    if memory:
        t = memory_table(memory)
        print("\n== Memory at n = 16384 (bench_attention_mha --benchmark_filter=%s) ==" % MEMORY_FAMILY)
        print("\n".join(t))
        md += ["## Memory at n = 16384", ""] + t + [""]
    bw = backward_report(load_json("attention_backward"),
                         None if not args.report_only and (args.quick or args.filter)
                         else load_json("attention_backward_memory"))
    if bw:
        print("\n== The backward pass (bench_attention_backward) ==")
        print("\n".join(bw))
        md += ["## The backward pass (bench_attention_backward)", ""] + bw
    tg = targets(core_rows, mha_rows, memory)
    print("\n== Targets ==")
    print("\n".join(tg))
    md += ["## Targets", ""] + tg + [""]
    if errors:
        print("\nrun.py: rows that failed:")
        for k, e, msg in errors:
            print("  %s/%s/%s: %s" % (k[0], e, k[1], msg))

    for stem, table in (("attention_core", core_rows), ("attention_mha", mha_rows)):
        for baseline in ("unfused", "eigen") + PEERS:
            if baseline in present(table):
                run_compare_py(stem, baseline, "fused")

    # A short or partial run's plots stay beside its JSON: docs/img holds a full run's.
    img = os.path.join(RESULTS, "img") if args.quick or args.filter else IMG
    for p in plots(core_rows, mha_rows, peaks, img):
        print("run.py: wrote", os.path.relpath(p, ROOT))

    if not args.no_compile and not args.report_only:
        print("\n$ python3 bench/compile/measure.py", flush=True)
        # --quick: g++-12 only (each compile takes 10-20 s on the 2-vCPU Zen 1 machine).
        quick_compile = ["--compilers", "g++-12"] if args.quick else []
        rc = subprocess.call([sys.executable, os.path.join(ROOT, "bench", "compile", "measure.py")] + quick_compile,
                             cwd=ROOT)
        failures += rc != 0
    compile_json = os.path.join(RESULTS, "compile.json")
    if os.path.exists(compile_json):
        with open(compile_json) as f:
            c = json.load(f)
        md += ["## Compile time of the full MHA program (bench/compile/measure.py)", "",
               "`%s`, one translation unit, best of %d; 1-minute load average %s." % (
                   " ".join(c["flags"]), c["repeat"], fmt(c.get("load_average_1min"), "%.2f")), "",
               "| compiler | program | wall s | CPU s | compiler max RSS MiB |", "|---|---|---:|---:|---:|"]
        for r in c["results"]:
            md.append("| %s | %s | %s | %s | %s |" % (r["compiler"], r["source"], fmt(r.get("wall_s"), "%.2f"),
                                                      fmt(r.get("cpu_s"), "%.2f"), fmt(r.get("max_rss_mib"), "%.0f")))
        md.append("")

    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "summary.md"), "w") as f:
        f.write("\n".join(md))
    print("run.py: wrote bench/results/summary.md; total %.0f s" % (time.monotonic() - t0))
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main())
