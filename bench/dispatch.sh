#!/usr/bin/env bash
# Benchmark: `orchestra dispatch` against doing its core by hand (`git worktree add -b`
# plus `tmux new-window`), side by side in one run on a generated repo of 10,000 files.
# Runs alternate so machine noise hits both alike; medians are compared.
#
#   bench/dispatch.sh [RUNS]      (default 9; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Target: ratio <= 1.3.
#
# Second case: dispatch with a no-op `[worktree] setup` (`true`) in orchestra.toml against
# dispatch without one, alternating too: once until dispatch returns (the setup then runs
# in the window), once with --wait-setup (until the setup is recorded done and the agent
# started; a no-op setup's own time is about a millisecond). Target: ratio <= 1.1.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
files=${BENCH_FILES:-10000}

. bench/lib.sh
bench_setup orchestra-bench
# orchestra.toml is left untracked in the main worktree: dispatch reads it from there.
no_setup() { rm -f "$repo/orchestra.toml"; }
# Allowed as a person would (`orchestra allow`), before the clock starts.
noop_setup() { printf '[worktree]\nsetup = "true"\n' > "$repo/orchestra.toml"; (cd "$repo" && "$bin" allow >/dev/null); }
dispatch() { (cd "$repo" && "$bin" dispatch "$@" --agent 'sleep 600' --kind generic >/dev/null); }
by_hand=() ; ours=() ; plain=() ; with_setup=() ; plain2=() ; waited=() ; ret_ratio=() ; wait_ratio=()
for i in $(seq 1 "$runs"); do
  no_setup
  t0=$(ns)
  git -C "$repo" worktree add -q -b "manual/run-$i" "$work/manual/run-$i" HEAD
  tmux -S "$sock" new-window -d -t bench: -c "$work/manual/run-$i" -n "run-$i" 'sleep 600'
  t1=$(ns)
  dispatch "run-$i"
  t2=$(ns)
  by_hand+=($(( (t1 - t0) / 1000 )))
  ours+=($(( (t2 - t1) / 1000 )))

  # Each pair runs in turn A-B, then B-A: every session made slows the next dispatch a
  # little (more worktrees, windows, rows), and neither side should always come second.
  pair() { # NAME FLAGS...: one dispatch without a setup, one with, in this run's order
    local name=$1; shift
    local a b
    if (( i % 2 )); then
      no_setup; a=$(ns); dispatch "$name-plain-$i"; b=$(ns); plain_t=$(( (b - a) / 1000 ))
      noop_setup; a=$(ns); dispatch "$name-setup-$i" "$@"; b=$(ns); setup_t=$(( (b - a) / 1000 ))
    else
      noop_setup; a=$(ns); dispatch "$name-setup-$i" "$@"; b=$(ns); setup_t=$(( (b - a) / 1000 ))
      no_setup; a=$(ns); dispatch "$name-plain-$i"; b=$(ns); plain_t=$(( (b - a) / 1000 ))
    fi
  }
  pair ret; plain+=("$plain_t"); with_setup+=("$setup_t")
  ret_ratio+=("$(awk -v a="$setup_t" -v b="$plain_t" 'BEGIN { printf "%.4f", a / b }')")
  pair wait --wait-setup; plain2+=("$plain_t"); waited+=("$setup_t")
  wait_ratio+=("$(awk -v a="$setup_t" -v b="$plain_t" 'BEGIN { printf "%.4f", a / b }')")
done
no_setup
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m_hand=$(median "${by_hand[@]}")
m_ours=$(median "${ours[@]}")
printf 'dispatch into a repo of %d files, %d runs (median):\n' "$files" "$runs"
awk -v hand="$m_hand" -v ours="$m_ours" 'BEGIN {
  printf "  git worktree add + tmux new-window  %8.1f ms\n", hand / 1000
  printf "  orchestra dispatch                  %8.1f ms\n", ours / 1000
  printf "  ratio                               %8.2fx (target <= 1.30)\n", ours / hand
}'
m_plain=$(median "${plain[@]}")
m_setup=$(median "${with_setup[@]}")
m_plain2=$(median "${plain2[@]}")
m_waited=$(median "${waited[@]}")
# The ratio is the median of each run's own ratio: a pair runs back to back, so a busy
# machine slows both of its sides alike.
r_ret=$(median "${ret_ratio[@]}")
r_wait=$(median "${wait_ratio[@]}")
printf 'dispatch with a no-op [worktree] setup vs without, %d runs (median):\n' "$runs"
awk -v plain="$m_plain" -v setup="$m_setup" -v plain2="$m_plain2" -v waited="$m_waited" \
    -v r_ret="$r_ret" -v r_wait="$r_wait" 'BEGIN {
  printf "  dispatch, no setup                  %8.1f ms\n", plain / 1000
  printf "  dispatch, setup = \"true\"           %8.1f ms   ratio %5.2fx (target <= 1.10)\n", setup / 1000, r_ret
  printf "  dispatch, no setup                  %8.1f ms\n", plain2 / 1000
  printf "  dispatch --wait-setup (agent up)    %8.1f ms   ratio %5.2fx (target <= 1.10)\n", waited / 1000, r_wait
}'
