#!/usr/bin/env bash
# Captures real screens of the Gemini CLI in each state, as classifier fixtures:
# tests/fixtures/screens/gemini/<version>/<state>-<what>.txt (plain) and .ansi (with
# escapes, `capture-pane -e`). Also records the hook JSON each event sends (hooks/).
#
#   tests/capture-gemini-screens.sh
#   ORCHESTRA_SCREENS_PART=typed tests/capture-gemini-screens.sh   # only prompts typed over lines
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
VERSION=${GEMINI_VERSION:-0.61.0}
gemini=$CACHE/gemini-$VERSION/node_modules/@google/gemini-cli/bundle/gemini.js
out=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/gemini}/$VERSION

work=$(mktemp -d /tmp/orchestra-capture.XXXXXX)
sock=$work/sock
cleanup() {
  # The CLI's relaunched node process can outlive its pane's hangup: end each pane's group.
  for pid in $(tmux -S "$sock" list-panes -a -F '#{pane_pid}' 2>/dev/null); do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  tmux -S "$sock" kill-server 2>/dev/null || true
  [ -n "${api_pid:-}" ] && kill "$api_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

python3 "$FAKE/gemini.py" --port 0 --port-file "$work/port" --log "$work/requests.jsonl" &
api_pid=$!
for _ in $(seq 100); do [ -f "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
# A session of its own keeps the server up between runs (a restarting server races).
tmux -S "$sock" -f /dev/null new-session -d -s keep

capture() { # capture NAME
  tmux -S "$sock" capture-pane -p -t cap:0 > "$out/$1.txt"
  tmux -S "$sock" capture-pane -p -e -t cap:0 > "$out/$1.ansi"
}
screen() { tmux -S "$sock" capture-pane -p -t cap:0; }
wait_for() { # wait_for TEXT [SECONDS]
  for _ in $(seq $(( ${2:-20} * 10 ))); do
    screen | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  echo "timed out waiting for: $1" >&2
  screen >&2
  return 1
}
wait_gone() { # wait_gone TEXT [SECONDS]
  for _ in $(seq $(( ${2:-20} * 10 ))); do
    screen | grep -qF -- "$1" || return 0
    sleep 0.1
  done
  echo "timed out waiting for this to go: $1" >&2
  screen >&2
  return 1
}
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.3
  tmux -S "$sock" send-keys -t cap:0 Enter
}
start() { # start DIR WIDTH [ENV...]: the CLI in DIR, its home the test HOME
  local dir=$1 width=$2; shift 2
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x "$width" -y 40 -c "$dir" \
    -e HOME="$HOME" -e GEMINI_API_KEY="$GEMINI_API_KEY" -e GOOGLE_GEMINI_BASE_URL="$GOOGLE_GEMINI_BASE_URL" \
    "$@" -- node "$gemini"
  # As orchestra's windows: the last screen stays when the CLI exits.
  tmux -S "$sock" set-option -w -t cap:0 remain-on-exit on
}

part=${ORCHESTRA_SCREENS_PART:-all}
mkdir -p "$out" "$work/hooks"
[ "$part" = typed ] || rm -f "$out"/*.txt "$out"/*.ansi
home=$work/home
eval "$(python3 "$FAKE/gemini_home.py" "$home" --print-env --port "$port")"
# Hooks that record their JSON, one file per event (in the user settings of this HOME).
python3 - "$home/.gemini/settings.json" "$work/hooks" <<'PY'
import json, sys
path, d = sys.argv[1], sys.argv[2]
events = ["SessionStart", "BeforeAgent", "BeforeTool", "Notification", "AfterTool", "AfterAgent",
          "PreCompress", "SessionEnd"]
conf = json.load(open(path))
conf["hooks"] = {e: [{"hooks": [{"name": f"record-{e}", "type": "command",
                                 "command": f"cat > {d}/{e}.$(date +%s%N).json"}]}] for e in events}
json.dump(conf, open(path, "w"), indent=2)
PY


# A prompt typed over many lines: ctrl+j starts a new line in the box.
NEWLINE_KEYS=(C-j)
. tests/typed-lines.sh
fresh() { # a new CLI in the session `cap`, ready for keys
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  start "$wt" 120 -e GEMINI_CLI_TRUST_WORKSPACE=true
  wait_for "Type your message" 60
  sleep 6
}
typed_part() { # a prompt typed over many lines (not sent): idle, busy, pasted
  typed_idle_busy_pasted "[[slow: 30]] [[say: the turn under a typed prompt ran]]" "esc to cancel"
}

wt=$work/wt
mkdir -p "$wt"
git -C "$wt" init -q
if [ "$part" = typed ]; then
  typed_part
  echo "captured typed prompts of gemini $VERSION into $out"
  exit 0
fi

# The trust dialog: a folder the CLI was not told to trust.
mkdir -p "$work/untrusted"
start "$work/untrusted" 120
wait_for "Do you trust the files in this folder?" 60
sleep 0.5
capture waiting-trust-dialog
tmux -S "$sock" kill-session -t cap

start "$wt" 120 -e GEMINI_CLI_TRUST_WORKSPACE=true
# Keys typed before the CLI reads its input are lost: wait for the input line's hint.
wait_for "Type your message" 60
capture idle-start
sleep 6
capture idle-start-settled
type_line "[[slow: 10]] [[say: one two three four five six seven eight nine ten eleven twelve]]"
wait_for "esc to cancel" 20
sleep 2
capture busy-streaming
wait_gone "esc to cancel" 30
sleep 1
capture idle-after-turn
type_line "[[bash: touch created-by-shell.txt]]"
wait_for "Allow once" 20
sleep 0.5
capture waiting-shell-menu
tmux -S "$sock" send-keys -t cap:0 Enter
wait_for "Finished" 20
sleep 1
capture idle-after-tool
type_line "[[bash: sleep 8 && touch slow.txt]] [[after: the slow command ended]]"
wait_for "Allow once" 20
sleep 0.5
tmux -S "$sock" send-keys -t cap:0 Enter
wait_gone "Allow once" 10
sleep 2
capture busy-shell-running
wait_for "the slow command ended" 30
type_line "[[write: $wt/new-file.txt | hello]]"
wait_for "Apply this change?" 20
sleep 0.5
capture waiting-write-menu
tmux -S "$sock" send-keys -t cap:0 Down
sleep 0.5
capture waiting-write-menu-moved
tmux -S "$sock" send-keys -t cap:0 Escape
wait_for "Request cancelled" 10
sleep 1
capture idle-after-deny
type_line "[[error: 400]]"
wait_for "API Error" 30
sleep 1
capture error-api-400
type_line "[[error: 503]]"
wait_for "esc to cancel" 20
sleep 3
capture busy-retrying-503
tmux -S "$sock" send-keys -t cap:0 Escape
wait_gone "esc to cancel" 10
sleep 1
# Last: the quoted text stays on screen and would match the waits above.
type_line "Please explain [[say: You asked about this menu: │ ● 1. Allow once │ and 'Allow execution of [Shell]?' (esc to cancel, 3s). That is text I am quoting.]]"
wait_for "quoting" 20
sleep 1
capture idle-quoted-menu
type_line "/quit"
wait_for "Goodbye" 20
sleep 2
capture exited-quit
tmux -S "$sock" kill-session -t cap

# A narrow window wraps the hint and footer lines.
start "$wt" 70 -e GEMINI_CLI_TRUST_WORKSPACE=true
wait_for "Type your" 60
sleep 6
capture idle-narrow
type_line "[[slow: 6]] [[say: one two three four five six seven eight nine ten]]"
wait_for "esc to" 20
sleep 2
capture busy-narrow
wait_gone "esc to" 20
type_line "[[bash: touch narrow.txt]]"
wait_for "Allow once" 20
sleep 0.5
capture waiting-shell-menu-narrow
tmux -S "$sock" send-keys -t cap:0 Escape
tmux -S "$sock" kill-session -t cap

typed_part

mkdir -p "$out/hooks"
rm -f "$out"/hooks/*.json
cp "$work/hooks"/*.json "$out/hooks/" 2>/dev/null || true
echo "captured gemini $VERSION into $out"
