#!/usr/bin/env python3
"""Regenerates docs/reference/diagnostics.md from the real output of g++-12 and clang++-14.

For every tests/compile_fail/<stem>.cpp, both compilers compile it with
-DARGUS_EXPECT_COMPILE_ERROR (the flags of tests/compile_fail/CMakeLists.txt, without -march);
the page shows, per relation, each test's comment and the complete messages, and a table of
the line where the rule first appears and the message's length (the compile-fail harness holds
both to <= 10 and <= 25). Usage, from the repository root:

    python3 tools/diagnostics_doc.py            # rewrite docs/reference/diagnostics.md
    python3 tools/diagnostics_doc.py --table    # print only the table (for docs/reliability.md)
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests", "compile_fail")
DOC = os.path.join(ROOT, "docs", "reference", "diagnostics.md")
COMPILERS = {"gcc": "g++-12", "clang": "clang++-14"}
FLAGS = ["-std=c++20", "-fsyntax-only", "-fdiagnostics-color=never", "-Wall", "-Wextra",
         "-DARGUS_EXPECT_COMPILE_ERROR", "-Iinclude"]


def expectations(text, compiler):
    tags = ("expect", "expect-" + compiler)
    out = []
    for tag, regex in re.findall(r"//\s*(expect(?:-gcc|-clang)?):\s*(.*\S)", text):
        if tag in tags:
            out.append((tag, regex))
    return out


def comment(text):
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        if re.match(r"//\s*expect", line):
            continue
        lines.append(line[2:].strip())
    return " ".join(lines)


def run(stem, compiler):
    path = os.path.join("tests", "compile_fail", stem + ".cpp")
    proc = subprocess.run([COMPILERS[compiler], *FLAGS, path], cwd=ROOT, capture_output=True,
                          text=True)
    output = (proc.stdout + proc.stderr).replace(ROOT + "/", "")
    # The file name often spells the rule: show it, but as test.cpp, so that it is no mention.
    output = output.replace(path, "test.cpp")
    return stem, compiler, proc.returncode, output


def cmake_regex(regex):
    # The harness uses CMake regexes; the expectations written so far are also Python regexes.
    return re.compile(regex)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    stems = sorted(f[:-4] for f in os.listdir(TESTS) if f.endswith(".cpp"))
    sources = {s: open(os.path.join(TESTS, s + ".cpp")).read() for s in stems}
    jobs = [(s, c) for s in stems for c in COMPILERS]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for stem, compiler, rc, output in pool.map(lambda j: run(*j), jobs):
            results[(stem, compiler)] = (rc, output)

    rows = []
    problems = []
    for stem in stems:
        row = [stem]
        for compiler in COMPILERS:
            rc, output = results[(stem, compiler)]
            lines = output.splitlines()
            exp = expectations(sources[stem], compiler)
            rule = next((r for t, r in exp if t == "expect"), None)
            at = next((i + 1 for i, l in enumerate(lines) if rule and cmake_regex(rule).search(l)), 0)
            row += [at, len(lines)]
            # One misuse, one error, as the harness checks (check_compile_fail.cmake).
            errors = len(re.findall(r"^.*:\d+:\d+: (?:fatal )?error: ", output, re.M))
            wanted = re.search(r"//\s*expect-errors:\s*(\d+)", sources[stem])
            wanted = int(wanted.group(1)) if wanted else 1
            if rc == 0 or not rule or at == 0 or at > 10 or len(lines) > 25 or errors != wanted:
                problems.append(f"{stem} ({compiler}): rc {rc}, rule at line {at} of {len(lines)}, "
                                f"{errors} error(s)")
        rows.append(row)
    gcc_at = [r[1] for r in rows]
    clang_at = [r[3] for r in rows]
    table = ["| test (tests/compile_fail/) | GCC 12: rule at line | of | Clang 14: rule at line | of |",
             "|---|---|---|---|---|"]
    table += [f"| `{r[0]}` | {r[1]} | {r[2]} | {r[3]} | {r[4]} |" for r in rows]
    summary = (f"{len(rows)} misuses; the rule first appears at line {min(gcc_at)}–{max(gcc_at)} "
               f"with GCC 12 (messages of {min(r[2] for r in rows)}–{max(r[2] for r in rows)} lines) "
               f"and at line {min(clang_at)}–{max(clang_at)} with Clang 14 (messages of "
               f"{min(r[4] for r in rows)}–{max(r[4] for r in rows)} lines).")
    if args.table:
        print(summary + "\n")
        print("\n".join(table))
        if problems:
            print("\nOver the bar:\n" + "\n".join(problems), file=sys.stderr)
        return 1 if problems else 0

    by_rule = {}
    for stem in stems:
        rule = next((r for t, r in expectations(sources[stem], "gcc") if t == "expect"), stem)
        by_rule.setdefault(rule, []).append(stem)
    out = [open(os.path.join(ROOT, "docs", "reference", "diagnostics_intro.md")).read().rstrip(),
           "", "## The catalogue in numbers", "", summary, "", *table, ""]
    out += ["## Every misuse, with both compilers' complete messages", ""]
    for rule in sorted(by_rule):
        out += [f"### `{rule}`", ""]
        for stem in by_rule[rule]:
            out += [f"`tests/compile_fail/{stem}.cpp`: {comment(sources[stem])}", ""]
            for compiler in COMPILERS:
                rc, output = results[(stem, compiler)]
                out += [f"{'GCC 12' if compiler == 'gcc' else 'Clang 14'}:", "", "```text",
                        output.rstrip(), "```", ""]
    with open(DOC, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {os.path.relpath(DOC, ROOT)}: {summary}")
    if problems:
        print("Over the bar:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
