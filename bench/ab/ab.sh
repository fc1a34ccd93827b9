#!/usr/bin/env bash
# bench/ab/ab.sh -- compare the kernels of two revisions in one process (docs/performance.md,
# "Noise"): each revision's include/ is compiled into its own inline namespace and the
# driver (main.cpp) calls the two alternately, reporting the median ratio of their times.
#
#   bench/ab/ab.sh [options] REV_A REV_B [attention N ROUNDS CAUSAL THREADS [D] |
#                                          gemm M ROUNDS [N K] |
#                                          packed M ROUNDS [N K] |
#                                          split M ROUNDS D_MODEL D_K |
#                                          backward N ROUNDS CAUSAL THREADS [D] |
#                                          mha N ROUNDS CAUSAL THREADS |
#                                          decode KEYS ROUNDS HEADS KV_HEADS THREADS [D]] [--peak]
#                              [+ WORKLOAD [--peak] ...]
#
# REV_A, REV_B: anything `git rev-parse` takes (HEAD~1, a branch, a commit), or WORKTREE for
# the working tree's include/ as it is now. D: the head width (d_k = d_v) of the attention and
# backward workloads, 64 if not given. N, K: gemm's product (M x K) . (K x N), both 512 if not
# given; packed: the same product on B packed once (pack_gemm_b, as argus::prepack packs a
# weight; the packing is not timed). decode: one query of HEADS heads over KV_HEADS K/V heads of
# KEYS keys of width D (128 if not given), each call over the next of as many layers' K/V
# caches as make 512 MiB, so that K and V come from memory as in a model's forward pass
# (ARGUS_AB_COPIES=N: N layers; 1 repeats one call's K and V, in L2 or L3 where they fit). The workload defaults to `attention 1024 40 0 1`; several
# workloads joined by `+` run one after the other on one build of the program. The operands
# lie as argus's tensors do, on a cache line; ARGUS_AB_MISALIGN=BYTES in the environment moves
# them that many bytes (a multiple of 4 below 64) off it (main.cpp). ARGUS_AB_COPIES=N gives the
# gemm, packed and split workloads N copies of B, each call reading the next (packed: each copy
# packed once): a B that one copy would keep partly in L3 then comes from memory, as a model's
# weights do (main.cpp). ARGUS_AB_LDB=N lays the gemm and packed workloads' B out with rows N
# elements apart (N >= n; n if unset). ARGUS_AB_WINDOW=W gives the causal mask of the attention,
# backward and mha workloads a sliding window: each query sees its last W keys (the flops and
# shares of the peak count the pairs inside it). ARGUS_AB_HEADS=split lays the attention and
# backward workloads' Q, K, V and O out as split-heads views of (1, n, h·d) matrices, rows h·d
# apart, as bench/'s BM_core does (each head's rows one after the other if unset).
# --peak after the workload: every round also measures the FMA peak of its thread count, and
# each side's median share of the peak of its own round is reported (WORKTREE WORKTREE with
# --peak: one revision's % of peak, measured so that the host's drift moves it least).
# Options:
#   --march=ISA   the -march the two sides and the driver are compiled for (default native;
#                 x86-64-v3 for the AVX2 kernels, x86-64 for the portable ones)
#   --cxx=CXX     the compiler (default g++-12; clang++-14 works too)
#   --opt=FLAG    the optimisation flag (default -O3, as the benchmarks; ctest tools.ab, which
#                 checks the tool and not the kernels' speed, takes -O0: the least compiling)
#   --keep        keep the temporary directory, and print it
#   --build-only=PATH   build the program, copy it to PATH and stop: no workload is run (the
#                 program takes a workload as its arguments: PATH attention 1024 40 0 1 --peak;
#                 bench/ab/targets.sh builds its programs so, then runs them)
#
# Only the code inside argus::kernel's ISA namespace (ARGUS_KERNEL_ISA_NAMESPACE: the
# kernels) is kept apart. What lies outside it, such as the thread pool (kernel/parallel.hpp),
# has one definition for both sides (the linker keeps one), so a change there is measured on
# both sides or on neither; the script lists the headers that differ between the revisions.
set -euo pipefail

