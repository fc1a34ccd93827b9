#!/usr/bin/env python3
"""Wraps each template head with a requires-clause in `// clang-format off` / `on`.

clang-format 14 cannot lay out requires-clauses: it parses an atom such as
`w_q_rows_equal_d_model<axis_t<shape_of<WQ>, 0>::static_extent, d_model>` as comparisons
(`w_q_rows_equal_d_model < axis_t < shape_of<WQ>, 0 > ::static_extent ...`) and joins a
constructor's declarator onto the clause. argus states each relation in requires-clauses,
so their hand layout (one relation or a pair per line, aligned under the first) is kept:
this script puts

    // clang-format off
    template <...>
      requires ...
    declarator ... {
    // clang-format on

around every `template <...>` head followed by a `requires` line and its declarator (which
clang-format 14 would otherwise still lay out as part of the clause), in the files given (or
every tracked *.hpp / *.cpp). Idempotent: a head already preceded by `// clang-format off`
is left alone. Run it before formatting the tree (tools/check_format.sh --fix).
"""
import pathlib
import re
import subprocess
import sys

TEMPLATE = re.compile(r"^\s*template\s*<")
REQUIRES = re.compile(r"^(\s*)requires\b")
OFF, ON = "// clang-format off", "// clang-format on"


def clause_end(lines, i):
    """Index of the last line of the requires-clause starting at line i."""
    depth = 0
    while True:
        code = lines[i].split("//", 1)[0]
        depth += code.count("(") - code.count(")")
        stripped = code.rstrip()
        if depth <= 0 and not stripped.endswith(("&&", "||", ",")):
            return i
        if i + 1 == len(lines):
            return i
        i += 1


def declaration_end(lines, i):
    """Index of the line that ends the declarator starting at line i: the line whose code
    ends with `{`, `;` or `}` outside parentheses (a constructor's initializer list too)."""
    depth = 0
    while True:
        code = lines[i].split("//", 1)[0]
        depth += code.count("(") - code.count(")")
        if depth <= 0 and code.rstrip().endswith(("{", ";", "}")):
            return i
        if i + 1 == len(lines):
            return i
        i += 1


def guard(text):
    lines = text.split("\n")
    out, i, changed = [], 0, 0
    while i < len(lines):
        if TEMPLATE.match(lines[i]):
            # The template head runs until its angle brackets close.
            j, depth = i, 0
            while True:
                code = lines[j].split("//", 1)[0]
                depth += code.count("<") - code.count(">")
                if depth <= 0 or j + 1 == len(lines):
                    break
                j += 1
            k = j + 1
            while k < len(lines) and lines[k].strip().startswith("//"):
                k += 1  # comments between the head and the clause
            already = out and out[-1].strip() == OFF
            if k < len(lines) and REQUIRES.match(lines[k]) and not already:
                # The declarator stays inside: after `// clang-format on`, clang-format 14
                # would still lay it out as a continuation of the clause.
                end = declaration_end(lines, clause_end(lines, k) + 1)
                indent = re.match(r"^\s*", lines[i]).group(0)
                out.append(indent + OFF)
                out.extend(lines[i:end + 1])
                out.append(indent + ON)
                i = end + 1
                changed += 1
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out), changed


def main(argv):
    root = pathlib.Path(__file__).resolve().parent.parent
    files = argv[1:] or subprocess.run(
        ["git", "ls-files", "--", "*.hpp", "*.cpp"], cwd=root, check=True,
        capture_output=True, text=True).stdout.split()
    total = 0
    for name in files:
        path = root / name if not pathlib.Path(name).is_absolute() else pathlib.Path(name)
        text = path.read_text()
        new, changed = guard(text)
        if changed:
            path.write_text(new)
            total += changed
            print(f"guard_requires_clauses: {name}: {changed} clause(s)")
    print(f"guard_requires_clauses: {total} requires-clause(s) guarded")


if __name__ == "__main__":
    main(sys.argv)
