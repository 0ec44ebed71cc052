#!/usr/bin/env bash
# Captures real screens of the Gemini CLI in each state, as classifier fixtures:
# tests/fixtures/screens/gemini/<version>/<state>-<what>.txt (plain) and .ansi (with
# escapes, `capture-pane -e`). Also records the hook JSON each event sends (hooks/).
#
#   tests/capture-gemini-screens.sh
#   ORCHESTRA_SCREENS_PART=typed tests/capture-gemini-screens.sh   # only prompts typed over lines
#   ORCHESTRA_SCREENS_PART=catalogue GEMINI_VERSION=0.35.3 tests/capture-gemini-screens.sh
#     # only the catalogue's entries, each at four sizes (<state>-<id>@<cols>x<rows>)
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
VERSION=${GEMINI_VERSION:-0.61.0}
gemini=$CACHE/gemini-$VERSION/node_modules/@google/gemini-cli/bundle/gemini.js
# Older releases ship dist/index.js instead of one bundle.
[ -f "$gemini" ] || gemini=$CACHE/gemini-$VERSION/node_modules/@google/gemini-cli/dist/index.js
[ -f "$gemini" ] || { echo "no gemini $VERSION in $CACHE (npm install it into gemini-$VERSION)" >&2; exit 2; }
out=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/gemini}/$VERSION

. tests/capture-lib.sh
capture_init orchestra-capture-gemini
start_standin gemini.py
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.3
  tmux -S "$sock" send-keys -t cap:0 Enter
}
start() { # start DIR WIDTH [ENV...]: the CLI in DIR, its home the test HOME
  local dir=$1 width=$2; shift 2
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x "$width" -y 40 -c "$dir" \
    -e HOME="$HOME" -e GEMINI_API_KEY="$GEMINI_API_KEY" -e GOOGLE_GEMINI_BASE_URL="$GOOGLE_GEMINI_BASE_URL" \
    "$@" -- node "$gemini" "${GEMINI_ARGS[@]}"
  # As orchestra's windows: the last screen stays when the CLI exits.
  tmux -S "$sock" set-option -w -t cap:0 remain-on-exit on
}

