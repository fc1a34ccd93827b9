#!/usr/bin/env python3
"""tests/tools/bench_report_test.py -- the report of bench/run.py (ctest tools.bench_report).

The issue targets that `make bench` prints as met or not met (bench/run.py targets()) are
computed from Google Benchmark's JSON: which row is fused and which a peer, the median of
repeated rows, the time ratios against the thresholds, and the caveat that a libtorch row ran
on OpenBLAS kernels for an older CPU. These tests feed run.py's own functions JSON shaped as
the benchmark programs write it and check the lines it derives."""
import importlib.util
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("argus_bench_run", os.path.join(ROOT, "bench", "run.py"))
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)  # run.py's main() runs only as a script

FAIR_LABEL = "libtorch 1.13, set_num_threads(1), BLAS openblas-openmp, its SkylakeX kernels, nn::MultiheadAttention"
FALLBACK_LABEL = ("libtorch 1.13, set_num_threads(1), BLAS openblas-openmp, its Prescott kernels (an older CPU's: "
                  "this OpenBLAS does not know this one, which has AVX-512; OPENBLAS_CORETYPE=SkylakeX chooses "
                  "kernels that use it), nn::MultiheadAttention")


def row(family, evaluator, n, threads, ms, peak_pct=None, label=None, repetitions=None, extra="/h:8/d_model:512"):
    """The JSON entries of one benchmark row: one iteration entry, or `repetitions` (a list of
    times) and their median aggregate, as --benchmark_repetitions writes them."""
    name = "BM_%s/%s/n:%d%s/threads:%d/real_time" % (family, evaluator, n, extra, threads)
    base = {"run_name": name, "time_unit": "ms", "GFLOPS": 1.0, "peak_pct": peak_pct, "label": label}
    if repetitions is None:
        return [dict(base, name=name, run_type="iteration", real_time=ms, cpu_time=ms)]
    out = [dict(base, name=name, run_type="iteration", real_time=t, cpu_time=t) for t in repetitions]
    out.append(dict(base, name=name + "_median", run_type="aggregate", aggregate_name="median",
                    real_time=ms, cpu_time=ms))
    return out


def mha(*rows):
    return run.rows_of({"benchmarks": [entry for r in rows for entry in r]})


def line(lines, start):
    found = [l for l in lines if l.startswith("- " + start)]
    assert len(found) == 1, (start, lines)
    return found[0]


class Targets(unittest.TestCase):
    def test_onednn_ratio_against_each_threshold(self):
        table = mha(row("mha", "fused", 1024, 1, 10.0), row("mha", "onednn", 1024, 1, 11.5),  # 1.15x
                    row("mha", "fused", 4096, 1, 100.0), row("mha", "onednn", 4096, 1, 125.0))  # 1.25x
        lines = run.targets({}, table, None)
        self.assertIn("**met** (n 1024, 1 thread: 1.15×)", line(lines, "MHA fused >= 1.1× onednn, n 1024"))
        self.assertIn("**not met** (n 4096, 1 thread: 1.25×)", line(lines, "MHA fused >= 1.3× onednn, n 4096/8192"))

    def test_one_short_row_fails_the_target(self):
        table = mha(row("mha", "fused", 1024, 1, 10.0), row("mha", "onednn", 1024, 1, 12.0),
                    row("mha", "fused", 1024, 2, 10.0), row("mha", "onednn", 1024, 2, 10.9))  # 1.09x
        self.assertIn("**not met**", line(run.targets({}, table, None), "MHA fused >= 1.1× onednn, n 1024"))

    def test_repeated_rows_use_the_median(self):
        # The first repetition alone would give 30 / 10 = 3x; the medians give 2.5x.
        table = mha(row("mha", "fused", 1024, 1, 10.0, repetitions=[10.0, 9.0, 11.0]),
                    row("mha", "torch", 1024, 1, 25.0, label=FAIR_LABEL, repetitions=[30.0, 25.0, 20.0]))
        self.assertEqual(line(run.targets({}, table, None), "MHA fused >= 2.0× torch"),
                         "- MHA fused >= 2.0× torch, n 1024/2048/4096/8192: **met** (n 1024, 1 thread: 2.50×)")

    def test_libtorch_on_an_older_cpus_kernels_is_flagged(self):
        fused = row("mha", "fused", 1024, 1, 10.0)
        fair = line(run.targets({}, mha(fused, row("mha", "torch", 1024, 1, 70.0, label=FAIR_LABEL)), None),
                    "MHA fused >= 2.0× torch")
        self.assertNotIn("not a fair ratio", fair)
        unfair = line(run.targets({}, mha(fused, row("mha", "torch", 1024, 1, 70.0, label=FALLBACK_LABEL)), None),
                      "MHA fused >= 2.0× torch")
        self.assertIn("7.00×", unfair)
        self.assertIn("not a fair ratio", unfair)

    def test_peak_share_targets(self):
        core = mha(row("core", "fused", 1024, 1, 10.0, peak_pct=71.0, extra="/h:8"),
                   row("core", "fused", 4096, 1, 10.0, peak_pct=69.9, extra="/h:8"))
        self.assertEqual(line(run.targets(core, {}, None), "core fused >= 70% of peak, 1 thread"),
                         "- core fused >= 70% of peak, 1 thread, n 1024-8192: **not met** "
                         "(n 1024: 71.0%, n 4096: 69.9%)")

    def test_absent_rows_are_reported_as_not_measured(self):
        lines = run.targets({}, {}, None)
        self.assertIn("not measured in this run", line(lines, "MHA fused >= 1.1× onednn, n 1024"))
        self.assertIn("not measured in this run", line(lines, "MHA fused memory at n 16384"))


if __name__ == "__main__":
    unittest.main()
