#!/usr/bin/env bash
# Captures real screens of the Claude CLI (pinned and old release) in each state, as
# classifier fixtures: tests/fixtures/screens/<version>/<state>-<what>.txt (plain) and
# .ansi (with escapes, `capture-pane -e`). Also records the hook JSON each event sends.
#
#   tests/capture-screens.sh            # both releases
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
out_root=$PWD/tests/fixtures/screens

work=$(mktemp -d /tmp/orchestra-capture.XXXXXX)
sock=$work/sock
cleanup() { tmux -S "$sock" kill-server 2>/dev/null || true; [ -n "${api_pid:-}" ] && kill "$api_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

python3 "$FAKE/anthropic.py" --port 0 --port-file "$work/port" --log "$work/requests.jsonl" &
api_pid=$!
for _ in $(seq 100); do [ -f "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
# A session of its own keeps the server up between runs (a restarting server races).
tmux -S "$sock" -f /dev/null new-session -d -s keep

capture() { # capture NAME
  tmux -S "$sock" capture-pane -p -t cap:0 > "$out/$1.txt"
  tmux -S "$sock" capture-pane -p -e -t cap:0 > "$out/$1.ansi"
}
wait_for() { # wait_for TEXT [SECONDS]
  for _ in $(seq $(( ${2:-20} * 10 ))); do
    tmux -S "$sock" capture-pane -p -t cap:0 | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  echo "timed out waiting for: $1" >&2
  tmux -S "$sock" capture-pane -p -t cap:0 >&2
  return 1
}
wait_gone() { # wait_gone TEXT [SECONDS]
  for _ in $(seq $(( ${2:-20} * 10 ))); do
    tmux -S "$sock" capture-pane -p -t cap:0 | grep -qF -- "$1" || return 0
    sleep 0.1
  done
  echo "timed out waiting for this to go: $1" >&2
  return 1
}
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.3
  tmux -S "$sock" send-keys -t cap:0 Enter
}

run_version() { # run_version VERSION CMD...
  local version=$1; shift
  out=$out_root/$version
  mkdir -p "$out"
  local wt=$work/wt-$version home=$work/home-$version
  mkdir -p "$wt" "$work/hooks-$version"
  git -C "$wt" init -q
  # Hooks that record their JSON, one file per event.
  # Releases before 2.1.78 refuse a settings file naming StopFailure.
  python3 - "$work/hooks-$version" "$version" > "$work/settings-$version.json" <<'PY'
import json, sys
d, version = sys.argv[1], tuple(int(x) for x in sys.argv[2].split("."))
events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Notification",
          "PostToolUse", "Stop", "SubagentStop", "SessionEnd"] + (["StopFailure"] if version >= (2, 1, 78) else [])
print(json.dumps({"hooks": {e: [{"hooks": [{"type": "command",
    "command": f"cat > {d}/{e}.$(date +%s%N).json"}]}] for e in events}}))
PY
  local env
  env=$(python3 "$FAKE/claude_home.py" "$home" --trust "$wt" --print-env --port "$port")
  eval "$env"
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "$wt" \
    -e HOME="$HOME" -e ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY" -e ANTHROPIC_BASE_URL="$ANTHROPIC_BASE_URL" \
    -e DISABLE_TELEMETRY=1 -e DISABLE_AUTOUPDATER=1 -e CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    -- "$@" --permission-mode default --settings "$work/settings-$version.json"
  # Keys typed before the CLI reads its input are lost: wait for the input box's hint line.
  wait_for "? for shortcuts" 60
  sleep 1
  capture idle-start
  type_line "[[slow: 8]] [[say: one two three four five six seven eight nine ten eleven twelve]]"
  sleep 2
  capture busy-streaming
  wait_gone "esc to interrupt" 20
  sleep 1
  capture idle-after-turn
  type_line "[[bash: touch created-by-bash.txt]]"
  wait_for "1. Yes" 20
  sleep 0.5
  capture waiting-bash-menu
  tmux -S "$sock" send-keys -t cap:0 Enter
  wait_for "Finished" 20
  sleep 1
  capture idle-after-tool
  type_line "[[write: $wt/new-file.txt | hello]]"
  wait_for "1. Yes" 20
  sleep 0.5
  capture waiting-write-menu
  tmux -S "$sock" send-keys -t cap:0 Escape
  sleep 2
  capture idle-after-deny
  type_line "Please explain: Do you want to proceed? ❯ 1. Yes 2. No — quoted [[say: You asked whether 'Do you want to proceed?' with options ❯ 1. Yes and 2. No. That is a menu text I am quoting.]]"
  wait_for "quoting" 20
  sleep 1
  capture idle-quoted-menu
  type_line "[[error: 400]]"
  wait_for "400" 30
  sleep 1
  capture error-api-400
  tmux -S "$sock" kill-session -t cap
  # The trust dialog: an untrusted folder.
  mkdir -p "$work/untrusted-$version"
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "$work/untrusted-$version" \
    -e HOME="$HOME" -e ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY" -e ANTHROPIC_BASE_URL="$ANTHROPIC_BASE_URL" \
    -e DISABLE_TELEMETRY=1 -e DISABLE_AUTOUPDATER=1 -- "$@"
  sleep 4
  capture waiting-trust-dialog
  tmux -S "$sock" kill-session -t cap
  mkdir -p "$out/hooks"
  cp "$work/hooks-$version"/*.json "$out/hooks/" 2>/dev/null || true
  echo "captured $version into $out"
}

run_version 2.1.332 "$CACHE/claude-2.1.332/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
run_version 2.0.77 node "$CACHE/claude-2.0.77/node_modules/@anthropic-ai/claude-code/cli.js"
