#!/usr/bin/env bash
# Captures real screens of aider (the pinned release, against the Chat Completions
# stand-in) in each state, as classifier fixtures:
# tests/fixtures/screens/aider/<version>/<state>-<what>.txt (plain) and .ansi (with
# escapes, `capture-pane -e`). The first word of a name is the state the screen shows.
#
#   tests/capture-aider-screens.sh
#   ORCHESTRA_SCREENS_PART=typed tests/capture-aider-screens.sh   # only prompts typed over lines
#   ORCHESTRA_SCREENS_PART=catalogue tests/capture-aider-screens.sh
#     # only the catalogue's entries, each at four sizes (<state>-<id>@<cols>x<rows>)
# Needs what tests/run.sh installs. The fixtures are committed; rerun when the release changes.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
FAKE=${ORCHESTRA_FAKE_API:-$PWD/tests/fake-api}
AIDER_VERSION=${AIDER_VERSION:-0.86.2}
aider=$CACHE/aider-$AIDER_VERSION/bin/aider
out=${ORCHESTRA_SCREENS_OUT:-$PWD/tests/fixtures/screens/aider}/$AIDER_VERSION
[ -x "$aider" ] || { echo "no aider at $aider (tests/run.sh installs it)" >&2; exit 2; }

. tests/capture-lib.sh
capture_init orchestra-capture-aider
start_standin openai_chat.py
last_line() { screen | grep -v '^[[:space:]]*$' | tail -n 1; }
wait_line() { # wait_line REGEX [SECONDS]: a line matching (grep -E)
  for _ in $(seq $(( ${2:-30} * 10 ))); do
    screen | grep -qE -- "$1" && return 0
    sleep 0.1
  done
  echo "timed out waiting for a line: $1" >&2
  screen >&2
  return 1
}
# aider's prompt is the last line: "> " (with the files in the chat on the lines above).
wait_prompt() { # wait_prompt [SECONDS]
  for _ in $(seq $(( ${1:-60} * 10 ))); do
    [ "$(last_line)" = ">" ] && return 0
    sleep 0.1
  done
  echo "timed out waiting for the prompt" >&2
  screen >&2
  return 1
}
type_line() {
  tmux -S "$sock" send-keys -t cap:0 -l -- "$1"
  sleep 0.3
  tmux -S "$sock" send-keys -t cap:0 Enter
}
start() { # start REPO [ARGS...]: aider in a new session "cap", in REPO
  local repo=$1; shift
  tmux -S "$sock" -f /dev/null new-session -d -s cap -x 120 -y 40 -c "$repo" \
    -e HOME="$HOME" -e LITELLM_LOCAL_MODEL_COST_MAP=True -- "$aider" "$@"
  # The pane stays when aider exits: the screen a person then sees.
  tmux -S "$sock" set-option -w -t cap:0 remain-on-exit on
}
new_repo() { # new_repo DIR
  mkdir -p "$1"
  git -C "$1" init -q
  git -C "$1" config user.name Test
  git -C "$1" config user.email test@example.com
  echo hello > "$1/README.md"
  git -C "$1" add README.md
  git -C "$1" commit -q -m initial
}

