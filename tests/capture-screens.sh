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
input_line() { # the line of the input box: the one under its top border
  screen | grep -E -A1 '^(─|━){8,}' | grep '^❯' | tail -1
}
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.5
  tmux -S "$sock" send-keys -t cap:0 Enter
  # Under load the CLI can drop an Enter: the text stays in the input box. Once more then.
  local head=${1:0:20}
  for _ in 1 2 3; do
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
    *) echo "capture-screens.sh: ORCHESTRA_SCREENS_PART is all or typed" >&2; exit 2 ;;
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

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${MATRIX[@]}")
for v in "${versions[@]}"; do
  run_version "$v"
done
