#!/usr/bin/env bash
# Captures real screens of the Claude CLI in each state, for every release of the test
# matrix, as classifier fixtures: tests/fixtures/screens/claude/<version>/<state>-<what>.txt
# (plain) and .ansi (with escapes, `capture-pane -e`). The file name's first word is the
# state the classifier must read. Also records the hook JSON each event sends (hooks/).
#
#   tests/capture-screens.sh                   # every release of the matrix
#   tests/capture-screens.sh 2.1.150           # one release (installed in the cache)
#   ORCHESTRA_SCREENS_OUT=/tmp/x tests/capture-screens.sh 2.1.50   # elsewhere, to compare
#   ORCHESTRA_SCREENS_PART=typed tests/capture-screens.sh   # only the prompts typed over lines
#   ORCHESTRA_SCREENS_PART=catalogue tests/capture-screens.sh 2.1.20   # every catalogue entry
#   ORCHESTRA_SCREENS_PART=catalogue ORCHESTRA_CATALOGUE_ONLY="ask-single ask-multi" tests/capture-screens.sh
#
# The CLI runs against OUR stand-in (tests/fake-api/anthropic.py), in a sandboxed HOME.
# Needs what tests/run.sh installs. The fixtures are committed; rerun when a release changes
# (a release that is not in the matrix: `npm install --prefix $CACHE/claude-<v>
# @anthropic-ai/claude-code@<v>` first).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
out_root=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/claude}
# The release matrix (tests/run.sh installs these; tests/it/matrix.rs walks them).
MATRIX=(2.0.77 2.1.100 2.1.332)

. tests/capture-lib.sh
capture_init orchestra-capture
start_standin anthropic.py