march=native cxx=g++-12 opt=-O3 keep=0 build_only=
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --march=*) march=${1#--march=} ;;
    --cxx=*) cxx=${1#--cxx=} ;;
    --opt=*) opt=${1#--opt=} ;;
    --keep) keep=1 ;;
    --build-only=*) build_only=${1#--build-only=} ;;
    *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ $# -lt 2 ]]; then
  sed -n '2,49p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
rev_a=$1 rev_b=$2
shift 2
workload=("$@")
[[ ${#workload[@]} -gt 0 ]] || workload=(attention 1024 40 0 1)

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)  # the checkout (git is needed only for revisions)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/argus_ab.XXXXXX")
if [[ $keep == 1 ]]; then
  echo "ab.sh: working in $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi

# The include/ tree of revision $1 into $tmp/$2, its kernels renamed into namespace $3.
extract() {
  local rev=$1 dir=$tmp/$2 ns=$3
  mkdir -p "$dir"
  if [[ $rev == WORKTREE ]]; then
    cp -r "$root/include" "$dir/"
  else
    local commit
    commit=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") ||
      { echo "ab.sh: $rev is not a revision of $root" >&2; exit 2; }
    git -C "$root" archive "$commit" include | tar -x -C "$dir"
  fi
  local isa=$dir/include/argus/kernel/isa.hpp
  sed -i "s/^#define ARGUS_KERNEL_ISA_NAMESPACE ARGUS_KERNEL_TARGET_ISA\$/#define ARGUS_KERNEL_ISA_NAMESPACE $ns/" "$isa"
  grep -q "^#define ARGUS_KERNEL_ISA_NAMESPACE $ns\$" "$isa" ||
    { echo "ab.sh: $rev: no '#define ARGUS_KERNEL_ISA_NAMESPACE ARGUS_KERNEL_TARGET_ISA' in isa.hpp to rename" >&2; exit 1; }
}
extract "$rev_a" a argus_ab_a
extract "$rev_b" b argus_ab_b

changed=$(diff -rq -I "^#define ARGUS_KERNEL_ISA_NAMESPACE " "$tmp/a/include" "$tmp/b/include" |
  sed -E -e "s|^Files $tmp/a/include/(.*) and .* differ\$|\\1|" -e "s|$tmp/([ab])/include/|\\1: |g" -e 's/^/  /' || true)
if [[ -n $changed ]]; then
  echo "ab.sh: headers that differ (only their code inside the ISA namespace differs between the sides):"
  echo "$changed"
else
  echo "ab.sh: the two sides' headers are identical (an A/A run)"
fi

flags=(-std=c++20 "$opt" -DNDEBUG "-march=$march" -pthread)
echo "ab.sh: A = $rev_a, B = $rev_b; $cxx ${flags[*]}"
"$cxx" "${flags[@]}" -I"$tmp/a/include" -DARGUS_AB_SIDE=a -c "$here/variant.cpp" -o "$tmp/a.o" &
"$cxx" "${flags[@]}" -I"$tmp/b/include" -DARGUS_AB_SIDE=b -c "$here/variant.cpp" -o "$tmp/b.o" &
"$cxx" "${flags[@]}" -I"$tmp/a/include" -c "$here/main.cpp" -o "$tmp/main.o"
wait %1
wait %2
"$cxx" "${flags[@]}" "$tmp/main.o" "$tmp/a.o" "$tmp/b.o" -o "$tmp/ab"
if [[ -n $build_only ]]; then
  cp "$tmp/ab" "$build_only"
  echo "ab.sh: built $build_only"
  exit 0
fi
# Each workload of the `+`-separated list in turn.
one=()
for arg in "${workload[@]}" +; do
  if [[ $arg == + ]]; then
    if [[ ${#one[@]} -gt 0 ]]; then "$tmp/ab" "${one[@]}"; fi
    one=()
  else
    one+=("$arg")
  fi
done
