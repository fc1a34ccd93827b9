#!/usr/bin/env python3
"""bench/compile/measure.py -- how long the full-MHA program takes to compile.

Compiles bench/compile/mha_fused.cpp, mha_unfused.cpp and mha_eigen.cpp (the same program:
argus with each evaluation policy, and the Eigen peer) with g++-12 and clang++-14 at
-std=c++20 -O2 -march=native, one compile at a time, each under /usr/bin/time -v, and
reports the wall-clock seconds, the user+system CPU seconds, the compiler's peak resident
memory and the object size. Prints a table and writes bench/results/compile.json.

    python3 bench/compile/measure.py [--repeat N] [--out FILE] [--compilers g++-12,clang++-14]

With --repeat N each compile runs N times and the fastest run is kept (the usual way to
take noise out of a timing on a shared machine).
"""

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ["mha_fused.cpp", "mha_unfused.cpp", "mha_eigen.cpp"]
FLAGS = ["-std=c++20", "-O2", "-march=native"]
INCLUDES = ["-I", os.path.join(ROOT, "include"), "-isystem", "/usr/include/eigen3"]


def parse_time_v(text):
    """The fields of GNU time -v output that we report."""
    def field(name):
        m = re.search(r"^\s*" + re.escape(name) + r":\s*(.+)$", text, re.M)
        return m.group(1).strip() if m else None

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    seconds = None
    if wall:
        parts = [float(p) for p in wall.split(":")]
        seconds = 0.0
        for p in parts:
            seconds = seconds * 60 + p
    user, system = field("User time (seconds)"), field("System time (seconds)")
    rss = field("Maximum resident set size (kbytes)")
    return {
        "wall_s": seconds,
        "cpu_s": (float(user) + float(system)) if user and system else None,
        "max_rss_mib": int(rss) / 1024.0 if rss else None,
    }


def compile_once(compiler, source, obj):
    cmd = ["/usr/bin/time", "-v", compiler] + FLAGS + INCLUDES + ["-c", source, "-o", obj]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.monotonic() - t0
    if p.returncode != 0:
        # GNU time prints its report after the compiler's own messages.
        first = p.stderr.strip().splitlines()[:6]
        return {"error": "exit %d: %s" % (p.returncode, " | ".join(first))}
    r = parse_time_v(p.stderr)
    if r["wall_s"] is None:
        r["wall_s"] = elapsed
    r["object_kib"] = os.path.getsize(obj) / 1024.0
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="compiles per (compiler, file); the fastest is kept")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "compile.json"))
    ap.add_argument("--compilers", default="g++-12,clang++-14")
    args = ap.parse_args()

    if not os.path.exists("/usr/bin/time"):
        print("measure.py: /usr/bin/time is missing (Debian package `time`); nothing measured")
        return 1
    compilers = [c for c in args.compilers.split(",") if c]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for compiler in compilers:
            if shutil.which(compiler) is None:
                print("measure.py: %s not found, skipped" % compiler)
                continue
            version = subprocess.run([compiler, "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
            for source in SOURCES:
                path = os.path.join(ROOT, "bench", "compile", source)
                best = None
                for _ in range(max(args.repeat, 1)):
                    r = compile_once(compiler, path, os.path.join(tmp, "x.o"))
                    if "error" in r:
                        best = r
                        break
                    if best is None or r["wall_s"] < best["wall_s"]:
                        best = r
                row = {"compiler": compiler, "compiler_version": version, "source": source}
                row.update(best)
                results.append(row)
                print("  %-11s %-16s %s" % (compiler, source,
                      best.get("error") or "%.2f s" % best["wall_s"]), flush=True)

    print()
    print("Compile time, -std=c++20 -O2 -march=native, one translation unit (`-c`), best of %d:" % max(args.repeat, 1))
    print("| compiler | program | wall s | CPU s | compiler max RSS MiB | object KiB |")
    print("|---|---|---:|---:|---:|---:|")
    for r in results:
        if "error" in r:
            print("| %s | %s | failed: %s | | | |" % (r["compiler"], r["source"], r["error"][:80]))
        else:
            print("| %s | %s | %.2f | %.2f | %.0f | %.0f |" % (r["compiler"], r["source"], r["wall_s"],
                  r["cpu_s"] or float("nan"), r["max_rss_mib"] or float("nan"), r["object_kib"]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"flags": FLAGS, "repeat": max(args.repeat, 1), "host": platform.node(),
                   "load_average_1min": load, "results": results}, f, indent=2)
    print("wrote", os.path.relpath(args.out, os.getcwd()))
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
