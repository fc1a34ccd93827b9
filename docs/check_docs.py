#!/usr/bin/env python3
"""Docs that cannot drift: checks every code block and every quoted output of README.md and
docs/**/*.md against the code. The rules and the markers are described in
docs/contributing/docs.md; ctest runs each mode (docs/CMakeLists.txt).

  check_docs.py quotes                  quoted code is verbatim in its file; synopsis names exist
  check_docs.py snippets  --cxx C ...   the compiled blocks, as one TU, -fsyntax-only
  check_docs.py outputs   --bin DIR     quoted program output equals what the program prints
  check_docs.py compiler  --cxx C ...   quoted compiler messages equal what the compiler prints
  check_docs.py worked-example --work DIR ...
                                        docs/contributing/adding_a_node.md applied to a copy of
                                        the tree, configured, built and tested there
  add --refresh to `outputs` to rewrite the quoted outputs from what the programs print now.
"""
import argparse
import difflib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUOTE_SOURCES = ["examples", "include", "tests", "docs/snippets", "cmake"]
WILDCARD = re.compile(r"\.\.\.|…")


@dataclass
class Block:
    doc: Path
    line: int            # 1-based line of the first content line
    end: int             # 1-based line after the last content line
    lang: str            # "cpp", "text", "" ...; "indented" for an indented block
    text: str            # content, dedented for indented blocks
    indent: int = 0      # indentation removed from an indented block
    marker: str = ""     # "kind args..." of the <!-- check: ... --> before it, or ""
    hidden: str = ""     # lines of the marker after its first line
    fenced: bool = True

    def where(self):
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


@dataclass
class Marker:
    doc: Path
    line: int
    spec: str
    hidden: str
    block: "Block | None" = None


# Generated from the compilers' output by its own script, which keeps it in sync.
GENERATED = {"docs/reference/diagnostics.md"}


def doc_files():
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.exists() and str(f.relative_to(ROOT)) not in GENERATED]


MARKER = re.compile(r"^<!--\s*check:\s*(.*?)\s*(-->)?\s*$")


def parse(doc):
    """The code blocks of doc, with their markers, and the markers that have no block."""
    lines = doc.read_text().split("\n")
    blocks, markers = [], []
    pending = None
    i = 0
    prev_blank = True
    while i < len(lines):
        ln = lines[i]
        m = MARKER.match(ln)
        if m:
            spec, hidden = m.group(1), []
            j = i
            if not m.group(2):
                j += 1
                while j < len(lines) and "-->" not in lines[j]:
                    hidden.append(lines[j])
                    j += 1
                tail = lines[j].split("-->")[0] if j < len(lines) else ""
                if tail.strip():
                    hidden.append(tail)
            pending = Marker(doc, i + 1, spec, "\n".join(hidden))
            markers.append(pending)
            i = j + 1
            prev_blank = True
            continue
        fence = re.match(r"^(\s*)(```+)\s*([\w+-]*)", ln)
        if fence:
            ind, ticks, lang = len(fence.group(1)), fence.group(2), fence.group(3)
            j = i + 1
            body = []
            while j < len(lines) and not re.match(r"^\s*" + ticks + r"\s*$", lines[j]):
                body.append(lines[j][ind:] if lines[j][:ind].isspace() else lines[j])
                j += 1
            b = Block(doc, i + 2, j + 1, lang, "\n".join(body), ind)
            if pending and pending.block is None:
                b.marker, b.hidden, pending.block = pending.spec, pending.hidden, b
            pending = None
            blocks.append(b)
            i = j + 1
            prev_blank = False
            continue
        if prev_blank and ln.startswith("    ") and ln.strip() and not re.match(r"^\s*([*-]|\d+\.)\s", ln):
            # An indented code block (only after a blank line or a marker, outside lists).
            j = i
            body = []
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                body.append(lines[j][4:])
                j += 1
            while body and not body[-1].strip():
                body.pop()
                j -= 1
            b = Block(doc, i + 1, i + 1 + len(body), "indented", "\n".join(body), 4, fenced=False)
            if pending and pending.block is None:
                b.marker, b.hidden, pending.block = pending.spec, pending.hidden, b
            pending = None
            blocks.append(b)
            i = j
            prev_blank = False
            continue
        if ln.strip():
            pending = None  # prose between a marker and a block: the marker has no block
            prev_blank = False
        else:
            prev_blank = True
        i += 1
    return blocks, markers


