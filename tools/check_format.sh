#!/usr/bin/env bash
# Checks that every tracked C++ file (*.hpp, *.cpp) is formatted as .clang-format says
# (clang-format --dry-run -Werror on each) and names each file that is not; VERBOSE=1 also
# prints clang-format's diagnostics for each difference. Outside a git checkout, every such file under the source tree is checked
# (build/ excluded). The ctest test "format" (label format) runs this.
#
#   tools/check_format.sh              check
#   tools/check_format.sh --fix        reformat the same files in place (the lead's command)
#
# CLANG_FORMAT names the binary (default clang-format-14, else clang-format).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
format="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}"
if [[ -z "$format" ]]; then
  echo "check_format: clang-format not found (install clang-format-14, or set CLANG_FORMAT)" >&2
  exit 2
fi
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.hpp' '*.cpp')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.hpp' -o -name '*.cpp' \) -print | LC_ALL=C sort)
fi
if [[ "${1:-}" == "--fix" ]]; then
  "$format" -i "${files[@]}"
  echo "check_format: reformatted ${#files[@]} files"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue  # deleted in the work tree, not yet in the index
  if [[ -n "${VERBOSE:-}" ]]; then quiet=/dev/stderr; else quiet=/dev/null; fi
  "$format" --dry-run -Werror "$f" 2>"$quiet" || { echo "check_format: $f is not formatted"; bad=$((bad + 1)); }
done
if [[ $bad -ne 0 ]]; then
  echo "check_format: $bad of ${#files[@]} files differ from .clang-format; see a diff with"
  echo "  $format <file> | diff <file> -      or reformat all with tools/check_format.sh --fix"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
