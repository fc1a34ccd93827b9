#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy at the root) over every header under include/argus/: one
# translation unit that includes them all, parsed once, with diagnostics kept to argus's
# headers (HeaderFilterRegex). Any finding is an error (WarningsAsErrors), so the exit
# status is the verdict. The ctest test "tidy" (label tidy) runs this.
#
#   tools/run_tidy.sh [--isa-dependent] [extra compiler flags...]   e.g. tools/run_tidy.sh -mno-avx2
#
# --isa-dependent: only the headers whose code changes with the instruction set: everything
# under argus/kernel/ (kernel/simd.hpp and the loops built on it) and any other header that
# tests an ISA macro (__AVX2__, __AVX512F__, __FMA__, __SSE*, __x86_64__). The ctest runs for
# the second and third SIMD paths use it: the other headers read the same under any -m flag,
# and the full run already checks them (each variant's full run took 20 s, this one 11 s).
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
isa_dependent=0
if [[ "${1:-}" == --isa-dependent ]]; then
  isa_dependent=1
  shift
fi
flags=("$@")
[[ ${#flags[@]} -gt 0 ]] || flags=(-march=native)
# argus/viz/attention_png.hpp includes stb_image_write.h from Debian's libstb-dev.
flags+=($(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb))

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tu="$work/every_argus_header.cpp"
(
  cd "$root/include"
  if [[ $isa_dependent == 1 ]]; then
    { find argus/kernel -name '*.hpp'
      grep -rlE '__(AVX|FMA|SSE)[A-Z0-9_]*__|__x86_64__' argus --include='*.hpp'; } | LC_ALL=C sort -u
  else
    find argus -name '*.hpp' | LC_ALL=C sort
  fi | sed 's|.*|#include <&>|'
) > "$tu"
scope="every header"
[[ $isa_dependent == 0 ]] || scope="the ISA-dependent headers"
echo "run_tidy: $(wc -l < "$tu") headers ($scope), $tidy, flags: ${flags[*]}"
# --config-file: the TU lives outside the tree, where clang-tidy would not find .clang-tidy.
"$tidy" --quiet --config-file="$root/.clang-tidy" "$tu" -- \
  -std=c++20 -I"$root/include" "${flags[@]}"
echo "run_tidy: no findings"
