#!/usr/bin/env bash
# Benchmark (issue 29): `orchestra dispatch --sandbox` against dispatch without one, side
# by side in one run, alternating (A-B, then B-A), on a generated repo. Two figures each:
# until dispatch returns, and until the agent runs (a generic agent that touches a file in
# its worktree first: in the box, after bwrap made it). The ratio is the median of each
# run's own ratio. Then a refresh tick (`orchestra refresh`, what the status line runs)
# over 8 sandboxed sessions against 8 without, each set on a tmux server and home of its
# own, ticked alternately: a box adds only its drop folder to read ("a refresh tick
# unchanged").
#
#   bench/sandbox.sh [RUNS]   (default 9; BENCH_FILES (2000); ORCHESTRA_BENCH_BIN=<binary>
#                              to skip the build)
# Target: ratio <= 1.2 (dispatch); the tick's about 1.0.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
files=${BENCH_FILES:-2000}
command -v bwrap >/dev/null || { echo "bench/sandbox.sh: bwrap (bubblewrap) is not installed" >&2; exit 2; }
. bench/lib.sh
bench_setup orchestra-bench-sandbox
# The person's home the box hides, so the bench never reads the real one.
export HOME=$work/person
mkdir -p "$HOME"
agent="sh -c 'touch started; exec sleep 600'"
one() { # LABEL FLAGS...: sets ret_t and up_t (microseconds)
  local label=$1; shift
  local a b c
  a=$(ns)
  (cd "$repo" && "$bin" dispatch "$label" --agent "$agent" --kind generic "$@" >/dev/null)
  b=$(ns)
  while [ ! -e "$work/repo.worktrees/$label/started" ]; do sleep 0.002; done
  c=$(ns)
  ret_t=$(( (b - a) / 1000 )); up_t=$(( (c - a) / 1000 ))
}
plain=() boxed=() plain_up=() boxed_up=() ratio=() up_ratio=()
for i in $(seq 1 "$runs"); do
  if (( i % 2 )); then
    one "p$i"; p=$ret_t; pu=$up_t
    one "s$i" --sandbox; s=$ret_t; su=$up_t
  else
    one "s$i" --sandbox; s=$ret_t; su=$up_t
    one "p$i"; p=$ret_t; pu=$up_t
  fi
  plain+=("$p") boxed+=("$s") plain_up+=("$pu") boxed_up+=("$su")
  ratio+=("$(awk -v a="$s" -v b="$p" 'BEGIN { printf "%.4f", a / b }')")
  up_ratio+=("$(awk -v a="$su" -v b="$pu" 'BEGIN { printf "%.4f", a / b }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf 'dispatch --sandbox vs without, repo of %d files, %d runs (median):\n' "$files" "$runs"
awk -v p="$(median "${plain[@]}")" -v s="$(median "${boxed[@]}")" -v r="$(median "${ratio[@]}")" \
    -v pu="$(median "${plain_up[@]}")" -v su="$(median "${boxed_up[@]}")" -v ru="$(median "${up_ratio[@]}")" 'BEGIN {
  printf "  until dispatch returns:  plain %8.1f ms  sandboxed %8.1f ms  ratio %5.2fx (target <= 1.20)\n", p / 1000, s / 1000, r
  printf "  until the agent runs:    plain %8.1f ms  sandboxed %8.1f ms  ratio %5.2fx (target <= 1.20)\n", pu / 1000, su / 1000, ru
}'

# A refresh tick: 8 sessions each way, each set on its own server and home.
ticks=${BENCH_TICKS:-15}
tick_set() { # NAME FLAGS...: a server and home with 8 sessions dispatched, all running
  local name=$1; shift
  local s=$work/tmux-$name.sock
  tmux -S "$s" -f /dev/null new-session -d -s bench
  for n in 1 2 3 4 5 6 7 8; do
    (cd "$repo" && ORCHESTRA_HOME=$work/home-$name ORCHESTRA_TMUX_SOCKET=$s \
      "$bin" dispatch "t$name$n" --agent "$agent" --kind generic "$@" >/dev/null)
  done
  for n in 1 2 3 4 5 6 7 8; do
    while [ ! -e "$work/repo.worktrees/t$name$n/started" ]; do sleep 0.01; done
  done
}
tick() { # NAME: sets tick_t (microseconds)
  local a b
  a=$(ns)
  ORCHESTRA_HOME=$work/home-$1 ORCHESTRA_TMUX_SOCKET=$work/tmux-$1.sock "$bin" refresh >/dev/null
  b=$(ns)
  tick_t=$(( (b - a) / 1000 ))
}
trap 'for t in "$work"/tmux-*.sock; do tmux -S "$t" kill-server 2>/dev/null || true; done; cleanup' EXIT
tick_set p
tick_set s --sandbox
tick p; tick s # the first of each reads everything afresh
tp=() ts=() tick_ratio=()
for i in $(seq 1 "$ticks"); do
  if (( i % 2 )); then tick p; p=$tick_t; tick s; s=$tick_t
  else tick s; s=$tick_t; tick p; p=$tick_t; fi
  tp+=("$p") ts+=("$s")
  tick_ratio+=("$(awk -v a="$s" -v b="$p" 'BEGIN { printf "%.4f", a / b }')")
done
tmux -S "$work/tmux-p.sock" kill-server 2>/dev/null || true
tmux -S "$work/tmux-s.sock" kill-server 2>/dev/null || true
awk -v p="$(median "${tp[@]}")" -v s="$(median "${ts[@]}")" -v r="$(median "${tick_ratio[@]}")" -v n="$ticks" 'BEGIN {
  printf "  a refresh tick, 8 sessions (%d ticks): plain %6.1f ms  sandboxed %6.1f ms  ratio %5.2fx (unchanged: about 1.00)\n", n, p / 1000, s / 1000, r
}'