def kind(b):
    return b.marker.split()[0].rstrip(":") if b.marker else ""


def all_blocks():
    out = []
    for d in doc_files():
        out += parse(d)[0]
    return out


def squash(line):
    """A line with its runs of blanks made one: a quote survives clang-format's realignment
    of trailing comments and declarations."""
    return " ".join(line.split())


def norm(text):
    return [squash(l) for l in text.strip("\n").split("\n")]


_sources = None


def source_lines():
    global _sources
    if _sources is None:
        _sources = {}
        for base in QUOTE_SOURCES:
            for p in sorted((ROOT / base).rglob("*")):
                if p.suffix in (".cpp", ".hpp", ".cmake", ".txt") and p.is_file():
                    _sources[p] = [squash(l) for l in p.read_text(errors="replace").split("\n")]
    return _sources


def find_quote(b, only=None):
    want = norm(b.text)
    for p, lines in source_lines().items():
        if only and p != only:
            continue
        for k in range(len(lines) - len(want) + 1):
            if lines[k] == want[0] and lines[k:k + len(want)] == want:
                return p
    return None


def closest(b):
    """(file, ratio, diff) of the best partial match, to say what drifted."""
    want = norm(b.text)
    best = (None, 0.0, 0)
    for p, lines in source_lines().items():
        for k, l in enumerate(lines):
            if l == want[0] or (len(want) > 1 and l == want[1]):
                cand = lines[k:k + len(want)]
                r = difflib.SequenceMatcher(None, want, cand).ratio()
                if r > best[1]:
                    best = (p, r, k)
    if best[0] is None or best[1] < 0.5:
        return ""
    cand = source_lines()[best[0]][best[2]:best[2] + len(want)]
    diff = "\n".join(difflib.unified_diff(want, cand, "docs", str(best[0].relative_to(ROOT)), lineterm="", n=1))
    return f"\n  closest: {best[0].relative_to(ROOT)}:{best[2] + 1}\n" + diff


# ---- quotes ---------------------------------------------------------------------------------

DECL = re.compile(
    r"(?:struct|class|concept|using)\s+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*\(|(?:constexpr|inline)\s+\w[\w:<>]*\s+([A-Za-z_]\w*)\s*[={]")
KEYWORDS = {"if", "for", "while", "return", "sizeof", "requires", "decltype", "operator", "static_assert",
            "noexcept", "template", "alignas", "main"}


def headers_text():
    return "\n".join(p.read_text() for p in sorted((ROOT / "include").rglob("*.hpp")))


def cmd_quotes(args):
    errors, counts = [], {}
    hdrs = headers_text()
    for b in all_blocks():
        if b.lang != "cpp":
            continue
        k = kind(b)
        counts[k or "quote"] = counts.get(k or "quote", 0) + 1
        if k == "":
            if not find_quote(b):
                errors.append(f"{b.where()}: this C++ block is not a verbatim quote of any file under "
                              f"{', '.join(QUOTE_SOURCES)}, and it has no <!-- check: ... --> marker "
                              f"(docs/contributing/docs.md){closest(b)}")
        elif k == "quote":
            target = ROOT / b.marker.split()[1]
            if not target.exists():
                errors.append(f"{b.where()}: quote of {target.relative_to(ROOT)}, which does not exist")
            elif not find_quote(b, target):
                errors.append(f"{b.where()}: this block is no longer in {target.relative_to(ROOT)}{closest(b)}")
        elif k == "synopsis":
            code = re.sub(r"//[^\n]*|/\*.*?\*/", "", b.text, flags=re.S)
            for m in DECL.finditer(code):
                name = m.group(1) or m.group(2) or m.group(3)
                if not name or name in KEYWORDS or name[0].isupper() and len(name) <= 3:
                    continue
                if name in ("std", "size_t", "array", "optional", "string") or name.startswith("std"):
                    continue
                if not re.search(r"\b" + re.escape(name) + r"\b", hdrs):
                    errors.append(f"{b.where()}: the synopsis names `{name}`, which no header in include/ declares")
        elif k not in ("compile", "function", "fragment", "apply"):
            errors.append(f"{b.where()}: unknown marker kind '{k}' on a C++ block")
    for d in doc_files():
        for m in parse(d)[1]:
            if m.block is None and not m.spec.startswith("apply include"):
                errors.append(f"{d.relative_to(ROOT)}:{m.line}: marker '{m.spec}' is not followed by a code block")
    errors += generated_errors()
    report("quotes", errors, ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + " C++ blocks")


