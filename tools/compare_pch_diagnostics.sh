#!/usr/bin/env bash
# tools/compare_pch_diagnostics.sh <build dir> [test stem...]
#
# The compile-fail tests run the compiler with a precompiled header and with the kernels
# declared extern (-DARGUS_EXTERN_KERNELS; tests/compile_fail/CMakeLists.txt says why),
# because its diagnostics are the same text as a user's compile, without either, once the
# include stack's bottom line names the test's #include line again (with a PCH it names line
# 1 of the test, Clang, or of the PCH's wrapper, GCC), as check_compile_fail.cmake does. This
# checks that claim: for every test (or the named ones) it compiles the error variant both
# ways, with the flags and the PCH of <build dir> (a configured preset whose target
# argus_compile_fail_pch is built: build/gcc, build/clang), and diffs the outputs. Exit
# status 1 and the diffs when any differ.
set -euo pipefail
build=${1:?usage: tools/compare_pch_diagnostics.sh <build dir> [test stem...]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -d $build ]] || { echo "no build directory $build" >&2; exit 2; }
build=$(cd "$build" && pwd)  # the compilers print the PCH wrapper's path absolute
flags_file="$build/tests/compile_fail/compile_fail_flags.cmake"
cache="$build/CMakeCache.txt"
[[ -f $flags_file && -f $cache ]] || { echo "no configured compile-fail tests in $build" >&2; exit 2; }
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
# set(FLAGS [==[a;b;c]==]) -> an array
IFS=';' read -r -a flags <<<"$(sed -n 's/^set(FLAGS \[==\[\(.*\)\]==\])$/\1/p' "$flags_file")"
if [[ $# -eq 0 ]]; then
  set -- $(cd "$root/tests/compile_fail" && ls ./*.cpp | sed 's|^\./||; s|\.cpp$||')
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
different=0 compared=0
for stem in "$@"; do
  src="$root/tests/compile_fail/$stem.cpp"
  header=$(grep -m1 -o '^#include <argus/[^>]*>' "$src" | sed 's/^#include <\(.*\)>$/\1/' || true)
  [[ -n $header ]] || continue
  id=$(echo "$header" | tr -c 'A-Za-z0-9_\n' '_')
  if [[ $cxx == *clang* ]]; then
    pch="$build/tests/compile_fail/pch/$id.pch" use=(-include-pch "$pch")
  else
    pch="$build/tests/compile_fail/pch/$id.hpp.gch" use=(-include "${pch%.gch}")
  fi
  [[ -f $pch ]] || { echo "$stem: no PCH $pch (build the target argus_compile_fail_pch)" >&2; exit 2; }
  line=$(grep -n -m1 '^#include <argus/' "$src" | cut -d: -f1)
  "$cxx" "${flags[@]}" -DARGUS_EXPECT_COMPILE_ERROR "$src" >"$tmp/plain" 2>&1 || true
  "$cxx" "${flags[@]}" -DARGUS_EXTERN_KERNELS -Winvalid-pch "${use[@]}" -DARGUS_EXPECT_COMPILE_ERROR \
    "$src" 2>&1 |
    sed "s|${pch%.gch}:1|$src:$line|; s|from $src:1:|from $src:$line:|" >"$tmp/pch" || true
  compared=$((compared + 1))
  if ! diff -u "$tmp/plain" "$tmp/pch" >"$tmp/diff"; then
    different=$((different + 1))
    echo "== $stem: the diagnostics differ with the PCH and the extern kernels"
    cat "$tmp/diff"
  fi
done
echo "compared $compared tests: $different differ"
[[ $compared -gt 0 ]] || { echo "no test compared: is $root/tests/compile_fail there?" >&2; exit 2; }
[[ $different -eq 0 ]]