GEMINI_ARGS=()
part=${ORCHESTRA_SCREENS_PART:-all}
mkdir -p "$out" "$work/hooks"
case "$part" in
  all) rm -f "$out"/*.txt "$out"/*.ansi ;;
  catalogue) ;; # catalogue_part clears what it takes
esac
home=$work/home
eval "$(python3 "$FAKE/gemini_home.py" "$home" --print-env --port "$port")"
# Hooks that record their JSON, one file per event (in the user settings of this HOME).
# Releases before the settings said enableAutoUpdate read disableAutoUpdate: without it
# 0.20.0 updated itself into the machine's global npm folder.
schema=$(dirname "$gemini")/src/config/settingsSchema.js
old_update_keys=0
[ -f "$schema" ] && grep -q disableAutoUpdate "$schema" && old_update_keys=1
python3 - "$home/.gemini/settings.json" "$work/hooks" "$old_update_keys" <<'PY'
import json, sys
path, d = sys.argv[1], sys.argv[2]
events = ["SessionStart", "BeforeAgent", "BeforeTool", "Notification", "AfterTool", "AfterAgent",
          "PreCompress", "SessionEnd"]
conf = json.load(open(path))
if sys.argv[3] == "1":
    conf.setdefault("general", {}).update({"disableAutoUpdate": True, "disableUpdateNag": True})
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

# The catalogue (tests/fixtures/screens/gemini/catalogue.toml), entry by entry. The
# approval menus' "Allow once" is "Yes, allow once" in older releases: waited for as
# "llow once".
# Resizing leaves old lines above the redrawn screen: a turn is over when its spinner
# text has left the bottom of the screen.
wait_gone_below() { # wait_gone_below TEXT [SECONDS]
  for _ in $(seq $(( ${2:-30} * 10 ))); do
    screen | grep -v '^[[:space:]]*$' | tail -n 12 | grep -qF -- "$1" || return 0
    sleep 0.1
  done
  echo "timed out waiting for this to go: $1" >&2
  return 1
}
wait_below() { # wait_below TEXT [SECONDS]: TEXT at the bottom of the screen
  for _ in $(seq $(( ${2:-30} * 10 ))); do
    screen | grep -v '^[[:space:]]*$' | tail -n 12 | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  return 1
}
wait_below_re() { # wait_below_re REGEX [SECONDS]: a line matching (grep -E) at the bottom
  for _ in $(seq $(( ${2:-30} * 10 ))); do
    screen | grep -v '^[[:space:]]*$' | tail -n 12 | grep -qE -- "$1" && return 0
    sleep 0.1
  done
  return 1
}
CATALOGUE_WHAT="gemini $VERSION"
ENTRY_WAIT=wait_below
. tests/capture-catalogue.sh
# The entries of the one long run below (each screen leads to the next).
MAIN_ENTRIES="idle-start busy-streaming busy-queued-prompt idle-after-turn waiting-shell-approval
  idle-after-deny waiting-write-approval waiting-edit-approval waiting-web-fetch-approval
  busy-shell-running error-api-400 busy-retrying-503 busy-retrying-429 idle-slash-autocomplete
  idle-at-file-autocomplete idle-shortcuts-panel idle-shell-mode idle-auto-edit-mode
  idle-yolo-mode busy-yolo-streaming exited-quit"
catalogue_part() {
  catalogue_clear
  local untrusted=$work/untrusted
  mkdir -p "$untrusted"
  if wanted waiting-trust-dialog; then
    tmux -S "$sock" kill-session -t cap 2>/dev/null || true
    start "$untrusted" 120
    entry waiting-trust-dialog "Do you trust" 60 || true
    tmux -S "$sock" kill-session -t cap
  fi
  echo hello > "$wt/README.md"
  # shellcheck disable=SC2086
  wanted $MAIN_ENTRIES && catalogue_main
  wanted idle-yolo-start && catalogue_yolo_start
  wanted waiting-mcp-approval waiting-ask-user && catalogue_tools
  missed_entries
}
catalogue_main() {
  start "$wt" 120 -e GEMINI_CLI_TRUST_WORKSPACE=true
  wait_for "Type your message" 60
  sleep 6
  capture_sizes idle-start
  type_line "[[slow: 25]] [[say: one two three four five six seven eight nine ten eleven twelve thirteen]]"
  entry busy-streaming "esc to cancel" || true
  # A prompt sent while the turn runs waits its turn (queued under the spinner).
  type_line "the next prompt, sent while the turn runs [[say: queued one answered]]"
  entry busy-queued-prompt "esc to cancel" 5 || true
  # The answer's line, not the queued prompt that says the same words.
  wait_for "✦ queued one answered" 60 || true
  wait_gone_below "esc to cancel" 30 || true
  sleep 1
  capture_sizes idle-after-turn

  type_line "[[bash: touch created-by-shell.txt]]"
  # Escape denies; when the menu did not come it cancels whatever did.
  if entry waiting-shell-approval "llow once"; then
    press Escape
    wait_gone_below "llow once" 10 || true
    sleep 1
    capture_sizes idle-after-deny
  else
    press Escape
  fi
  type_line "[[write: $wt/new-file.txt | hello]]"
  entry waiting-write-approval "llow once" || true; press Escape
  wait_gone_below "llow once" 10 || true
  type_line "[[tool: replace | {\"file_path\": \"$wt/README.md\", \"old_string\": \"hello\", \"new_string\": \"goodbye\", \"instruction\": \"Say goodbye\"}]]"
  entry waiting-edit-approval "llow once" || true; press Escape
  wait_gone_below "llow once" 10 || true
  type_line "[[tool: web_fetch | {\"prompt\": \"Summarise http://127.0.0.1:9/page\"}]]"
  entry waiting-web-fetch-approval "llow once" || true; press Escape
  wait_gone_below "llow once" 10 || true
  sleep 1

  type_line "[[bash: sleep 15 && touch slow.txt]] [[after: the slow command ended]]"
  if wait_below "llow once" 20; then
    press Enter
    wait_gone_below "llow once" 10 || true
    sleep 2
    capture_sizes busy-shell-running
    wait_for "the slow command ended" 40 || true
  fi
  sleep 1

  type_line "[[error: 400]]"
  entry error-api-400 "API Error" 30 || true
  type_line "[[error: 503]]"
  SETTLE=3 entry busy-retrying-503 "esc to cancel" || true
  press Escape
  wait_gone_below "esc to cancel" 20 || true
  type_line "[[error: 429]]"
  SETTLE=3 entry busy-retrying-429 "esc to cancel" || true
  press Escape
  wait_gone_below "esc to cancel" 20 || true
  sleep 1

  # What a person opens at the prompt: the slash-command and @-file lists, the shortcuts
  # panel, shell mode; each cleared before the next.
  tmux -S "$sock" send-keys -t cap:0 -l /
  # 0.61 lists "/help", 0.20 "help" (its commands without the slash).
  ENTRY_WAIT=wait_below_re entry idle-slash-autocomplete '^ *(/)?(about|help) ' 5 || true
  press Escape; press C-u
  tmux -S "$sock" send-keys -t cap:0 -l @
  entry idle-at-file-autocomplete "README.md" 5 || true
  press Escape; press C-u
  tmux -S "$sock" send-keys -t cap:0 -l '?'
  entry idle-shortcuts-panel "YOLO" 5 || true
  press Escape; press C-u
  tmux -S "$sock" send-keys -t cap:0 -l '!'
  entry idle-shell-mode "shell mode" 5 || true
  press Escape; press C-u
  sleep 1

  # The approval modes: shift+tab to auto-accept edits, ctrl+y to YOLO (the input line
  # then starts with `*`).
  press BTab
  ENTRY_WAIT=wait_below_re entry idle-auto-edit-mode 'auto-accept edits|accepting edits' 5 || true
  press BTab
  sleep 1
  screen | grep -v '^[[:space:]]*$' | tail -n 12 | grep -qiE "auto-accept edits|accepting edits" && press BTab
  press C-y
  entry idle-yolo-mode "YOLO" 5 || true
  type_line "[[slow: 20]] [[say: one two three four five six seven eight nine ten in yolo mode]]"
  entry busy-yolo-streaming "esc to cancel" || true
  wait_gone_below "esc to cancel" 40 || true
  sleep 1
  type_line "/quit"
  if wait_dead 20; then sleep 1; capture_sizes exited-quit; else missed+=(exited-quit); fi
  tmux -S "$sock" kill-session -t cap
}
catalogue_yolo_start() { # started in YOLO mode by its flag
  GEMINI_ARGS=(--yolo)
  start "$wt" 120 -e GEMINI_CLI_TRUST_WORKSPACE=true
  if wait_for "Type your message" 60; then sleep 6; capture_sizes idle-yolo-start; else missed+=(idle-yolo-start); fi
  tmux -S "$sock" kill-session -t cap
  GEMINI_ARGS=()
}
catalogue_tools() { # an MCP tool's approval and the model's question (ask_user)
  local settings=$home/.gemini/settings.json tool=note
  # Our one-tool MCP server (tests/fake-api/mcp_server.py), for this start only.
  cp "$settings" "$work/settings.saved"
  python3 - "$settings" "$FAKE/mcp_server.py" <<'PY'
import json, sys
conf = json.load(open(sys.argv[1]))
conf["mcpServers"] = {"orchestra": {"command": "python3", "args": [sys.argv[2]]}}
json.dump(conf, open(sys.argv[1], "w"), indent=2)
PY
  # 0.61 names a server's tools mcp_<server>_<tool>; 0.20 by the tool's own name.
  grep -rqE 'startsWith\("mcp_"\) \?' "$(dirname "$gemini")/.." && tool=mcp_orchestra_note
  start "$wt" 120 -e GEMINI_CLI_TRUST_WORKSPACE=true
  if wait_for "Type your message" 60; then
    sleep 6
    type_line "[[tool: $tool | {\"text\": \"remember the catalogue\"}]]"
    entry waiting-mcp-approval "llow once" || true
    press Escape
    wait_gone_below "llow once" 10 || true
    sleep 1
    # ask_user came after 0.20 (the CLI offers no such tool there: nothing comes).
    if grep -rqF ASK_USER_TOOL_NAME "$(dirname "$gemini")/.."; then
      type_line '[[tool: ask_user | {"questions": [{"question": "Which way should I take?", "header": "Approach", "type": "choice", "options": [{"label": "Keep it small", "description": "Change as little as the fix needs"}, {"label": "Refactor first", "description": "Tidy the module, then fix"}]}]}]]'
      entry waiting-ask-user "Enter to select" || true
      press Escape
    fi
  else
    missed+=(waiting-mcp-approval)
  fi
  tmux -S "$sock" kill-session -t cap
  cp "$work/settings.saved" "$settings"
}
if [ "$part" = catalogue ]; then
  catalogue_part
  echo "captured the catalogue of gemini $VERSION into $out"
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
wait_gone_below "esc to cancel" 30
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
wait_gone_below "Allow once" 10
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
wait_gone_below "esc to cancel" 10
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
catalogue_part

mkdir -p "$out/hooks"
rm -f "$out"/hooks/*.json
cp "$work/hooks"/*.json "$out/hooks/" 2>/dev/null || true
echo "captured gemini $VERSION into $out"