def quoted_source_errors(doc_path, doc, rerun):
    """The compilers' messages quote the source line of each location they name in the
    repository (GCC as `  L | text` under `path:L:C: ...`, Clang as the text itself): each such
    quote must still be that line of the file, so that an edit above a static_assert, which
    moves its line, cannot leave the page pointing at another line."""
    errors = []
    lines = doc.splitlines()
    location = re.compile(r"^((?:include|tests|examples)/[^:\s]+):(\d+):\d+: (?:error|note|warning)\b")
    cache = {}
    for n, line in enumerate(lines[:-1]):
        m = location.match(line)
        if not m:
            continue
        path, number = m.group(1), int(m.group(2))
        following = lines[n + 1]
        g = re.match(r"^\s*(\d+) \| (.*)$", following)
        if g:  # GCC
            if int(g.group(1)) != number:
                continue
            quoted = g.group(2)
        elif (following.startswith(" ") and not location.match(following.lstrip())
              and not re.match(r"^\s*\|", following)):  # Clang: the line itself
            quoted = following
        else:
            continue
        if path not in cache:
            f = ROOT / path
            cache[path] = f.read_text().splitlines() if f.is_file() else None
        source = cache[path]
        if source is None:
            errors.append(f"{doc_path.relative_to(ROOT)}:{n + 1}: {path} no longer exists{rerun}")
        elif number > len(source) or source[number - 1].strip() != quoted.strip():
            errors.append(f"{doc_path.relative_to(ROOT)}:{n + 1}: {path}:{number} is no longer "
                          f"the line the message quotes ({quoted.strip()[:60]!r}){rerun}")
    return errors


def generated_errors():
    """docs/reference/diagnostics.md is regenerated by hand (tools/diagnostics_doc.py: minutes of
    both compilers), so it is checked here, cheaply, against what it is made of: its intro is
    docs/reference/diagnostics_intro.md, its table lists every tests/compile_fail/*.cpp,
    docs/reliability.md quotes its summary, and the source lines its messages quote are still
    where they say (quoted_source_errors)."""
    rerun = "; rerun python3 tools/diagnostics_doc.py"
    doc_path = ROOT / "docs" / "reference" / "diagnostics.md"
    doc = doc_path.read_text()
    errors = []
    intro = (ROOT / "docs" / "reference" / "diagnostics_intro.md").read_text().rstrip()
    if not doc.startswith(intro):
        errors.append(f"{doc_path.relative_to(ROOT)}: its intro is not docs/reference/"
                      f"diagnostics_intro.md{rerun}")
    stems = {p.stem for p in (ROOT / "tests" / "compile_fail").glob("*.cpp")}
    listed = set(re.findall(r"^\| `([^`]+)` \|", doc, re.M))
    for stem in sorted(stems - listed):
        errors.append(f"{doc_path.relative_to(ROOT)}: tests/compile_fail/{stem}.cpp is not in "
                      f"its table{rerun}")
    for stem in sorted(listed - stems):
        errors.append(f"{doc_path.relative_to(ROOT)}: its table lists {stem}, which "
                      f"tests/compile_fail/ no longer holds{rerun}")
    errors += quoted_source_errors(doc_path, doc, rerun)
    m = re.search(r"^## The catalogue in numbers\n\n(.+)$", doc, re.M)
    reliability = " ".join((ROOT / "docs" / "reliability.md").read_text().replace("**", "").split())
    if not m:
        errors.append(f"{doc_path.relative_to(ROOT)}: no summary after '## The catalogue in "
                      f"numbers'{rerun}")
    elif m.group(1).rstrip(".") not in reliability:
        errors.append(f"docs/reliability.md does not quote the summary of "
                      f"{doc_path.relative_to(ROOT)}: '{m.group(1)}'")
    return errors


def report(what, errors, summary):
    for e in errors:
        print("error: " + e)
    print(f"{what}: {summary}; {len(errors)} error(s)")
    sys.exit(1 if errors else 0)


