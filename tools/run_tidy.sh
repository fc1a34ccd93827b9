#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy at the root) over every header under include/argus/: one
# translation unit that includes them all, parsed once, with diagnostics kept to argus's
# headers (HeaderFilterRegex). Any finding is an error (WarningsAsErrors), so the exit
# status is the verdict. The ctest test "tidy" (label tidy) runs this.
#
#   tools/run_tidy.sh [extra compiler flags...]      e.g. tools/run_tidy.sh -mno-avx2
#
# CLANG_TIDY names the binary (default clang-tidy-14, else clang-tidy). Without extra
# flags the headers are read with -march=native, as the tests build them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tidy="${CLANG_TIDY:-$(command -v clang-tidy-14 || command -v clang-tidy || true)}"
if [[ -z "$tidy" ]]; then
  echo "run_tidy: clang-tidy not found (install clang-tidy-14, or set CLANG_TIDY)" >&2
  exit 2
fi
flags=("$@")
[[ ${#flags[@]} -gt 0 ]] || flags=(-march=native)
# argus/viz/attention_png.hpp includes stb_image_write.h from Debian's libstb-dev.
flags+=($(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb))

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tu="$work/every_argus_header.cpp"
(cd "$root/include" && find argus -name '*.hpp' | LC_ALL=C sort | sed 's|.*|#include <&>|') > "$tu"
echo "run_tidy: $(wc -l < "$tu") headers, $tidy, flags: ${flags[*]}"
# --config-file: the TU lives outside the tree, where clang-tidy would not find .clang-tidy.
"$tidy" --quiet --config-file="$root/.clang-tidy" "$tu" -- \
  -std=c++20 -I"$root/include" "${flags[@]}"
echo "run_tidy: no findings"
