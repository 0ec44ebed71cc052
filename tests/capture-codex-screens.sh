#!/usr/bin/env bash
# Captures real screens of the codex CLI in each state, as classifier fixtures:
# tests/fixtures/screens/codex/<version>/<state>-<what>.txt (plain) and .ansi (with
# escapes, `capture-pane -e`). Also records the JSON its `notify` program gets.
#
#   tests/capture-codex-screens.sh
#   ORCHESTRA_SCREENS_PART=typed tests/capture-codex-screens.sh   # only prompts typed over lines
#   ORCHESTRA_SCREENS_PART=catalogue CODEX_VERSION=0.110.0 tests/capture-codex-screens.sh
#     # only the catalogue's entries, each at four sizes (<state>-<id>@<cols>x<rows>)
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
VERSION=${CODEX_VERSION:-0.171.0}
# The native binary: vendor/<triple>/bin/codex, in older releases vendor/<triple>/codex/codex.
codex=$(find "$CACHE/codex-$VERSION/node_modules/@openai/codex-linux-x64/vendor" -type f -name codex 2>/dev/null | head -n 1)
[ -x "$codex" ] || { echo "no codex $VERSION in $CACHE (npm install it into codex-$VERSION)" >&2; exit 2; }
out=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/codex}/$VERSION
# The shared background server (which --no-daemon keeps off) came after 0.110.0.
no_daemon=()
"$codex" --help 2>/dev/null | grep -q -- --no-daemon && no_daemon=(--no-daemon)
# Releases that old write no "Worked for" line under a turn: there its end is a reply
# with no "esc to interrupt" left on screen (0.171 streams with none, so not there).
turn_end=worked
[ ${#no_daemon[@]} -gt 0 ] || turn_end=quiet

. tests/capture-lib.sh
capture_init orchestra-capture-codex
start_standin openai.py
# Whether the turn of the prompt starting with $1 has ended: between that prompt and the
# input box, a "Worked for …" line or an error/interrupt mark ("■ …").
turn_done() {
  tmux -S "$sock" capture-pane -p -t cap:0 | python3 -c '
import re, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
marks = [i for i, l in enumerate(lines) if l.startswith("› ")]
after = lines[marks[-2] + 1 : marks[-1]] if len(marks) >= 2 else []
ok = len(marks) >= 2 and lines[marks[-2]].startswith("› " + sys.argv[1][:30]) and (any(
    re.match(r"^\s+Worked for |^■ ", l) for l in after) or (sys.argv[2] == "quiet" and any(
    l.startswith("• ") for l in after) and not any("esc to interrupt" in l for l in lines)))
sys.exit(0 if ok else 1)' "$1" "$turn_end"
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
case "$part" in
  all) rm -f "$out"/*.txt "$out"/*.ansi "$out"/notify/*.json ;;
  catalogue) ;; # catalogue_part clears what it takes
esac
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
start_as() { # start_as DIR ARGS...: codex with only these approval and sandbox flags
  local dir=$1; shift
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "$dir" \
    -e HOME="$HOME" -e CODEX_HOME="$CODEX_HOME" -e ORCHESTRA_STAND_IN_API_KEY="$ORCHESTRA_STAND_IN_API_KEY" \
    -- "$codex" "${no_daemon[@]}" "$@"
  tmux -S "$sock" set-option -t cap remain-on-exit on
}
start() { # start DIR ARGS...
  local dir=$1; shift
  start_as "$dir" --ask-for-approval on-request --sandbox read-only "$@"
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

# The catalogue (tests/fixtures/screens/codex/catalogue.toml), entry by entry.
CATALOGUE_WHAT="codex $VERSION"
. tests/capture-catalogue.sh
# The input box is ready: its footer says "? for shortcuts" (0.171) or "100% left" (0.110).
wait_box() { # wait_box [SECONDS]
  for _ in $(seq $(( ${1:-60} * 10 ))); do
    screen | grep -qE -- '\? for shortcuts|[0-9]+% (context )?left' && return 0
    sleep 0.1
  done
  return 1
}
catalogue_part() {
  catalogue_clear
  # Every entry but the tools' (below) comes from the one long run of catalogue_main.
  local main
  main=$(python3 -c 'import sys, tomllib
for e in tomllib.load(open(sys.argv[1], "rb"))["entry"]:
    if e["id"] not in ("mcp-approval", "web-search", "ask-user"):
        print(e["state"] + "-" + e["id"])' tests/fixtures/screens/codex/catalogue.toml)
  # shellcheck disable=SC2086
  wanted $main && catalogue_main
  wanted waiting-mcp-approval busy-web-search waiting-ask-user && catalogue_tools
  missed_entries
}
catalogue_tools() { # an MCP tool's approval, a web search, the model's question
  local p
  # Our one-tool MCP server (tests/fake-api/mcp_server.py), for this start only.
  start "$wt" -c 'mcp_servers.orchestra.command="python3"' -c "mcp_servers.orchestra.args=[\"$FAKE/mcp_server.py\"]"
  if wait_box 60; then
    sleep 2
    p='[[tool: note | {"text": "remember the catalogue"}]]'
    type_line "$p"
    ENTRY_WAIT=wait_re entry waiting-mcp-approval '^ *› *1\. ' 30 && press Escape
    wait_done "$p" 20 || true
  else
    missed+=(waiting-mcp-approval)
  fi
  tmux -S "$sock" kill-session -t cap
  # A search the API runs: its item comes first and takes 20 s, the answer after it.
  start "$wt" --search
  if wait_box 60; then
    sleep 2
    type_line "[[search: tmux status line]] [[slow: 20]] [[say: the search is done]]"
    # "• Browsing the web" while it runs ("• Searched the web for …" once it is done).
    wait_for "Browsing the web" 20 && SETTLE=2 entry busy-web-search "esc to interrupt" 5 || true
    wait_for "the search is done" 40 || true
  else
    missed+=(busy-web-search)
  fi
  tmux -S "$sock" kill-session -t cap
  # request_user_input: offered to the model in Plan mode only (shift+tab).
  start "$wt"
  if wait_box 60; then
    sleep 2
    press BTab
    wait_for "Plan mode" 5 || true
    type_line '[[tool: request_user_input | {"questions": [{"id": "approach", "header": "Approach", "question": "Which way should I take?", "options": [{"label": "Keep it small (Recommended)", "description": "Change as little as the fix needs"}, {"label": "Refactor first", "description": "Tidy the module, then fix"}]}]}]]'
    entry waiting-ask-user "Question 1/1" 20 && press Escape
  else
    missed+=(waiting-ask-user)
  fi
  tmux -S "$sock" kill-session -t cap
}
catalogue_main() {
  local p untrusted=$work/untrusted-catalogue
  mkdir -p "$untrusted"
  git -C "$untrusted" init -q
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  start "$untrusted"
  entry waiting-trust-dialog "Trust" 60 || true
  tmux -S "$sock" kill-session -t cap

  start "$wt"
  ENTRY_WAIT=wait_box entry idle-start "" 60 || { missed_entries; return 0; }
  p="[[slow: 20]] [[say: one two three four five six seven eight nine ten eleven twelve thirteen]]"
  type_line "$p"
  SETTLE=3 entry busy-streaming "esc to interrupt" || true
  # A prompt sent while the turn runs is queued under it (Tab; Enter would steer the turn).
  tmux -S "$sock" send-keys -t cap:0 -l -- "the next prompt, sent while the turn runs [[say: queued one answered]]"
  sleep 0.3
  tmux -S "$sock" send-keys -t cap:0 Tab
  SETTLE=0.5 entry busy-queued-prompt "queued one answered" 5 || true
  # The queued prompt's own text says "queued one answered": its turn's end is the sign.
  if wait_done "the next prompt, sent while the turn runs" 60; then
    sleep 1
    capture_sizes idle-after-turn
  else
    missed+=(idle-after-turn)
  fi

  p="[[bash: touch created-by-bash.txt]]"
  type_line "$p"
  entry waiting-exec-approval "Press enter to confirm" && press Escape
  wait_done "$p" || true
  sleep 1
  capture_sizes idle-after-deny
  p="[[write: new-file.txt | hello]]"
  type_line "$p"
  entry waiting-patch-approval "Press enter to confirm" && press Escape
  wait_done "$p" || true
  p="[[bash: sleep 12 && touch slept.txt]]"
  type_line "$p"
  if wait_for "Press enter to confirm" 20; then
    press Enter
    SETTLE=2 entry busy-running-command "esc to interrupt" 10 || true
    wait_done "$p" 30 || true
  fi
  sleep 1
  p="[[error: 400]]"
  type_line "$p"
  wait_done "$p" 30 || true
  sleep 1
  capture_sizes error-api-400
  p="[[error: 429]]"
  type_line "$p"
  if wait_for "Reconnecting" 30 2>/dev/null; then sleep 1; capture_sizes busy-reconnecting-429; fi
  wait_done "$p" 150 || true
  sleep 1
  turn_done "$p" && capture_sizes error-rate-limit-429
  p="[[slow: 30]] [[say: a long story that is interrupted before it ends, word after word]]"
  type_line "$p"
  sleep 4
  press Escape
  wait_done "$p" 20 || true
  sleep 1
  capture_sizes idle-interrupted

  # What a person opens at the prompt: the slash-command list, the shortcuts panel, the
  # approval-mode picker; each closed before the next.
  tmux -S "$sock" send-keys -t cap:0 -l /
  entry idle-slash-autocomplete "/model" 5 || true
  press Escape; press C-u
  tmux -S "$sock" send-keys -t cap:0 -l '?'
  entry idle-shortcuts-panel "esc close" 5 || true
  press Escape; press BSpace
  tmux -S "$sock" send-keys -t cap:0 -l /permissions
  sleep 0.7
  tmux -S "$sock" send-keys -t cap:0 Enter
  entry idle-permissions-picker "Full Access" 5 || true
  press Escape
  # Plan mode: shift+tab cycles the collaboration modes.
  press BTab
  entry idle-plan-mode "Plan mode" 5 || true
  press BTab
  sleep 1
  type_line "/quit"
  if wait_dead 20; then sleep 0.5; capture_sizes exited-quit; else missed+=(exited-quit); fi
  tmux -S "$sock" kill-session -t cap

  # The other approval presets, as started by their flags: workspace-write with approvals
  # on request (0.171's "Ask for approval"; --full-auto of older releases) and Full Access
  # (no approvals, no sandbox).
  start_as "$wt" --sandbox workspace-write --ask-for-approval on-request
  ENTRY_WAIT=wait_box entry idle-start-workspace-write "" 60 || true
  tmux -S "$sock" kill-session -t cap
  start_as "$wt" --dangerously-bypass-approvals-and-sandbox
  ENTRY_WAIT=wait_box entry idle-start-full-access "" 60 || true
  type_line "[[bash: touch by-full-access.txt]] [[after: ran it without asking]]"
  entry idle-full-access-ran-command "ran it without asking" 30 || true
  tmux -S "$sock" kill-session -t cap
}
if [ "$part" = catalogue ]; then
  catalogue_part
  echo "captured the catalogue of codex $VERSION into $out"
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
catalogue_part

# The notify payloads, with this run's folder and ids made neutral.
n=0
for f in "$work"/notify/*.json; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  sed -e "s|$work|/tmp/capture|g" "$f" > "$out/notify/agent-turn-complete-$n.json"
done
echo "captured codex $VERSION into $out ($n notify calls)"