# ---- snippets -------------------------------------------------------------------------------

def cmd_snippets(args):
    includes, parts = [], []
    origin = []  # (tu line, block)
    n = 0
    for b in all_blocks():
        if b.lang != "cpp" or kind(b) not in ("compile", "function"):
            continue
        n += 1
        body, incs = [], []
        for l in (b.hidden + "\n" + b.text if kind(b) == "compile" else b.text).split("\n"):
            if l.startswith("#include"):
                incs.append(l)
                l = ""  # keeps the #line numbering
            body.append(l)
        includes += [i for i in incs if i not in includes]
        text = "\n".join(body)
        text = re.sub(r"\bint main\s*\(", "int snippet_main(", text)
        head = f"namespace docs_snippet_{n} {{  // {b.where()}\n"
        if kind(b) == "function":
            head += "using namespace argus;\n"
            head += b.hidden + "\n" if b.hidden else ""
            head += f"[[maybe_unused]] void snippet() {{\n"
            parts.append((head, b, text + "\n}\n}\n"))
        else:
            parts.append((head, b, text + "\n}\n"))
    tu = ["// Generated by docs/check_docs.py from README.md and docs/: one namespace per block.",
          "#include <argus/argus.hpp>"] + includes + [""]
    for head, b, text in parts:
        tu.append(head.rstrip("\n"))
        tu.append(f'#line {b.line} "{b.doc.relative_to(ROOT)}"')
        tu.append(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(tu))
    cmd = [args.cxx, "-std=c++20", "-fsyntax-only", f"-I{ROOT / 'include'}", *args.flag,
           "-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-unused-local-typedefs",
           # a renamed main loses main's implicit `return 0`
           "-Wno-return-type", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    report("snippets", ["the blocks above do not compile"] if r.returncode else [],
           f"{n} blocks compiled as one translation unit ({out})")


# ---- program outputs --------------------------------------------------------------------------

def pattern(text):
    """A regex for a quoted output: `...` or `…` within a line matches any text, a line that is
    only `...` or `…` any number of lines."""
    parts = []
    for l in text.strip("\n").split("\n"):
        if l.strip() in ("...", "…"):
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces = WILDCARD.split(l.rstrip())
        parts.append("[^\n]*".join(re.escape(p) for p in pieces) + r"[ \t]*\n")
    return "".join(parts)


def masked(text, ignore):
    """What `ignore` matches becomes `#`, and runs of blanks one blank (aligned columns of
    figures keep their width only with the figures)."""
    return re.sub(r"[ \t]+", " ", re.sub(ignore, "#", text)) if ignore else text


def parse_spec(spec):
    """kind program args... [ignore=REGEX] [compiler=gcc|clang]"""
    words = shlex.split(spec)
    opts = {}
    pos = []
    for w in words[1:]:
        if re.match(r"^(ignore|compiler)=", w):
            k, v = w.split("=", 1)
            opts[k] = v
        else:
            pos.append(w)
    return pos, opts


def check_output(b, actual, ignore, refresh, errors, edits):
    quoted = b.text
    text = masked(actual, ignore)
    if re.search(pattern(masked(quoted, ignore)), text + "\n", re.M):
        return
    if refresh and not WILDCARD.search(quoted):
        # The same number of lines, where the quote matches with its numbers as wildcards.
        loose = re.sub(r"\d+(\.\d+)?(e[+-]\d+)?", "…", quoted)
        m = re.search(pattern(loose), actual + "\n", re.M)
        if m:
            edits.append((b, m.group(0).rstrip("\n")))
            return
    errors.append(f"{b.where()}: the quoted output is not what `{b.marker}` prints now"
                  f"{' (refresh cannot rewrite it: it has wildcards or changed shape)' if refresh else ''}:\n"
                  + indent(quoted) + "\n  prints:\n" + indent(actual))


def indent(t):
    return "\n".join("    | " + l for l in t.rstrip("\n").split("\n"))


def apply_edits(edits):
    by_doc = {}
    for b, new in edits:
        by_doc.setdefault(b.doc, []).append((b, new))
    for doc, es in by_doc.items():
        lines = doc.read_text().split("\n")
        for b, new in sorted(es, key=lambda e: -e[0].line):
            pad = " " * b.indent
            lines[b.line - 1:b.end - 1] = [(pad + l if l else l) for l in new.split("\n")]
        doc.write_text("\n".join(lines))
        print(f"refreshed {len(es)} block(s) in {doc.relative_to(ROOT)}")


def cmd_outputs(args):
    errors, edits, runs, n = [], [], {}, 0
    for b in all_blocks():
        if kind(b) != "output":
            continue
        n += 1
        pos, opts = parse_spec(b.marker)
        key = tuple(pos)
        if key not in runs:
            exe = Path(args.bin) / pos[0]
            if not exe.exists():
                errors.append(f"{b.where()}: {exe} is not built")
                runs[key] = None
                continue
            # In a scratch directory: what a program writes (pictures) stays out of the tree.
            with tempfile.TemporaryDirectory(prefix="argus-docs-") as scratch:
                r = subprocess.run([str(exe.resolve()), *pos[1:]], capture_output=True, text=True,
                                   timeout=300, cwd=scratch)
            runs[key] = r.stdout + r.stderr
        if runs[key] is not None:
            check_output(b, runs[key], opts.get("ignore"), args.refresh, errors, edits)
    if edits:
        apply_edits(edits)
    report("outputs", errors, f"{n} quoted outputs of {len(runs)} program runs")


# ---- compiler messages ----------------------------------------------------------------------

def compiler_output(cxx, flags, source, extra=()):
    r = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-fdiagnostics-color=never",
                        f"-I{ROOT / 'include'}", *flags, *extra, str(source)],
                       capture_output=True, text=True)
    out = r.stdout + r.stderr
    # Paths are shown from the repository root ("include/argus/...", "tests/...").
    return out.replace(str(ROOT) + "/", "")