part=${ORCHESTRA_SCREENS_PART:-all}
mkdir -p "$out"
case "$part" in
  all) rm -f "$out"/*.txt "$out"/*.ansi ;;
  catalogue) ;; # catalogue_part clears what it takes
esac
eval "$(python3 "$FAKE/aider_home.py" "$work/home" --port "$port" --print-env)"
export HOME

# A prompt typed over many lines: meta-Enter starts a new line at aider's prompt.
NEWLINE_KEYS=(M-Enter)
. tests/typed-lines.sh
fresh() { # a new aider in the session `cap`, at its prompt
  tmux -S "$sock" kill-session -t cap 2>/dev/null || true
  start "$work/typed"
  wait_prompt 90
  sleep 0.5
}
# No box while a turn runs (aider reads no prompt then): idle and pasted only.
typed_part() { # a prompt typed over many lines (not sent), and pasted
  new_repo "$work/typed"
  fresh
  grow_box idle
  fresh
  paste_lines 12
  capture idle-pasted-12-lines
  tmux -S "$sock" kill-session -t cap
}
if [ "$part" = typed ]; then
  typed_part
  echo "captured typed prompts of aider $AIDER_VERSION into $out"
  exit 0
fi

# The catalogue (tests/fixtures/screens/aider/catalogue.toml), entry by entry.
CATALOGUE_WHAT="aider $AIDER_VERSION"
SETTLE=0.5
. tests/capture-catalogue.sh
at_prompt() { # at_prompt STATE-ID [SECONDS]: captured at aider's prompt
  if wait_prompt "${2:-30}" 2>/dev/null; then
    sleep 0.5
    capture_sizes "$1"
  else
    missed+=("$1")
    return 1
  fi
}
catalogue_part() {
  catalogue_clear
  local repo=$work/catalogue
  new_repo "$work/catalogue-fresh"
  start "$work/catalogue-fresh" --gitignore
  entry waiting-gitignore-question "Add .aider* to .gitignore" 90 || true
  tmux -S "$sock" kill-session -t cap

  new_repo "$repo"
  start "$repo" --detect-urls
  at_prompt idle-start 90 || true
  type_line "[[slow: 8]] [[say: Done.]]"
  entry busy-waiting-spinner "Waiting for" 10 || true
  wait_prompt 30 || true
  type_line "[[slow: 15]] [[say: one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen]]"
  wait_line "^one two three" 20 && sleep 1 && capture_sizes busy-streaming || missed+=(busy-streaming)
  at_prompt idle-after-turn || true

  type_line "[[bash: sleep 6; echo ran-by-aider]] [[say: Running it.]]"
  entry waiting-shell-command "Run shell command?" && type_line y
  entry busy-running-command "Running sleep" 10 || true
  entry waiting-command-output "Add command output to the chat?" && type_line n
  at_prompt idle-after-command || true

  type_line "[[write: notes/new-file.txt | hello from aider]] [[say: Writing it.]]"
  entry waiting-new-file "Create new file?" && type_line n
  at_prompt idle-after-deny || true
  # A file of the repo named in the prompt: aider offers to add it. Then an edit of a
  # file the chat does not hold: aider asks before editing it.
  type_line "[[write: README.md | goodbye from aider]] [[say: Editing it.]]"
  entry waiting-add-mentioned-file "Add file to the chat?" && type_line n
  entry waiting-edit-file-not-in-chat "Allow edits to" 10 && type_line n
  wait_prompt 20 || true
  # A URL in the prompt: aider offers to scrape it into the chat.
  type_line "Look at http://127.0.0.1:9/page please [[say: Looked.]]"
  entry waiting-add-url "Add URL to the chat?" && type_line n
  wait_prompt 20 || true

  type_line "[[error: 400]]"
  entry error-api-400 "BadRequestError" 30 || true
  wait_prompt 20 || true
  type_line "[[error: 429]]"
  entry busy-retrying-429 "Retrying in" 30 || true
  press C-c
  at_prompt error-rate-limit-429-interrupted 20 || true
  type_line "[[error: 500]]"
  entry busy-retrying-500 "Retrying in" 30 || true
  press C-c
  at_prompt error-api-500-interrupted 20 || true

  # What a person opens at the prompt: the command completions, the ask and architect
  # chat modes (their prompts say the mode).
  tmux -S "$sock" send-keys -t cap:0 -l /ad
  sleep 0.5
  tmux -S "$sock" send-keys -t cap:0 Tab
  entry idle-slash-autocomplete "/add" 5 || true
  press C-u
  sleep 0.5
  type_line "/chat-mode ask"
  entry idle-ask-mode "ask>" 10 || true
  type_line "/chat-mode architect"
  entry idle-architect-mode "architect>" 10 || true
  type_line "/chat-mode code"
  wait_prompt 10 || true

  type_line "/exit"
  entry exited-after-exit "Pane is dead" 30 || true
  tmux -S "$sock" kill-session -t cap
  missed_entries
}
if [ "$part" = catalogue ]; then
  catalogue_part
  echo "captured the catalogue of aider $AIDER_VERSION into $out"
  exit 0
fi

# A repository whose .gitignore does not name aider's files: aider asks first thing
# (the sandbox's config says --no-gitignore; the command line turns it back on).
new_repo "$work/fresh"
start "$work/fresh" --gitignore
wait_for "Add .aider* to .gitignore" 90
sleep 0.5
capture waiting-gitignore-question
tmux -S "$sock" kill-session -t cap

new_repo "$work/repo"
start "$work/repo"
wait_prompt 90
sleep 0.5
capture idle-start

# The spinner while no token has come yet, then the answer streaming in.
type_line "[[slow: 6]] [[say: Done.]]"
wait_for "Waiting for" 10
sleep 0.5
capture busy-waiting-spinner
wait_prompt 30
type_line "[[slow: 10]] [[say: one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen]]"
# The answer's first words (the prompt above has them too, not at a line's start).
wait_line "^one two three" 20
sleep 1
capture busy-streaming
wait_prompt 30
sleep 0.5
capture idle-after-turn

# A shell command the answer suggests: aider asks before running it, and again before
# adding its output to the chat.
type_line "[[bash: sleep 3; echo ran-by-aider]] [[say: Running it.]]"
wait_for "Run shell command?" 20
sleep 0.5
capture waiting-shell-command
type_line y
wait_for "Running sleep" 10
sleep 0.5
capture busy-running-command
wait_for "Add command output to the chat?" 20
sleep 0.5
capture waiting-command-output
type_line n
wait_prompt 20
sleep 0.5
capture idle-after-command

# A new file: aider asks before creating it.
type_line "[[write: notes/new-file.txt | hello from aider]] [[say: Writing it.]]"
wait_for "Create new file?" 20
sleep 0.5
capture waiting-new-file
type_line n
wait_prompt 20
sleep 0.5
capture idle-after-deny

# The question's words in the answer's prose are not a question.
type_line "[[say: The question reads: Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: and I am quoting it.]]"
wait_for "quoting it" 20
wait_prompt 20
sleep 0.5
capture idle-quoted-question

# Files in the chat are listed above the prompt.
type_line "/add README.md"
wait_for "Added README.md" 20
sleep 1
capture idle-files-in-chat
type_line "/drop"
wait_prompt 20

# An error aider does not retry ends the turn at once.
type_line "[[error: 400]]"
wait_for "BadRequestError" 30
wait_prompt 20
sleep 0.5
capture error-api-400
# One it retries (for about a minute): busy while it waits to retry; interrupted, the
# turn ends with the errors as its output.
type_line "[[error: 500]]"
wait_for "Retrying in 1.0 seconds" 30
sleep 0.5
capture busy-retrying
tmux -S "$sock" send-keys -t cap:0 C-c
wait_prompt 20
sleep 0.5
capture error-api-500-interrupted

# A turn after an error is a turn like any other.
type_line "[[say: Back again.]]"
wait_for "Back again" 20
wait_prompt 20
sleep 0.5
capture idle-after-error

type_line "/exit"
wait_for "Pane is dead" 30
sleep 0.5
capture exited-after-exit
tmux -S "$sock" kill-session -t cap
typed_part
catalogue_part
echo "captured aider $AIDER_VERSION into $out"
