#!/usr/bin/env bash
# Benchmark (issue 18): `orchestra refresh` at 32 sessions with `@orchestra-status-cost on`
# against off, side by side in one run, alternating. Each session is of the claude kind
# (so it has a conversation id) running a loop that keeps printing, with a conversation
# log of 1,000 lines (~470 KB) under $CLAUDE_CONFIG_DIR; before every timed refresh each
# log gets one more assistant line, so every tick with cost on reads all 32 logs.
#
#   bench/cost.sh [RUNS]     (default 31; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Target: on/off <= 1.1 (medians).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-31}
bin=${ORCHESTRA_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-$PWD/target}/release/orchestra
fi
work=$(mktemp -d /tmp/orchestra-bench-cost.XXXXXX)
sock=$work/tmux.sock
cleanup() { tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

repo=$work/repo
git init -q -b main "$repo"
git -C "$repo" -c user.name=b -c user.email=b@localhost commit -q --allow-empty -m init
export ORCHESTRA_HOME=$work/home ORCHESTRA_TMUX_SOCKET=$sock CLAUDE_CONFIG_DIR=$work/claude
unset TMUX TMUX_PANE
tmux -S "$sock" -f /dev/null new-session -d -s bench
# Dispatch waits for a claude screen that never comes (about 16 s): all at once.
agent="sh -c 'while :; do echo working; sleep 0.2; done'"
seq 1 32 | xargs -P 32 -I{} sh -c 'cd "$1" && "$2" dispatch "w$3" --agent "$4" --kind claude >/dev/null' \
  _ "$repo" "$bin" {} "$agent"
(cd "$repo" && "$bin" list --json) | python3 -c '
import json, os, re, sys
work = sys.argv[1]
paths = []
for r in json.load(sys.stdin):
    d = os.path.join(work, "claude", "projects", re.sub(r"[^A-Za-z0-9]", "-", r["worktree"]))
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, r["conversation"] + ".jsonl")
    with open(p, "w") as f:
        for i in range(500):
            f.write(json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 300}}) + "\n")
            f.write(json.dumps({"type": "assistant", "timestamp": "2026-11-30T19:00:00Z",
                "message": {"id": f"msg_{i}", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": "y" * 300}],
                    "usage": {"input_tokens": 10, "output_tokens": 5,
                              "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000}}}) + "\n")
    paths.append(p)
open(os.path.join(work, "logs"), "w").write("\n".join(paths) + "\n")
print(f"{len(paths)} sessions, logs of {os.path.getsize(paths[0])} bytes")
' "$work"

n=0
append() {
  n=$((n + 1))
  while read -r p; do
    printf '{"type":"assistant","timestamp":"2026-11-30T19:00:00Z","message":{"id":"new_%s","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":5}}}\n' "$n" >> "$p"
  done < "$work/logs"
}
ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The first read of every log (the whole 470 KB) is not a tick's work: done before timing.
tmux -S "$sock" set -g @orchestra-status-cost on
"$bin" refresh >/dev/null
off=(); on=()
for _ in $(seq 1 "$runs"); do
  tmux -S "$sock" set -gu @orchestra-status-cost; append
  t0=$(ns); "$bin" refresh >/dev/null; t1=$(ns); off+=($(( (t1 - t0) / 1000 )))
  tmux -S "$sock" set -g @orchestra-status-cost on; append
  t0=$(ns); "$bin" refresh >/dev/null; t1=$(ns); on+=($(( (t1 - t0) / 1000 )))
done
awk -v a="$(median "${off[@]}")" -v b="$(median "${on[@]}")" \
  'BEGIN { printf "32 sessions: refresh cost off %.1f ms, on %.1f ms, ratio %.2f (target <= 1.1)\n", a/1000, b/1000, b/a }'
echo "status line with cost on: $("$bin" status-line)"
