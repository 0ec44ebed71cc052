#!/usr/bin/env bash
# Benchmark: `orchestra refresh` against the per-pane way (one `tmux capture-pane` process
# per window plus a grep, as a shell script would do it) at 8, 32, 64 and 256 agent windows,
# side by side in one run; tmux calls counted; `orchestra event` latency.
#
#   bench/refresh.sh [RUNS]     (default 7; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Targets: at 32 windows >= 10x less wall time, at 256 too; a quiet refresh <= 2 tmux calls; a
# status-line on a fresh cache 0 calls.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
# ORCHESTRA_BENCH_BIN: a binary built elsewhere (a before/after comparison), else this tree's.
bin=${ORCHESTRA_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-$PWD/target}/release/orchestra
fi
work=$(mktemp -d /tmp/orchestra-bench-refresh.XXXXXX)
sock=$work/tmux.sock
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  tmux -S "$work/small/tmux.sock" kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

real_tmux=$(command -v tmux)
mkdir -p "$work/bin"
cat > "$work/bin/tmux" <<SH
#!/bin/sh
echo x >> "$work/calls"
exec "$real_tmux" "\$@"
SH
chmod +x "$work/bin/tmux"
counted() { : > "$work/calls"; PATH="$work/bin:$PATH" "$@" >/dev/null; wc -l < "$work/calls"; }

repo=$work/repo
git init -q -b main "$repo"
git -C "$repo" -c user.name=b -c user.email=b@localhost commit -q --allow-empty -m init
export ORCHESTRA_HOME=$work/home ORCHESTRA_TMUX_SOCKET=$sock
unset TMUX TMUX_PANE
tmux -S "$sock" -f /dev/null new-session -d -s bench
ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

per_pane_way() {
  for p in $(tmux -S "$sock" list-panes -a -F '#{pane_id} #{@orchestra_id}' | awk '$2 != "" {print $1}'); do
    tmux -S "$sock" capture-pane -p -t "$p" | grep -Eq 'esc to interrupt|Esc to cancel' || true
  done
}

# Agents that keep printing: every refresh finds every pane changed (the worst case for
# orchestra: every screen captured and classified). "orch quiet": the same windows with no
# output since the last tick (the common case), against the same per-pane script.
# (tmux resumes a stopped pane, so quiet is made with a flag file, not SIGSTOP.)
# A quiet agent looks for the flag once a second, not five times: a real idle agent sleeps
# on its input, and 64 pollers would tax the tmux server the refresh is measured against.
agent="sh -c 'while :; do if [ -e $work/quiet ]; then sleep 1; else echo working; sleep 0.2; fi; done'"
have=0
# "quiet/8": a quiet refresh at this size against the one at 8 windows (target <= 1.2x).
quiet8=
printf '%-8s %12s %12s %7s %12s %7s %8s %12s %12s\n' windows per-pane orchestra ratio "orch quiet" ratio quiet/8 quiet-calls status-calls
# One row: grow to N windows, then the busy and quiet refreshes against the per-pane way.
row() {
  local n=$1
  while [ "$have" -lt "$n" ]; do
    have=$((have + 1))
    (cd "$repo" && "$bin" dispatch "w$have" --agent "$agent" --kind generic >/dev/null)
  done
  "$bin" refresh >/dev/null
  theirs=(); ours=()
  for _ in $(seq 1 "$runs"); do
    t0=$(ns); per_pane_way; t1=$(ns); "$bin" refresh >/dev/null; t2=$(ns)
    theirs+=($(( (t1 - t0) / 1000 ))); ours+=($(( (t2 - t1) / 1000 )))
  done
  # Quiet: stop the output, let a second pass, refresh twice.
  touch "$work/quiet"
  sleep 1.2; "$bin" refresh >/dev/null; sleep 1.1; "$bin" refresh >/dev/null
  quiet=$(counted "$bin" refresh)
  "$bin" status-line >/dev/null
  fresh=$(counted "$bin" status-line)
  quiet_t=()
  for _ in $(seq 1 "$runs"); do t0=$(ns); "$bin" refresh >/dev/null; t1=$(ns); quiet_t+=($(( (t1 - t0) / 1000 ))); done
  rm -f "$work/quiet"
  sleep 1.2
  mt=$(median "${theirs[@]}"); mo=$(median "${ours[@]}"); mq=$(median "${quiet_t[@]}")
  quiet8=${quiet8:-$mq}
  awk -v n="$n" -v t="$mt" -v o="$mo" -v qt="$mq" -v q8="$quiet8" -v q="$quiet" -v s="$fresh" \
    'BEGIN { printf "%-8d %9.1f ms %9.1f ms %6.1fx %9.1f ms %6.1fx %7.2fx %12d %12d\n", n, t/1000, o/1000, t/o, qt/1000, t/qt, qt/q8, q, s }'
}
for n in 8 32 64; do row "$n"; done

# Quiet 64 against quiet 8 side by side: a second world of 8 windows (its own home, repo and
# tmux server), both quiet, refreshed alternately; the figure is the median of each pair's
# own ratio, so load that drifts during the run hits both sides alike (target <= 1.2x).
small=$work/small
mkdir -p "$small"
git init -q -b main "$small/repo"
git -C "$small/repo" -c user.name=b -c user.email=b@localhost commit -q --allow-empty -m init
in_small() { ORCHESTRA_HOME=$small/home ORCHESTRA_TMUX_SOCKET=$small/tmux.sock "$@"; }
tmux -S "$small/tmux.sock" -f /dev/null new-session -d -s bench
for i in $(seq 1 8); do
  (cd "$small/repo" && in_small "$bin" dispatch "s$i" --agent "$agent" --kind generic >/dev/null)
done
touch "$work/quiet"
sleep 1.2
for _ in 1 2; do "$bin" refresh >/dev/null; in_small "$bin" refresh >/dev/null; sleep 1.1; done
pairs=()
for _ in $(seq 1 $((runs * 3))); do
  t0=$(ns); in_small "$bin" refresh >/dev/null; t1=$(ns); "$bin" refresh >/dev/null; t2=$(ns)
  pairs+=($(( (t2 - t1) * 1000 / (t1 - t0) )))
done
rm -f "$work/quiet"
tmux -S "$small/tmux.sock" kill-server 2>/dev/null || true
awk -v r="$(median "${pairs[@]}")" -v n=$((runs * 3)) \
  'BEGIN { printf "quiet refresh, 64 windows against 8, alternating (%d pairs): %.2fx (target <= 1.2x)\n", n, r/1000 }'

# 256 windows: past what one tmux command can hold (a refresh's batch is cut under tmux's
# command limit into several calls); target still >= 10x the per-pane way.
row 256

# The hook endpoint: one `orchestra event` (database write + badge), median of runs.
id=$("$bin" list --repo "$repo" --json | awk -F'"' '/"id"/ {print $4; exit}')
lat=()
for i in $(seq 1 $((runs * 3))); do
  state=busy; [ $((i % 2)) -eq 0 ] && state=idle
  t0=$(ns); "$bin" event --session "$id" "$state"; t1=$(ns)
  lat+=($(( (t1 - t0) / 1000 )))
done
awk -v m="$(median "${lat[@]}")" 'BEGIN { printf "orchestra event (hook endpoint): %.1f ms median\n", m/1000 }'