def cmd_compiler(args):
    errors, edits, runs, n, skipped = [], [], {}, 0, 0
    for b in all_blocks():
        if kind(b) != "compile-error":
            continue
        pos, opts = parse_spec(b.marker)
        if opts.get("compiler", "gcc") != args.compiler_id:
            skipped += 1
            continue
        n += 1
        src = ROOT / pos[0]
        if src not in runs:
            runs[src] = compiler_output(args.cxx, args.flag, src, ["-DARGUS_EXPECT_COMPILE_ERROR"])
        check_output(b, runs[src], opts.get("ignore"), args.refresh, errors, edits)
    if edits:
        apply_edits(edits)
    report("compiler", errors, f"{n} quoted {args.compiler_id} messages of {len(runs)} compiler runs "
                               f"({skipped} for the other compiler not checked here)")


# ---- the worked example of the contributing guide ---------------------------------------------

def cmd_worked_example(args):
    doc = ROOT / "docs/contributing/adding_a_node.md"
    blocks, markers = parse(doc)
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    src = work / "src"
    src.mkdir(parents=True)
    for name in ("include", "tests", "cmake", "CMakeLists.txt"):
        p = ROOT / name
        (shutil.copytree if p.is_dir() else shutil.copy)(p, src / name)
    errors = []
    for m in markers:
        if not m.spec.startswith("apply"):
            continue
        words = shlex.split(m.spec)
        op, path = words[1], src / words[2]
        where = f"{doc.relative_to(ROOT)}:{m.line}"
        try:
            if op == "new":
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(m.block.text + "\n")
            elif op == "include":
                t = path.read_text()
                k = t.index("#include <argus/")
                path.write_text(t[:k] + f"#include <{words[3]}>\n" + t[k:])
            elif op in ("before", "after"):
                lines = path.read_text().split("\n")
                k = next(i for i, l in enumerate(lines) if words[3] in l)
                if op == "after":
                    k += 1
                lines[k:k] = m.block.text.split("\n") + [""]
                path.write_text("\n".join(lines))
            elif op == "before-end-of":  # before the "};" that closes the class ending above the anchor
                lines = path.read_text().split("\n")
                a = next(i for i, l in enumerate(lines) if words[3] in l)
                k = next(i for i in range(a, -1, -1) if lines[i] == "};")
                lines[k:k] = [""] + m.block.text.split("\n")
                path.write_text("\n".join(lines))
            elif op == "replace":
                lines = path.read_text().split("\n")
                a = next(i for i, l in enumerate(lines) if words[3] in l)
                e = next(i for i in range(a, len(lines)) if words[4] in lines[i])
                lines[a:e + 1] = m.block.text.split("\n")
                path.write_text("\n".join(lines))
            else:
                errors.append(f"{where}: unknown apply operation '{op}'")
        except (StopIteration, ValueError):
            errors.append(f"{where}: '{m.spec}': the anchor is not in {words[2]} any more")
    if errors:
        report("worked-example", errors, "could not apply the guide")
    build = work / "build"
    # The kernels: the calling build's compiled-once library (--kernels) where the guide edits
    # nothing under include/argus/kernel/, which that library was compiled from; the copy's test
    # then declares them extern (ARGUS_EXTERN_KERNELS) and links it, as the build's own tests do.
    # Header-only, that one test TU compiled the kernels it calls at -Og: 30 s of its 33.
    edits_kernels = any(shlex.split(m.spec)[2].startswith("include/argus/kernel/")
                        for m in markers if m.spec.startswith("apply"))
    kernels = []
    if args.kernels and not edits_kernels:
        kernels = ["-DCMAKE_CXX_FLAGS=-DARGUS_EXTERN_KERNELS",
                   f"-DCMAKE_CXX_STANDARD_LIBRARIES={Path(args.kernels).resolve()}"]
    steps = [
        [args.cmake, "-S", str(src), "-B", str(build), "-G", args.generator, f"-DCMAKE_CXX_COMPILER={args.cxx}",
         "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og",
         "-DARGUS_BUILD_EXAMPLES=OFF", "-DARGUS_BUILD_BENCHMARKS=OFF",
         # one test and one compile-fail test: cheaper without a kernels library of its own and
         # the PCHs (the tests' PCH, argus and Boost.Test, took longer to build than it saved one TU)
         "-DARGUS_COMPILED_KERNELS=OFF", "-DARGUS_COMPILE_FAIL_PCH=OFF", "-DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON",
         f"-DARGUS_GOLDEN_DIR={work}", *kernels],
        [args.cmake, "--build", str(build), "--target", *args.target],
        [args.ctest, "--test-dir", str(build), "--output-on-failure", "-R", args.tests],
    ]
    for s in steps:
        print("+ " + " ".join(s), flush=True)
        r = subprocess.run(s, capture_output=True, text=True)
        if r.returncode:
            sys.stdout.write(r.stdout[-20000:] + r.stderr[-20000:])
            report("worked-example", [f"`{' '.join(s)}` failed"], "the guide's code does not build or pass")
        if s[0] == args.ctest:
            sys.stdout.write(r.stdout)
    # The plan the guide quotes is what the law test logs.
    exe = build / "tests" / "unit.eval.fused_projection_add"
    r = subprocess.run([str(exe), "--log_level=message", "--color_output=no"], capture_output=True, text=True)
    out_errors, edits = [], []
    for b in blocks:
        if kind(b) == "worked-output":
            check_output(b, r.stdout + r.stderr, None, False, out_errors, edits)
    report("worked-example", out_errors, "the guide applied to a copy of the tree builds, its tests pass")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["quotes", "snippets", "outputs", "compiler", "worked-example"])
    ap.add_argument("--cxx")
    ap.add_argument("--compiler-id", default="gcc", choices=["gcc", "clang"])
    ap.add_argument("--flag", action="append", default=[], help="a compiler flag (repeat)")
    ap.add_argument("--out", help="snippets: the generated translation unit")
    ap.add_argument("--bin", help="outputs: the directory of the example programs")
    ap.add_argument("--refresh", action="store_true", help="rewrite quoted outputs that drifted")
    ap.add_argument("--work", help="worked-example: a scratch directory (emptied)")
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--ctest", default="ctest")
    ap.add_argument("--generator", default="Ninja")
    ap.add_argument("--target", action="append", default=[])
    ap.add_argument("--tests", default=".")
    ap.add_argument("--kernels", help="worked-example: a compiled-once kernels library (libargus_kernels.a) "
                                      "built from this tree's include/argus/kernel/, for the copy to link")
    args = ap.parse_args()
    {"quotes": cmd_quotes, "snippets": cmd_snippets, "outputs": cmd_outputs, "compiler": cmd_compiler,
     "worked-example": cmd_worked_example}[args.mode](args)


if __name__ == "__main__":
    main()
