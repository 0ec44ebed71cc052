#!/usr/bin/env bash
# Captures real screens of the opencode TUI in each state, as classifier fixtures:
# tests/fixtures/screens/opencode/<version>/<state>-<id>@<cols>x<rows>.txt (plain) and
# .ansi (with escapes, `capture-pane -e`), the entries of
# tests/fixtures/screens/opencode/catalogue.toml, against tests/fake-api/anthropic.py.
# (Outside tests/fixtures/screens/ until orchestra knows the kind: the classify tests read
# every agent folder there. Adding the kind moves the folder to screens/opencode.)
#
#   tests/capture-opencode-screens.sh
#   OPENCODE_VERSION=1.18.33 tests/capture-opencode-screens.sh
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
VERSION=${OPENCODE_VERSION:-1.18.33}
# The binary the npm package's install script links from its platform package (the
# baseline build on CPUs without AVX2), as `opencode` on PATH runs it.
opencode=$CACHE/opencode-$VERSION/node_modules/opencode-ai/bin/opencode.exe
[ -x "$opencode" ] || { echo "no opencode $VERSION in $CACHE (npm install opencode-ai into opencode-$VERSION)" >&2; exit 2; }
out=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/opencode}/$VERSION
# A cold start takes 10–25 s on two busy cores (it opens its database, scans the folder).
WAIT_SECONDS=60
# It redraws a resized screen slowly on a loaded machine: half-drawn frames at 0.7 s.
CAPTURE_SETTLE=${CAPTURE_SETTLE:-2}

. tests/capture-lib.sh
capture_init orchestra-capture-opencode
start_standin anthropic.py
mkdir -p "$out"
rm -f "$out"/*@*.txt "$out"/*@*.ansi
home=$work/home
eval "$(python3 "$FAKE/opencode_home.py" "$home" --port "$port" --ask --print-env)"
wt=$work/wt
mkdir -p "$wt"
git -C "$wt" init -q
printf 'old words\n' > "$wt/a.txt"

requests() { { wc -l < "$work/requests.jsonl"; } 2>/dev/null || echo 0; }
type_line() { # type_line TEXT: typed and sent; an Enter the TUI dropped (it does, early
  # after a start) is pressed again until the stand-in sees a request
  local before tries
  before=$(requests)
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.5
  for tries in 1 2 3; do
    tmux -S "$sock" send-keys -t cap:0 Enter
    for _ in $(seq 50); do [ "$(requests)" -gt "$before" ] && return 0; sleep 0.2; done
  done
  echo "$CATALOGUE_WHAT: the prompt was not sent: $1" >&2
  return 1
}
fresh() { # a new TUI in the session `cap`, at its prompt
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  local env=() name
  for name in HOME XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME XDG_STATE_HOME OPENCODE_DISABLE_MODELS_FETCH \
    OPENCODE_DISABLE_AUTOUPDATE OPENCODE_DISABLE_SHARE OPENCODE_DISABLE_LSP_DOWNLOAD OPENCODE_DISABLE_CLAUDE_CODE; do
    env+=(-e "$name=${!name}")
  done
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "$wt" "${env[@]}" -- "$opencode" "$@"
  # As orchestra's windows: the last screen stays when the CLI exits.
  tmux -S "$sock" set-option -w -t cap:0 remain-on-exit on
  # The footer's "ctrl+p commands" is the last thing drawn (the placeholder "Ask
  # anything" only shows in a new session).
  wait_for "ctrl+p commands" 90
  sleep 3
}
# The footer's "esc interrupt" is the busy sign; it leaves when the turn ends.
turn_over() { wait_gone "esc interrupt" "${1:-60}"; sleep 1; }

CATALOGUE_WHAT="opencode $VERSION"
. tests/capture-catalogue.sh

fresh
entry idle-start "Ask anything"

type_line "[[say: Hello from the stand-in.]]"
wait_for "Hello from the stand-in."
turn_over
entry idle-after-turn "Hello from the stand-in."

type_line "[[slow: 40]] [[long: 30]] [[say: the slow answer ended]]"
entry busy-streaming "esc interrupt"
# Esc twice interrupts ("esc again to interrupt" in between).
press Escape
entry busy-interrupt-armed "again to interrupt" 5 || true
# The first Esc lapses while the sizes are captured: both again, close together (but
# not back to back: two ESC bytes at once read as one Alt+Esc).
press Escape
sleep 0.5
tmux -S "$sock" send-keys -t cap:0 Escape
wait_gone "again to interrupt" 20 || true
turn_over 20 || true
entry idle-interrupted "ctrl+p commands" 5 || true
sleep 1

type_line "[[bash: touch catalogue-bash.txt]]"
entry waiting-permission-bash "Permission required" 40
# Reject: the turn ends with the rejection in the transcript.
press Right
press Right
press Enter
turn_over 30 || true
entry idle-after-reject "ctrl+p commands" 10 || true

type_line "[[edit: $wt/a.txt | old words | new words]]"
entry waiting-permission-edit "Permission required" 40
press Enter
wait_for "Finished." 40 || true
turn_over 30 || true

type_line "[[write: $wt/new-file.txt | hello]]"
entry waiting-permission-write "Permission required" 40
press Right
press Right
press Enter
turn_over 30 || true

# A 400 is not retried: the error shows at once and the turn ends.
type_line "[[error: 400]]"
entry idle-after-api-error "scripted error 400" 40
# A 500 is retried with a countdown in the footer, the turn still busy.
type_line "[[error: 500]]"
entry busy-retrying "retrying in" 60
press Escape
press Escape
turn_over 20 || true

# Ctrl+C on an empty prompt ends the TUI; the pane keeps its last screen.
press C-c
if wait_dead 20; then
  sleep 1
  capture_sizes exited-ctrl-c
else
  echo "$CATALOGUE_WHAT: exited-ctrl-c not shown (the TUI did not exit)" >&2
  missed+=(exited-ctrl-c)
fi

# Resume: --continue opens the last session of this folder with its transcript.
fresh --continue
# Its last turn was the interrupted retry of the 500.
entry idle-continued "[[error: 500]]" 30 || true

missed_entries
echo "captured opencode $VERSION into $out"
