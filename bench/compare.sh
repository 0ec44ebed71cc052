#!/usr/bin/env bash
# Benchmark: `orchestra compare` of a group of 8 candidates on a generated repo of 10,000
# files, against what a person would run by hand for the same table. Each candidate commits
# changes to a few files, and some pairs touch the same file, so some merges do real work.
# Runs alternate so machine noise hits both alike; medians are compared.
#
# Two baselines are printed. compare counts a candidate's uncommitted work too, which takes
# a look at every file of its worktree; `git diff --stat main...branch` compares two
# commits and looks at no worktree at all, so it answers a smaller question. The by-hand
# equivalent of what compare shows is `git -C <worktree> diff --stat <merge-base>` (the
# worktree against the base: every file's stat) per candidate, plus one `git merge-tree`
# per pair (28): the target ratio is against that one ("worktree"). The commits-only one
# ("commits") is kept to show what the uncommitted work costs. compare also includes
# untracked files, which `git diff` leaves out, so the worktree baseline still does less.
#
#   bench/compare.sh [RUNS]      (default 9; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Target: worktree ratio <= 1.0 (compare at most what git by hand costs).
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

pairs() {
  for i in $(seq 1 "$n"); do
    for j in $(seq $((i + 1)) "$n"); do
      git -C "$repo" merge-tree --write-tree "session/grp-$i" "session/grp-$j" >/dev/null || true
    done
  done
}
# What compare shows: each candidate's worktree (uncommitted work included) against its base.
by_hand() {
  for i in $(seq 1 "$n"); do
    git -C "$wt/grp-$i" diff --stat "$(git -C "$repo" merge-base main "session/grp-$i")" >/dev/null
  done
  pairs
}
# Commits only: no worktree looked at.
by_hand_commits() {
  for i in $(seq 1 "$n"); do
    git -C "$repo" diff --stat "main...session/grp-$i" >/dev/null
  done
  pairs
}
ours() { (cd "$repo" && "$bin" compare grp --json >/dev/null); }
hand=() ; commits=() ; mine=() ; ratio=() ; ratio_c=()
for i in $(seq 1 "$runs"); do
  if (( i % 2 )); then
    a=$(ns); by_hand; b=$(ns); by_hand_commits; c=$(ns); ours; d=$(ns)
    h=$(( (b - a) / 1000 )); k=$(( (c - b) / 1000 )); o=$(( (d - c) / 1000 ))
  else
    a=$(ns); ours; b=$(ns); by_hand_commits; c=$(ns); by_hand; d=$(ns)
    o=$(( (b - a) / 1000 )); k=$(( (c - b) / 1000 )); h=$(( (d - c) / 1000 ))
  fi
  hand+=("$h"); commits+=("$k"); mine+=("$o")
  ratio+=("$(awk -v a="$o" -v b="$h" 'BEGIN { printf "%.4f", a / b }')")
  ratio_c+=("$(awk -v a="$o" -v b="$k" 'BEGIN { printf "%.4f", a / b }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m_hand=$(median "${hand[@]}")
m_commits=$(median "${commits[@]}")
m_ours=$(median "${mine[@]}")
r=$(median "${ratio[@]}")
rc=$(median "${ratio_c[@]}")
printf 'compare of %d candidates in a repo of %d files, %d runs (median):\n' "$n" "$files" "$runs"
awk -v hand="$m_hand" -v commits="$m_commits" -v ours="$m_ours" -v r="$r" -v rc="$rc" 'BEGIN {
  printf "  worktree: git -C wt diff --stat BASE x8 + merge-tree x28  %8.1f ms\n", hand / 1000
  printf "  commits:  git diff --stat main...B x8 + merge-tree x28    %8.1f ms\n", commits / 1000
  printf "  orchestra compare --json                                  %8.1f ms\n", ours / 1000
  printf "  ratio against worktree                                    %8.2fx (target <= 1.00)\n", r
  printf "  ratio against commits                                     %8.2fx\n", rc
}'
