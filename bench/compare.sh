#!/usr/bin/env bash
# Benchmark: `orchestra compare` of a group of 8 candidates on a generated repo of 10,000
# files, against what a person would run by hand for the same table: `git diff --stat`
# per candidate plus one `git merge-tree` per pair (28). Each candidate commits changes to
# a few files, and some pairs touch the same file, so some merges do real work. Runs
# alternate so machine noise hits both alike; medians are compared.
#
#   bench/compare.sh [RUNS]      (default 9; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Target: ratio <= 1.0 (compare at most what git by hand costs).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
files=${BENCH_FILES:-10000}
n=8

. bench/lib.sh
bench_setup orchestra-bench-compare
(cd "$repo" && "$bin" dispatch grp --count "$n" --agent 'sleep 600' --kind generic >/dev/null)
wt=$work/repo.worktrees
for i in $(seq 1 "$n"); do
  d=$wt/grp-$i
  # Three files of its own, and one shared with its neighbour (a conflict for odd pairs).
  for f in $((i * 10)) $((i * 10 + 1)) $((i * 10 + 2)); do
    p=$(printf 'src/mod%03d/file%05d.rs' $((f / 100)) "$f")
    printf '// candidate %d\n' "$i" >> "$d/$p"
  done
  shared=$(printf 'src/mod000/file%05d.rs' $(( (i + 1) / 2 )))
  printf '// candidate %d was here\n' "$i" >> "$d/$shared"
  git -C "$d" -c user.name=bench -c user.email=bench@localhost commit -qam "candidate $i"
done

by_hand() {
  for i in $(seq 1 "$n"); do
    git -C "$repo" diff --stat "main...session/grp-$i" >/dev/null
  done
  for i in $(seq 1 "$n"); do
    for j in $(seq $((i + 1)) "$n"); do
      git -C "$repo" merge-tree --write-tree "session/grp-$i" "session/grp-$j" >/dev/null || true
    done
  done
}
ours() { (cd "$repo" && "$bin" compare grp --json >/dev/null); }
hand=() ; mine=() ; ratio=()
for i in $(seq 1 "$runs"); do
  if (( i % 2 )); then
    a=$(ns); by_hand; b=$(ns); ours; c=$(ns)
    h=$(( (b - a) / 1000 )); o=$(( (c - b) / 1000 ))
  else
    a=$(ns); ours; b=$(ns); by_hand; c=$(ns)
    o=$(( (b - a) / 1000 )); h=$(( (c - b) / 1000 ))
  fi
  hand+=("$h"); mine+=("$o")
  ratio+=("$(awk -v a="$o" -v b="$h" 'BEGIN { printf "%.4f", a / b }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m_hand=$(median "${hand[@]}")
m_ours=$(median "${mine[@]}")
r=$(median "${ratio[@]}")
printf 'compare of %d candidates in a repo of %d files, %d runs (median):\n' "$n" "$files" "$runs"
awk -v hand="$m_hand" -v ours="$m_ours" -v r="$r" 'BEGIN {
  printf "  git diff --stat x8 + git merge-tree x28  %8.1f ms\n", hand / 1000
  printf "  orchestra compare --json                 %8.1f ms\n", ours / 1000
  printf "  ratio                                    %8.2fx (target <= 1.00)\n", r
}'
