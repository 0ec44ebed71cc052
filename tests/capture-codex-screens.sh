#!/usr/bin/env bash
# Captures real screens of the codex CLI in each state, as classifier fixtures:
# tests/fixtures/screens/codex/<version>/<state>-<what>.txt (plain) and .ansi (with
# escapes, `capture-pane -e`). Also records the JSON its `notify` program gets.
#
#   tests/capture-codex-screens.sh
#   ORCHESTRA_SCREENS_PART=typed tests/capture-codex-screens.sh   # only prompts typed over lines
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
VERSION=${CODEX_VERSION:-0.171.0}
codex=$CACHE/codex-$VERSION/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
out=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/codex}/$VERSION

work=$(mktemp -d /tmp/orchestra-capture-codex.XXXXXX)
sock=$work/sock
cleanup() { tmux -S "$sock" kill-server 2>/dev/null || true; [ -n "${api_pid:-}" ] && kill "$api_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

python3 "$FAKE/openai.py" --port 0 --port-file "$work/port" --log "$work/requests.jsonl" &
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
# Whether the turn of the prompt starting with $1 has ended: between that prompt and the
# input box, a "Worked for …" line or an error/interrupt mark ("■ …").
turn_done() {
  tmux -S "$sock" capture-pane -p -t cap:0 | python3 -c '
import re, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
marks = [i for i, l in enumerate(lines) if l.startswith("› ")]
ok = len(marks) >= 2 and lines[marks[-2]].startswith("› " + sys.argv[1][:30]) and any(
    re.match(r"^\s+Worked for |^■ ", l) for l in lines[marks[-2] + 1 : marks[-1]])
sys.exit(0 if ok else 1)' "$1"
}
wait_done() { # wait_done PROMPT [SECONDS]
  for _ in $(seq $(( ${2:-30} * 10 ))); do
    turn_done "$1" && return 0
    sleep 0.1
  done
  echo "timed out waiting for the end of: $1" >&2
  tmux -S "$sock" capture-pane -p -t cap:0 >&2
  return 1
}
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.3
  tmux -S "$sock" send-keys -t cap:0 Enter
}

part=${ORCHESTRA_SCREENS_PART:-all}
mkdir -p "$out" "$out/notify" "$work/notify"
[ "$part" = typed ] || rm -f "$out"/*.txt "$out"/*.ansi "$out"/notify/*.json
wt=$work/wt
mkdir -p "$wt"
git -C "$wt" init -q
env=$(python3 "$FAKE/codex_home.py" "$work/home" --trust "$wt" --print-env --port "$port")
eval "$env"
# The notify program records its JSON (the last argument), one file per call.
cat > "$work/record-notify" <<SH
#!/bin/sh
for last; do :; done
printf '%s\n' "\$last" > "$work/notify/\$(date +%s%N).json"
SH
chmod +x "$work/record-notify"
# What orchestra's own tests run: manual approvals (a read-only sandbox and on-request),
# no shared background server (it copies the whole CLI into CODEX_HOME).
start() { # start DIR ARGS...
  local dir=$1; shift
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "$dir" \
    -e HOME="$HOME" -e CODEX_HOME="$CODEX_HOME" -e ORCHESTRA_STAND_IN_API_KEY="$ORCHESTRA_STAND_IN_API_KEY" \
    -- "$codex" --no-daemon --ask-for-approval on-request --sandbox read-only "$@"
  tmux -S "$sock" set-option -t cap remain-on-exit on
}

# A prompt typed over many lines: ctrl+j starts a new line in the box.
NEWLINE_KEYS=(C-j)
. tests/typed-lines.sh
fresh() { # a new CLI in the session `cap`, ready for keys
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  start "$wt"
  wait_for "? for shortcuts" 60
  sleep 1
}
typed_part() { # a prompt typed over many lines (not sent): idle, busy, pasted
  typed_idle_busy_pasted "[[slow: 30]] [[say: the turn under a typed prompt ran]]" "esc to interrupt"
}
if [ "$part" = typed ]; then
  typed_part
  echo "captured typed prompts of codex $VERSION into $out"
  exit 0
fi

start "$wt" -c "notify=[\"$work/record-notify\"]"
# Keys typed before the CLI reads its input are lost: wait for the input box's hint line.
wait_for "? for shortcuts" 60
sleep 1
capture idle-start

p="[[slow: 10]] [[say: one two three four five six seven eight nine ten eleven twelve thirteen fourteen]]"
type_line "$p"
sleep 4
capture busy-streaming
wait_done "$p"
sleep 1
capture idle-after-turn

p="[[bash: touch created-by-bash.txt]]"
type_line "$p"
wait_for "Press enter to confirm" 20
sleep 0.5
capture waiting-bash-menu
tmux -S "$sock" send-keys -t cap:0 Enter
wait_done "$p"
sleep 1
capture idle-after-tool

p="[[bash: sleep 8 && touch slept.txt]]"
type_line "$p"
wait_for "Press enter to confirm" 20
sleep 0.5
tmux -S "$sock" send-keys -t cap:0 Enter
wait_for "esc to interrupt" 10
sleep 2
capture busy-running-command
wait_done "$p" 30
sleep 1

p="[[write: new-file.txt | hello]]"
type_line "$p"
wait_for "Press enter to confirm" 20
sleep 0.5
capture waiting-write-menu
tmux -S "$sock" send-keys -t cap:0 Escape
wait_done "$p"
sleep 1
capture idle-after-deny

p="Please explain: Would you like to run the following command? › 1. Yes, proceed (y) Press enter to confirm or esc to cancel — quoted [[say: You asked about 'Would you like to run the following command?' with › 1. Yes, proceed (y) and 'Press enter to confirm or esc to cancel'. I am quoting that menu.]]"
type_line "$p"
wait_done "$p"
sleep 1
capture idle-quoted-menu

p="[[error: 400]]"
type_line "$p"
wait_done "$p" 30
sleep 1
capture error-api-400

# A server error is retried (five times, with backoff) before the turn fails.
p="[[error: 500]]"
type_line "$p"
wait_for "Reconnecting" 30
sleep 1
capture busy-reconnecting
wait_done "$p" 120
sleep 1
capture error-api-500

p="[[slow: 30]] [[say: a long story that is interrupted before it ends, word after word after word]]"
type_line "$p"
sleep 4
tmux -S "$sock" send-keys -t cap:0 Escape
wait_done "$p" 20
sleep 1
capture idle-interrupted

p="/quit"
type_line "$p"
for _ in $(seq 100); do
  [ "$(tmux -S "$sock" display-message -p -t cap:0 '#{pane_dead}')" = 1 ] && break
  sleep 0.1
done
sleep 0.5
capture exited-quit
tmux -S "$sock" kill-session -t cap

# The trust dialog: a folder the CLI was not told to trust.
mkdir -p "$work/untrusted"
git -C "$work/untrusted" init -q
start "$work/untrusted"
wait_for "Trust this folder" 60
sleep 1
capture waiting-trust-dialog
tmux -S "$sock" kill-session -t cap

typed_part

# The notify payloads, with this run's folder and ids made neutral.
n=0
for f in "$work"/notify/*.json; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  sed -e "s|$work|/tmp/capture|g" "$f" > "$out/notify/agent-turn-complete-$n.json"
done
echo "captured codex $VERSION into $out ($n notify calls)"
