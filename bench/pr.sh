#!/usr/bin/env bash
# Benchmark: the status line with the background pull-request read on against off, at 32
# sessions each with a pull request on our GitHub stand-in (tests/fake-api/github.py), in
# one run, alternating so machine noise hits both alike; medians compared. Then the
# rate-limit points a quiet poll costs (every request conditional: all 304s).
#
#   bench/pr.sh [RUNS]     (default 15; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Targets: status line on/off <= 1.05; a quiet poll costs 0 points.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-15}
sessions=${BENCH_SESSIONS:-32}
bin=${ORCHESTRA_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-$PWD/target}/release/orchestra
fi
work=$(mktemp -d /tmp/orchestra-bench-pr.XXXXXX)
sock=$work/tmux.sock
api_pid=
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  [ -n "$api_pid" ] && kill "$api_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

bare=$work/remote/me/app.git
mkdir -p "$bare"
git init -q --bare -b main "$bare"
cat > "$work/world.json" <<JSON
{"token": "ghp_bench_token", "repos": {"me/app": {"default_branch": "main", "git_dir": "$bare", "pulls": []}}}
JSON
python3 tests/fake-api/github.py --port 0 --port-file "$work/port" --log "$work/requests.jsonl" \
  --world "$work/world.json" &
api_pid=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
export ORCHESTRA_GITHUB_API="http://127.0.0.1:$(cat "$work/port")" GH_TOKEN=ghp_bench_token
export ORCHESTRA_HOME=$work/home ORCHESTRA_TMUX_SOCKET=$sock
unset TMUX TMUX_PANE GITHUB_TOKEN

repo=$work/repo
git init -q -b main "$repo"
git -C "$repo" -c user.name=b -c user.email=b@localhost commit -q --allow-empty -m init
git -C "$repo" remote add origin "$bare"
git -C "$repo" push -q origin main
tmux -S "$sock" -f /dev/null new-session -d -s bench
for i in $(seq 1 "$sessions"); do
  (cd "$repo" && "$bin" dispatch "s$i" --agent 'sleep 600' --kind generic >/dev/null)
  wt=$(cd "$repo" && "$bin" list --json | python3 -c "import json,sys; print([s['worktree'] for s in json.load(sys.stdin) if s['label']=='s$i'][0])")
  echo "$i" > "$wt/f$i.txt"
  git -C "$wt" add -A
  git -C "$wt" -c user.name=b -c user.email=b@localhost commit -q -m "work $i"
  (cd "$repo" && "$bin" pr "s$i" --yes >/dev/null)
done
# A first read (everything new), then the measured ones find it all read.
"$bin" pr --background --json >/dev/null

ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
line() { (cd "$repo" && "$bin" status-line >/dev/null); }
mode() {
  tmux -S "$sock" set -g @orchestra-pr-interval "$1"
  # The refresh reads the option into the status line's cache, as the next tick would.
  "$bin" refresh >/dev/null
}
off=(); on=(); due=()
for _ in $(seq 1 "$runs"); do
  mode 0; t0=$(ns); line; t1=$(ns); off+=($(( (t1 - t0) / 1000 )))
  # On, every 60 s as by default: a tick between reads reads the last read's file only.
  mode 60; t0=$(ns); line; t1=$(ns); on+=($(( (t1 - t0) / 1000 )))
  # On with a read due: the tick also starts `pr --background` detached (once a minute).
  rm -f "$ORCHESTRA_HOME/cache/pr-status.json"; t0=$(ns); line; t1=$(ns); due+=($(( (t1 - t0) / 1000 )))
  sleep 0.5
done
m_due=$(median "${due[@]}")
m_off=$(median "${off[@]}"); m_on=$(median "${on[@]}")
# Let the last detached read finish before counting.
for _ in $(seq 1 50); do [ -e "$ORCHESTRA_HOME/cache/pr.lock" ] && flock -n "$ORCHESTRA_HOME/cache/pr.lock" true && break; sleep 0.1; done
before=$(python3 -c "import json; print(sum(json.loads(l).get('cost', 0) for l in open('$work/requests.jsonl')))")
lines=$(wc -l < "$work/requests.jsonl")
quiet=$("$bin" pr --background --json)
after=$(python3 -c "import json; print(sum(json.loads(l).get('cost', 0) for l in open('$work/requests.jsonl')))")
printf 'sessions %s, runs %s\n' "$sessions" "$runs"
printf 'status line, PR read off: %s us (median)\n' "$m_off"
printf 'status line, PR read on:  %s us (median)\n' "$m_on"
printf 'status line, PR read on, a read due (it spawns one): %s us (median)\n' "$m_due"
awk -v a="$m_on" -v b="$m_off" 'BEGIN { printf "ratio on/off: %.3f (target <= 1.05)\n", a / b }'
awk -v a="$m_due" -v b="$m_off" -v i=60 'BEGIN { printf "the tick that spawns a read, against off: %.3f (one tick in %d s)\n", a / b, i }'
printf 'quiet poll: %s\n' "$(echo "$quiet" | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["requests"], "request(s),", p["not_modified"], "answered 304")')"
tail -n +$((lines + 1)) "$work/requests.jsonl" | python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("cost"): print("  charged:", e["method"], e["path"], e.get("status"))' 
printf 'quiet poll rate-limit cost: %s point(s) (target 0)\n' "$((after - before))"
