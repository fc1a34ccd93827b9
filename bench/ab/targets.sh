#!/usr/bin/env bash
# bench/ab/targets.sh -- issue 10's shares of the FMA peak on this machine, in one command: the
# loop nest (the core: h 8, d 64) and the MHA forward's kernels (d_model 512, h 8), at n 1024 and
# 4096, on 1 and 2 threads, for the instruction set -march=native compiles and for AVX2
# (-march=x86-64-v3) where native is more than that; then a table against the targets (the
# core 80 % of the peak, the MHA 78 %). Each row is an A/A run of bench/ab/ab.sh (the working
# tree against itself, --peak): each side's median share of the peak of its own round, so that
# the host's drift moves the figure least; two sides that disagree by more than a point or two
# show a drifting host. Needs a C++20 compiler and nothing else (no git, CMake or library), so
# it runs as it is on a machine lent for an hour or a cloud instance (docs/performance.md).
#
#   bench/ab/targets.sh [--cxx=CXX] [--quick] [--native-only] [--cpus1=LIST] [--cpus2=LIST]
#                       [--opt=FLAG]
#   bench/ab/targets.sh --summarize FILE     the table of a saved run's output (stdout)
#
#   --cxx=CXX       the compiler (default g++-12 where there is one, else g++)
#   --quick         4 rounds a row, n 1024 only: to check that everything builds and runs
#   --native-only   only -march=native (the AVX2 build is skipped anyway where native is AVX2)
#   --cpus1=LIST, --cpus2=LIST   pin the 1- and 2-thread rows with taskset -c LIST (e.g. 2 and
#                   2,3 on a machine whose first cores serve interrupts); default: not pinned
#   --opt=FLAG      passed to ab.sh (default -O3, as the benchmarks)
# The rows' full output goes to stdout as they run; the table comes last.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cxx="" quick=0 native_only=0 cpus1="" cpus2="" opt=-O3 summarize=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --cxx=*) cxx=${1#--cxx=} ;;
    --quick) quick=1 ;;
    --native-only) native_only=1 ;;
    --cpus1=*) cpus1=${1#--cpus1=} ;;
    --cpus2=*) cpus2=${1#--cpus2=} ;;
    --opt=*) opt=${1#--opt=} ;;
    --summarize) summarize=${2:?--summarize takes a file}; shift ;;
    *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done

# The table: one line per row of ab's output, from its header ("flash_attention h 8 d 64 n 1024,
# 2 thread(s), ..." or "mha forward (kernels) ..."), its peak line ("FMA peak (avx2, ...") and
# the two sides' "% of its round's peak" lines.
summary() {
  awk '
    function flush() {
      if (what == "" || a == "") return
      target = what == "core" ? 80 : 78
      if (a + 0 >= target && b + 0 >= target) verdict = "met"
      else if (a + 0 >= target || b + 0 >= target) verdict = "at the line"
      else verdict = sprintf("not met (%.1f short)", target - (a + 0 > b + 0 ? a : b))
      printf "| %s | %s | %s | %s | %s %% %s | %s %% | %s | %d %% | %s |\n", isa, what, n, threads, a, aq, b, best, target, verdict
      what = ""; a = ""; b = ""
    }
    /^flash_attention h / { flush(); what = "core" }
    /^mha forward \(kernels\)/ { flush(); what = "MHA kernels" }
    /^(flash_attention h |mha forward \(kernels\))/ {
      match($0, / n [0-9]+/); n = substr($0, RSTART + 3, RLENGTH - 3)
      match($0, /, [0-9]+ thread/); threads = substr($0, RSTART + 2, RLENGTH - 9)
    }
    /FMA peak \(/ { match($0, /\([a-z0-9]+,/); isa = substr($0, RSTART + 1, RLENGTH - 2) }
    /^  A: % of its round.s peak: median / {
      a = $8; aq = "[" $10 " " substr($11, 1, length($11) - 1); best = $NF
    }
    /^  B: % of its round.s peak: median / { b = $8; if ($NF + 0 > best + 0) best = $NF; flush() }
    BEGIN {
      print "| ISA | workload | n | threads | A: median [quartiles] | B: median | best round | target | |"
      print "|---|---|---:|---:|---|---|---:|---:|---|"
    }
  ' "$1"
}

if [[ -n $summarize ]]; then
  summary "$summarize"
  exit 0
fi

if [[ -z $cxx ]]; then
  cxx=$(command -v g++-12 || command -v g++ || true)
  [[ -n $cxx ]] || { echo "targets.sh: no g++ found; name a compiler with --cxx=" >&2; exit 2; }
fi
pin() {  # $1: the cpu list, or empty
  if [[ -n $1 ]] && command -v taskset > /dev/null; then echo "taskset -c $1"; fi
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/argus_targets.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Is native more than AVX2? Then x86-64-v3 is a second build (the AVX2 kernels of this CPU).
# (The macros are read whole first: grep -q in a pipe could end the compiler's output with
# SIGPIPE, which pipefail would take for a machine without AVX-512.)
marches=(native)
macros=$("$cxx" -march=native -dM -E -x c++ /dev/null 2> /dev/null || true)
if [[ $native_only == 0 && $macros == *__AVX512F__* ]]; then
  marches+=(x86-64-v3)
fi
echo "targets.sh: $("$cxx" --version | head -1); building for ${marches[*]} ($opt)"
pids=()
for march in "${marches[@]}"; do
  "$here/ab.sh" "--cxx=$cxx" "--march=$march" "--opt=$opt" "--build-only=$tmp/ab_$march" \
    WORKTREE WORKTREE > "$tmp/build_$march.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { cat "$tmp/build_${marches[$i]}.log" >&2; exit 1; }
done

if [[ $quick == 1 ]]; then
  rows=("attention 1024 4 0 1" "attention 1024 4 0 2" "mha 1024 4 0 1" "mha 1024 4 0 2")
else
  rows=("attention 1024 30 0 1" "attention 4096 8 0 1" "attention 1024 30 0 2"
    "attention 4096 6 0 2" "mha 1024 20 0 1" "mha 4096 5 0 1" "mha 1024 20 0 2" "mha 4096 4 0 2")
fi
for march in "${marches[@]}"; do
  for row in "${rows[@]}"; do
    read -r -a w <<< "$row"
    cpus=$cpus1
    [[ ${w[4]} == 1 ]] || cpus=$cpus2
    # shellcheck disable=SC2046  # pin's words are the command prefix
    $(pin "$cpus") "$tmp/ab_$march" "${w[@]}" --peak | tee -a "$tmp/runs.txt"
  done
done
echo
summary "$tmp/runs.txt"
