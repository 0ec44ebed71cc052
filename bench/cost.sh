#!/usr/bin/env bash
# Benchmark (issue 18): `orchestra refresh` at 32 sessions with `@orchestra-status-cost on`
# against off, side by side in one run, alternating. Each session is of KIND (so orchestra
# reads its usage) running a loop that keeps printing, with a usage log of 1,000 lines
# (~470 KB) where that kind's CLI writes it: claude's conversation log under
# $CLAUDE_CONFIG_DIR, codex's rollout under $CODEX_HOME/sessions (its thread said by a
# codex-notify event), gemini's chat record in the session's Gemini home (its session said
# by a SessionStart hook event). Before every timed refresh each log gets one more line of
# usage, so every tick with cost on reads all 32 logs.
#
#   bench/cost.sh [RUNS] [KIND]   (default 31 claude; KIND: claude, codex or gemini;
#                                  ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Target: on/off <= 1.1 (medians).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-31}
kind=${2:-claude}
case $kind in claude|codex|gemini) ;; *) echo "bench/cost.sh: KIND is claude, codex or gemini, not $kind" >&2; exit 2 ;; esac
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
export ORCHESTRA_HOME=$work/home ORCHESTRA_TMUX_SOCKET=$sock CLAUDE_CONFIG_DIR=$work/claude \
  CODEX_HOME=$work/codex HOME=$work/person
mkdir -p "$HOME"
unset TMUX TMUX_PANE GEMINI_CLI_HOME
tmux -S "$sock" -f /dev/null new-session -d -s bench
# Dispatch waits for an agent screen that never comes (about 16 s): all at once.
agent="sh -c 'while :; do echo working; sleep 0.2; done'"
seq 1 32 | xargs -P 32 -I{} sh -c 'cd "$1" && "$2" dispatch "w$3" --agent "$4" --kind "$5" >/dev/null' \
  _ "$repo" "$bin" {} "$agent" "$kind"
(cd "$repo" && "$bin" list --json) | python3 -c '
import json, os, re, sys, time, uuid
work, kind = sys.argv[1], sys.argv[2]
paths, names = [], []
def uuid7():
    ms = int(time.time() * 1000)
    r = uuid.uuid4().int & ((1 << 80) - 1)
    n = (ms << 80) | (0x7 << 76) | (r & ((1 << 76) - 1))
    return str(uuid.UUID(int=n))
for r in json.load(sys.stdin):
    if kind == "claude":
        d = os.path.join(work, "claude", "projects", re.sub(r"[^A-Za-z0-9]", "-", r["worktree"]))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, r["conversation"] + ".jsonl")
    elif kind == "codex":
        thread = uuid7()
        d = os.path.join(work, "codex", "sessions", time.strftime("%Y/%m/%d", time.gmtime()))
        os.makedirs(d, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
        p = os.path.join(d, f"rollout-{stamp}-{thread}.jsonl")
        names.append((r["id"], thread))
    else:
        sid = str(uuid.uuid4())
        g = os.path.join(work, "home", "sessions", r["id"], "gemini-home", ".gemini")
        d = os.path.join(g, "tmp", r["label"], "chats")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(g, "projects.json"), "w") as f:
            json.dump({"projects": {os.path.realpath(r["worktree"]): r["label"]}}, f)
        p = os.path.join(d, f"session-2026-11-30T19-00-{sid[:8]}.jsonl")
        names.append((r["id"], sid))
    with open(p, "w") as f:
        if kind == "codex":
            f.write(json.dumps({"type": "turn_context", "payload": {"model": "gpt-5", "cwd": r["worktree"]}}) + "\n")
        for i in range(500):
            if kind == "claude":
                f.write(json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 300}}) + "\n")
                f.write(json.dumps({"type": "assistant", "timestamp": "2026-11-30T19:00:00Z",
                    "message": {"id": f"msg_{i}", "model": "claude-sonnet-4-5",
                        "content": [{"type": "text", "text": "y" * 300}],
                        "usage": {"input_tokens": 10, "output_tokens": 5,
                                  "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000}}}) + "\n")
            elif kind == "codex":
                f.write(json.dumps({"timestamp": "2026-11-30T19:00:00Z", "type": "response_item",
                    "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "y" * 300}]}}) + "\n")
                f.write(json.dumps({"timestamp": "2026-11-30T19:00:00Z", "type": "event_msg",
                    "payload": {"type": "token_count", "info": {"total_token_usage": {
                        "input_tokens": 1010 * (i + 1), "cached_input_tokens": 1000 * (i + 1),
                        "output_tokens": 5 * (i + 1), "total_tokens": 1015 * (i + 1)}}, "rate_limits": {"x": "z" * 150}}}) + "\n")
            else:
                f.write(json.dumps({"id": f"u{i}", "timestamp": "2026-11-30T19:00:00Z", "type": "user", "content": [{"text": "x" * 300}]}) + "\n")
                f.write(json.dumps({"id": f"m{i}", "timestamp": "2026-11-30T19:00:00Z", "type": "gemini", "content": "y" * 300,
                    "thoughts": [], "tokens": {"input": 1010, "output": 5, "cached": 1000, "thoughts": 0, "tool": 0, "total": 1015},
                    "model": "gemini-2.5-pro"}) + "\n")
    paths.append(p)
open(os.path.join(work, "logs"), "w").write("\n".join(paths) + "\n")
open(os.path.join(work, "names"), "w").write("".join(f"{i} {n}\n" for i, n in names))
print(f"{len(paths)} {kind} sessions, logs of {os.path.getsize(paths[0])} bytes")
' "$work" "$kind"
# codex and gemini say their conversation in a hook: as they would.
while read -r id name; do
  case $kind in
    codex) "$bin" event --session "$id" codex-notify "{\"type\":\"agent-turn-complete\",\"thread-id\":\"$name\",\"input-messages\":[\"go\"]}" ;;
    gemini) printf '{"session_id":"%s"}' "$name" | "$bin" event --session "$id" SessionStart ;;
  esac
done < "$work/names"

n=0
append() {
  n=$((n + 1))
  while read -r p; do
    case $kind in
      claude) printf '{"type":"assistant","timestamp":"2026-11-30T19:00:00Z","message":{"id":"new_%s","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":5}}}\n' "$n" ;;
      codex) printf '{"timestamp":"2026-11-30T19:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%s,"cached_input_tokens":500000,"output_tokens":%s}}}}\n' $((505000 + 10 * n)) $((2500 + 5 * n)) ;;
      gemini) printf '{"id":"new_%s","timestamp":"2026-11-30T19:00:00Z","type":"gemini","content":"y","tokens":{"input":10,"output":5,"cached":0},"model":"gemini-2.5-pro"}\n' "$n" ;;
    esac >> "$p"
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
awk -v kind="$kind" -v a="$(median "${off[@]}")" -v b="$(median "${on[@]}")" \
  'BEGIN { printf "32 " kind " sessions: refresh cost off %.1f ms, on %.1f ms, ratio %.2f (target <= 1.1)\n", a/1000, b/1000, b/a }'
echo "status line with cost on: $("$bin" status-line)"