# A turn is over when the CLI says no more "esc to interrupt" (a Stop hook may still run
# after the text is complete), and for a moment after.
idle_then() { # idle_then NAME
  wait_gone "esc to interrupt" 30
  sleep 1.5
  wait_gone "esc to interrupt" 30
  capture "$1"
}
input_line() { # the line of the input box: the one under its top border (2.0.77 puts a
  # no-break space after the ❯)
  screen | grep -E -A1 '^(─|━){8,}' | grep '^❯' | tail -1 | sed 's/\xc2\xa0/ /g'
}
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.5
  tmux -S "$sock" send-keys -t cap:0 Enter
  # Under load the CLI can drop an Enter: the text stays in the input box. Once more then.
  local head=${1:0:20}
  for _ in $(seq "${TYPE_RETRIES:-3}"); do
    sleep 1.5
    input_line | grep -qF -- "❯ $head" || return 0
    tmux -S "$sock" send-keys -t cap:0 Enter || true
  done
}
# A prompt typed over many lines: backslash-Enter starts a new line in every release.
NEWLINE_KEYS=('\' Enter)
. tests/typed-lines.sh

start_cli() { # start_cli DIR COLUMNS: the CLI of $version in a new session `cap`
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x "$2" -y 40 -c "$1" \
    -e HOME="$HOME" -e ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY" -e ANTHROPIC_BASE_URL="$ANTHROPIC_BASE_URL" \
    -e DISABLE_TELEMETRY=1 -e DISABLE_AUTOUPDATER=1 -e CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    -- "$cli" --permission-mode default --settings "$work/settings-$version.json"
  # A dead pane stays, with the CLI's last screen: what orchestra's windows keep too.
  tmux -S "$sock" set-option -t cap remain-on-exit on
}

run_version() { # run_version VERSION
  version=$1
  cli=$CACHE/claude-$version/node_modules/.bin/claude
  if [ ! -x "$cli" ]; then
    echo "capture-screens.sh: no claude $version at $cli (tests/run.sh installs the matrix)" >&2
    exit 2
  fi
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

  case ${ORCHESTRA_SCREENS_PART:-all} in
    all) states_part; typed_part ;;
    typed) typed_part; return ;;
    catalogue) catalogue_part; return ;;
    *) echo "capture-screens.sh: ORCHESTRA_SCREENS_PART is all, typed or catalogue" >&2; exit 2 ;;
  esac
  mkdir -p "$out/hooks"
  cp "$work/hooks-$version"/*.json "$out/hooks/" 2>/dev/null || true
  python3 tests/derive-screens.py "$out"
  echo "captured $version into $out"
}

states_part() { # every state once, at 120 and 50 columns, and the trust dialog
  start_cli "$wt" 120
  # Keys typed before the CLI reads its input are lost: wait for the input box's hint line.
  wait_for "? for shortcuts" 60
  sleep 1
  capture idle-start
  type_line "[[slow: 8]] [[say: one two three four five six seven eight nine ten eleven twelve]]"
  wait_for "esc to interrupt"
  sleep 1
  capture busy-streaming
  # A prompt typed while a turn runs waits in a queue between the spinner and the box.
  type_line "[[say: the queued prompt ran]]"
  sleep 1
  capture busy-queued-prompt
  wait_for "the queued prompt ran" 30
  idle_then idle-after-turn
  type_line "[[bash: touch created-by-bash.txt]]"
  wait_for "1. Yes"
  sleep 0.5
  capture waiting-bash-menu
  press Enter
  wait_for "Finished"
  idle_then idle-after-tool
  # An approved command that runs a while: busy with no spinner text of the model's own.
  type_line "[[bash: sleep 6 && touch slept.txt]]"
  wait_for "1. Yes"
  press Enter
  sleep 2.5
  capture busy-tool-running
  wait_for "Finished" 30
  wait_gone "esc to interrupt"
  type_line "[[write: $wt/new-file.txt | hello]]"
  wait_for "1. Yes"
  sleep 0.5
  capture waiting-write-menu
  press Escape
  sleep 1
  idle_then idle-after-deny
  type_line "Please explain: Do you want to proceed? ❯ 1. Yes 2. No — quoted [[say: You asked whether 'Do you want to proceed?' with options ❯ 1. Yes and 2. No. That is a menu text I am quoting.]]"
  wait_for "quoting"
  idle_then idle-quoted-menu
  type_line "[[error: 400]]"
  wait_for "400" 60
  idle_then error-api-400
  # A background shell (Bash with run_in_background): the turn goes on while it runs (a
  # look at its output, then text), ends with the shell still running (the footer counts
  # it), and the CLI wakes the model in a turn of its own when the shell ends.
  type_line "[[background: sleep 20 && touch bg-done.txt]] [[poll: 1]] [[slow: 4]] [[after: the turn is over]] [[notified: the shell has ended]]"
  wait_for "1. Yes"
  press Enter
  sleep 3
  capture busy-background-turn-goes-on
  wait_for "● the turn is over" 30
  idle_then idle-background-shell-running
  for _ in $(seq 300); do [ -e "$wt/bg-done.txt" ] && break; sleep 0.1; done
  sleep 1.5
  capture busy-background-shell-ended
  wait_for "● the shell has ended" 30
  idle_then idle-background-shell-ended
  type_line "/exit"
  wait_dead 30
  sleep 0.5
  capture exited-after-exit
  tmux -S "$sock" kill-session -t cap

  # A narrow window: the spinner, the menu and the footer wrap.
  start_cli "$wt" 50
  wait_for "for shortcuts" 60
  sleep 1
  capture idle-narrow
  type_line "[[slow: 6]] [[say: a narrow one]]"
  wait_for "interrupt"
  sleep 1
  capture busy-narrow
  wait_gone "interrupt" 30
  sleep 1
  type_line "[[bash: touch narrow.txt]]"
  wait_for "1. Yes"
  sleep 0.5
  capture waiting-bash-menu-narrow
  press Escape
  sleep 1
  tmux -S "$sock" kill-session -t cap

  # The trust dialog: an untrusted folder.
  mkdir -p "$work/untrusted-$version"
  start_cli "$work/untrusted-$version" 120
  wait_for "trust" 60
  sleep 2
  capture waiting-trust-dialog
  tmux -S "$sock" kill-session -t cap
}

typed_part() { # a prompt typed over many lines (not sent) in every state it can meet
  # A turn's end by its Stop hook: 2.1.x drops "esc to interrupt" from the footer while
  # the box holds text, and a tall box can push the spinner off the screen.
  stops() { find "$work/hooks-$version" -name 'Stop.*.json' | wc -l; }
  wait_stop() { # wait_stop COUNT_BEFORE [SECONDS]
    for _ in $(seq $(( ${2:-60} * 10 ))); do
      [ "$(stops)" -gt "$1" ] && return 0
      sleep 0.1
    done
    echo "no Stop hook came" >&2
    screen >&2
    return 1
  }
  fresh_cli() { # fresh_cli COLUMNS: a new CLI in the session `cap`, ready for keys
    tmux -S "$sock" kill-session -t cap 2>/dev/null || true
    start_cli "$wt" "$1"
    wait_for "for shortcuts" 60
    sleep 1
  }
  local n
  fresh_cli 120
  tmux -S "$sock" send-keys -t cap:0 -l -- "[[slow: 6]] [[say: the long prompt ran]] "
  grow_box idle
  # Taller than the pane: 2.1.332 scrolls the box ("↑ N more" on its top border); older
  # releases let it grow until the input line and everything above scroll away, and the
  # screen alone cannot tell what the agent does (its hooks still do): "unknown" then.
  add_lines 29 45
  if screen | grep -qE '^(❯|[─━]+ ↑ [0-9]+ more )'; then
    capture idle-typed-taller-than-pane
  else
    capture unknown-typed-taller-than-pane
  fi
  fresh_cli 120
  tmux -S "$sock" send-keys -t cap:0 -l -- "[[slow: 6]] [[say: the long prompt ran]] "
  add_lines 1 28
  n=$(stops)
  tmux -S "$sock" send-keys -t cap:0 Enter
  wait_for "esc to interrupt"
  sleep 1
  capture busy-long-prompt-sent
  wait_stop "$n"
  sleep 1.5
  # Typed while a turn runs (no Enter: not queued either).
  n=$(stops)
  type_line "[[slow: 40]] [[say: the turn under a typed prompt ran]]"
  wait_for "esc to interrupt"
  grow_box busy
  wait_stop "$n"
  sleep 1.5
  capture idle-after-turn-typed-fills-pane

  # A menu that comes while a prompt is being typed: a queued prompt asks for a command
  # as the turn before it ends.
  fresh_cli 120
  type_line "[[slow: 12]] [[say: the turn before the menu]]"
  wait_for "esc to interrupt"
  type_line "[[bash: touch typed-menu.txt]]"
  add_lines 1 12
  wait_for "1. Yes" 40
  sleep 0.5
  capture waiting-bash-menu-typed-12-lines
  press Escape
  sleep 2
  capture idle-after-deny-typed-12-lines

  # A bracketed paste: some releases fold it into "[Pasted text #1 +N lines]".
  fresh_cli 120
  paste_lines 12
  capture idle-pasted-12-lines
  paste_lines 30
  capture idle-pasted-more
  tmux -S "$sock" kill-session -t cap

  # A narrow window: every typed line wraps.
  fresh_cli 50
  add_lines 1 6
  capture idle-typed-narrow
  add_lines 7 12
  capture idle-typed-narrow-12-lines
  fresh_cli 50
  n=$(stops)
  type_line "[[slow: 30]] [[say: narrow and typed]]"
  wait_for "interrupt"
  add_lines 1 6
  capture busy-typed-narrow
  add_lines 7 12
  capture busy-typed-narrow-12-lines
  wait_stop "$n"
  sleep 1.5
  capture idle-after-turn-typed-narrow
  tmux -S "$sock" kill-session -t cap
}

# The catalogue (tests/fixtures/screens/claude/catalogue.toml): every dialog and mode, each
# driven on a fresh CLI and captured at the four sizes of capture_sizes as
# <state>-<id>@<cols>x<rows>. A drive_<id> function gets the screen there and sets `proof`,
# the regular expressions every capture must match: a size at which the screen does not
# show what the entry says is not kept, and an entry whose screen never came is skipped
# for that release (both said on stderr and in $work/catalogue-report).
CATALOGUE=tests/fixtures/screens/claude/catalogue.toml

catalogue_entries() { # the id and state of each entry $version has and that is driven
  python3 - "$CATALOGUE" "$version" <<'PY2'
import sys, tomllib
key = lambda v: tuple(int(x) for x in v.split("."))
version = key(sys.argv[2])
for e in tomllib.load(open(sys.argv[1], "rb"))["entry"]:
    if e["drive"].startswith("not driven"):
        continue
    if key(e.get("since", "0")) <= version <= key(e.get("until", "999")):
        print(e["id"], e["state"])
PY2
}

cat_cli() { # cat_cli [NAME=VALUE…]: a fresh CLI of $version in `cap` (120x40), at its prompt
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  local envs=() a
  for a in "$@"; do envs+=(-e "$a"); done
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "${cat_dir:-$wt}" \
    -e HOME="$HOME" -e ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY" -e ANTHROPIC_BASE_URL="$ANTHROPIC_BASE_URL" \
    -e DISABLE_TELEMETRY=1 -e DISABLE_AUTOUPDATER=1 -e CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    "${envs[@]}" -- "$cli" --permission-mode default --settings "$work/settings-$version.json" "${cli_args[@]}"
  tmux -S "$sock" set-option -t cap remain-on-exit on
  [ -n "${cat_dir:-}" ] && return 0
  # The footer's hint (vim mode shows its own instead of the hint).
  wait_re 'for shortcuts|-- INSERT --|NORMAL' 60 || return 1
  # A CLI that has just drawn its box can still drop keys while it starts up (MCP servers,
  # plugins): give it the time a person takes to start typing.
  sleep 3
}
keys() { tmux -S "$sock" send-keys -t cap:0 "$@"; }
typed() { keys -l -- "$1"; sleep 1.5; } # text into the box, not sent
# shift+tab until the footer says MODE (the cycle's order changed between releases)
to_mode() { # to_mode TEXT
  local _
  for _ in 1 2 3 4 5 6; do
    screen | grep -qF -- "$1" && return 0
    keys BTab
    sleep 1
  done
  screen | grep -qF -- "$1"
}
ran() { wait_re "$1" 30 && wait_gone "esc to interrupt" 30 && sleep 1; } # a turn that ended

drive_permission_bash() { cat_cli && type_line "[[bash: touch catalogue-bash.txt]]" && wait_re '1\. Yes' && proof=('Bash|command' '1\. Yes'); }
drive_permission_edit() { cat_cli && type_line "[[edit: $wt/a.txt | old words | new words]]" && wait_re 'make this edit|Edit file' && proof=('make this|Edit file' '1\. Yes'); }
drive_permission_write() { cat_cli && type_line "[[write: $wt/new-file.txt | hello]]" && wait_re 'Do you want to create' && proof=('create|Create' '1\. Yes'); }
drive_permission_notebook_edit() { cat_cli && type_line "[[notebook: $wt/nb.ipynb | y = 2]]" && wait_re 'insert this cell|Edit notebook' && proof=('cell|notebook' '1\. Yes'); }
drive_permission_webfetch() { cat_cli && type_line "[[fetch: http://127.0.0.1:$port/page]]" && wait_re 'fetch this content' && proof=('[Ff]etch' '1\. Yes'); }
drive_permission_websearch() { cat_cli && type_line "[[search: tmux status line]]" && wait_re '1\. Yes' && proof=('[Ss]earch' '1\. Yes'); }
drive_permission_mcp() {
  cli_args=(--mcp-config "$work/mcp.json")
  cat_cli && type_line "[[mcp: orchestra note]]" && wait_re '1\. Yes' && proof=('orchestra' '1\. Yes')
  local ok=$?
  cli_args=()
  return $ok
}
drive_exit_plan_mode() { cat_cli && to_mode "plan mode on" && type_line "[[plan: 1. Read the code]]" && wait_re 'Would you like to proceed|Ready to code' && proof=('plan' '1\. Yes'); }
drive_exit_plan_mode_no_plan() { cat_cli && to_mode "plan mode on" && type_line "[[exitplan: x]]" && wait_re '[Ee]xit plan mode\?' && proof=('[Ee]xit plan mode' '1\. Yes'); }
drive_ask_single() { cat_cli && type_line "[[ask: Which way should I take?]]" && wait_for "Keep it small" && proof=('Keep it small|Refactor first|Write tests' 'Which way'); }
drive_ask_multi() { cat_cli && type_line "[[askmany: Which checks should run?]]" && wait_re '\[ \]' && proof=('\[ \]' 'Which checks'); }
drive_trust_dialog() {
  mkdir -p "$work/untrusted-$version"
  cat_dir=$work/untrusted-$version cat_cli
  cat_dir="" wait_re '[Tt]rust' 60 && sleep 2 && proof=('[Tt]rust' '❯')
}
drive_plan_mode() { cat_cli && to_mode "plan mode on" && proof=('plan mode on'); }
drive_plan_mode_busy() { cat_cli && to_mode "plan mode on" && type_line "[[slow: 20]] [[say: planned slowly]]" && wait_for interrupt && proof=('plan mode' 'interrupt'); }
drive_accept_edits_mode() { cat_cli && to_mode "accept edits on" && proof=('accept edits on'); }
drive_auto_mode() { cat_cli && to_mode "auto mode on" && proof=('auto mode on'); }
drive_bash_mode() { cat_cli && typed '!' && wait_re $'^!( |\xc2\xa0|$)' && proof=($'^!( |\xc2\xa0|$)'); }
vim_cli() { # vim mode: /vim where the release has it, else editorMode "vim" for this start
  cat_cli || return 1
  type_line "/vim"
  sleep 2
  if screen | grep -qiE 'editor mode set to vim|vim mode'; then
    return 0
  fi
  keys Escape
  vim_config
}
vim_config() { editor_mode vim && cat_cli; }
editor_mode() { # editor_mode vim|normal: the CLI's own setting in HOME/.claude.json
  python3 - "$HOME/.claude.json" "$1" <<'PY2'
import json, sys
conf = json.load(open(sys.argv[1]))
conf["editorMode"] = sys.argv[2]
json.dump(conf, open(sys.argv[1], "w"), indent=2)
PY2
}
drive_vim_mode_insert() { vim_cli && keys Escape && sleep 1 && keys i && wait_for "-- INSERT --" && proof=('-- INSERT --'); }
# Only where the footer says NORMAL: elsewhere vim's normal mode looks like the plain box.
drive_vim_mode_normal() { vim_cli && keys Escape && sleep 1 && keys i && wait_for "-- INSERT --" && keys Escape && wait_for "NORMAL" 5 && sleep 1 && proof=('NORMAL'); }
drive_slash_autocomplete() { cat_cli && typed '/' && wait_re '/[a-z][a-z-]+ {2,}[A-Z]' && proof=('/[a-z][a-z-]+ {2,}[A-Z]'); }
# 2.0.77 and 2.1.20 list nothing for a bare @ here (their file index finds no files in this
# worktree): "@a" lists what they have (agents, the MCP server, files).
at_list='(alpha|beta|gamma|delta|epsilon|zeta|theta)\.|agent-'
drive_at_autocomplete() {
  cat_cli && typed '@' || return 1
  wait_re "$at_list" 5 2>/dev/null || typed 'a'
  wait_re "$at_list" && proof=('@' "$at_list")
}
drive_shortcuts_panel() { cat_cli && typed '?' && wait_re 'for commands' && proof=('for commands'); }
drive_resume_picker() {
  cat_cli && type_line "[[say: an earlier conversation]]" && ran "an earlier conversation" || return 1
  cat_cli && type_line "/resume" && wait_re '[Rr]esume' && wait_re 'earlier conversation|say: an' && sleep 1 &&
    proof=('earlier conversation|say: an')
}
drive_model_picker() { cat_cli && type_line "/model" && wait_re '[Ss]elect model|Switch between' && sleep 1 && proof=('[Mm]odel' '(Default|Opus|Sonnet|Haiku)'); }
drive_permissions_panel() { cat_cli && type_line "/permissions" && wait_re 'Allow' && sleep 1 && proof=('[Pp]ermissions' 'Allow'); }
drive_long_reply_streaming() { cat_cli && type_line "[[long: 40]] [[slow: 40]]" && wait_for "Paragraph 3 " 30 && sleep 8 && proof=('Paragraph [0-9]+ of a long answer'); }
drive_queued_message() {
  cat_cli && type_line "[[slow: 20]] [[say: the first one ran]]" && wait_for interrupt &&
    type_line "[[say: the queued prompt ran]]" && sleep 1 && proof=('queued prompt ran' 'interrupt')
}
# 2.1.2xx compacts nothing under three turns ("Not enough messages to compact").
some_turns() { local n; for n in 1 2 3; do type_line "[[say: turn $n to compact]]" && ran "turn $n to compact" || return 1; done; }
drive_compacting() {
  cat_cli && some_turns &&
    type_line "/compact [[slow: 20]] [[say: the summary]]" && wait_re '[Cc]ompacting' && sleep 1 && proof=('[Cc]ompact')
}
drive_compacted() {
  cat_cli && some_turns &&
    type_line "/compact" && wait_re '[Cc]ompacted' 60 && wait_gone "esc to interrupt" && sleep 1 && proof=('[Cc]ompacted')
}
drive_background_task() {
  cat_cli && type_line "[[background: sleep 90 && touch catalogue-bg.txt]] [[after: started in the background]]" && wait_re '1\. Yes' &&
    press Enter && ran "● started in the background" && proof=('● started in the background' 'background|shell|bash')
}
drive_retrying() { cat_cli && type_line "[[error: 529]] [[fails: 8]] [[say: through at last]]" && wait_re 'attempt [4-9]/' 120 && proof=('Retrying|retrying' 'attempt [0-9]+/'); }
error_cli() { cat_cli CLAUDE_CODE_MAX_RETRIES=0; }
drive_login_401() { error_cli && type_line "[[error: 401]]" && wait_re '/login' 60 && wait_gone "esc to interrupt" && sleep 1 && proof=('401' 'login'); }
drive_rate_limit_429() { error_cli && type_line "[[error: 429]]" && wait_re 'API Error.*429|429.*rate' 60 && wait_gone "esc to interrupt" && sleep 1 && proof=('429|[Rr]ate limit'); }
# A subscriber's usage limit: a claude.ai login (an OAuth token, no API key) reads the
# 429's rate-limit headers; an API key's 429 is a plain rate limit.
drive_usage_limit() {
  cat_cli ANTHROPIC_API_KEY= CLAUDE_CODE_OAUTH_TOKEN=stand-in-oauth-token CLAUDE_CODE_MAX_RETRIES=0 &&
    type_line "[[limit: five_hour]]" && wait_re '[Uu]sage limit|limit · resets|resets [0-9]' 60 && wait_gone "esc to interrupt" && sleep 1 &&
    proof=('[Uu]sage limit|limit · resets|resets [0-9]')
}
drive_overloaded_529() { error_cli && type_line "[[error: 529]]" && wait_re 'API Error.*529|[Oo]verloaded' 60 && wait_gone "esc to interrupt" && sleep 1 && proof=('529|[Oo]verloaded'); }

catalogue_part() {
  local id state fn size file re missing report=$work/catalogue-report
  # What the drives use: a file to edit, a notebook, files for @ to list, an MCP server.
  printf 'old words here\n' > "$wt/a.txt"
  printf '%s\n' '{"cells": [{"cell_type": "code", "execution_count": null, "id": "c1", "metadata": {},' \
    '"outputs": [], "source": ["x = 1\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}' > "$wt/nb.ipynb"
  for f in alpha.txt beta.md gamma.py delta.rs epsilon.go zeta.sh eta.toml theta.json; do : > "$wt/$f"; done
  printf '{"mcpServers": {"orchestra": {"command": "python3", "args": ["%s"]}}}\n' "$FAKE/mcp_server.py" > "$work/mcp.json"
  cli_args=()
  TYPE_RETRIES=8
  while read -r id state; do
    [ -n "${ORCHESTRA_CATALOGUE_ONLY:-}" ] && [[ " $ORCHESTRA_CATALOGUE_ONLY " != *" $id "* ]] && continue
    # This entry's captures of an earlier run go, whatever comes of this one.
    rm -f "$out"/{busy,waiting,idle,error,exited,unknown}-"$id"@*
    fn=drive_${id//-/_}
    if ! declare -F "$fn" >/dev/null; then
      echo "capture-screens.sh: the catalogue entry $id has no $fn" >&2
      exit 2
    fi
    proof=()
    if ! "$fn" 2>"$work/drive.err" || [ ${#proof[@]} -eq 0 ]; then
      [[ $id == vim-* ]] && { tmux -S "$sock" kill-session -t cap 2>/dev/null || true; editor_mode normal; }
      echo "$version $id: skipped, its screen did not come: $(head -1 "$work/drive.err")" | tee -a "$report" >&2
      [ -n "${ORCHESTRA_CATALOGUE_DEBUG:-}" ] && cat "$work/drive.err" >&2
      continue
    fi
    capture_sizes "$state-$id"
    for size in "${CAPTURE_SIZES[@]}"; do
      file=$out/$state-$id@$size
      missing=""
      for re in "${proof[@]}"; do grep -qE -- "$re" "$file.txt" || missing+=" /$re/"; done
      if [ -n "$missing" ]; then
        rm -f "$file.txt" "$file.ansi"
        echo "$version $id@$size: not kept, the screen lacks$missing" | tee -a "$report" >&2
      fi
    done
    echo "$version $id: captured"
    keys Escape 2>/dev/null || true
    # /vim is remembered: the entries after must not start in vim mode.
    if [[ $id == vim-* ]]; then
      tmux -S "$sock" kill-session -t cap 2>/dev/null || true
      editor_mode normal
    fi
  done < <(catalogue_entries)
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  [ -f "$report" ] && cp "$report" "${ORCHESTRA_CATALOGUE_REPORT:-/tmp}/catalogue-report-$version.txt"
  return 0
}

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${MATRIX[@]}")
for v in "${versions[@]}"; do
  run_version "$v"
done
