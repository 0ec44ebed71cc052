# Sourced by the capture scripts (tests/capture-*.sh): what they share. The CLI under
# capture runs in the pane cap:0 of a tmux server of its own ($sock), against one of our
# API stand-ins (tests/fake-api/), in a work folder ($work) removed at exit.
#
#   . tests/capture-lib.sh
#   capture_init orchestra-capture          # $work, $sock, the cleanup trap, the server
#   start_standin anthropic.py              # $api_pid and $port
#   out=tests/fixtures/screens/claude/2.1.100   # where `capture` writes
#
# Needs $FAKE (the stand-ins' folder). A script may set WAIT_SECONDS (the default time
# wait_for and friends give, 30) before calling them.

capture_init() { # capture_init PREFIX: a fresh work folder, its tmux server, the trap
  work=$(mktemp -d "/tmp/${1:-orchestra-capture}.XXXXXX")
  sock=$work/sock
  trap capture_cleanup EXIT
  # A session of its own keeps the server up between runs (a restarting server races).
  tmux -S "$sock" -f /dev/null new-session -d -s keep
}

capture_cleanup() {
  # A CLI's relaunched node process can outlive its pane's hangup: end each pane's group.
  local pid
  for pid in $(tmux -S "$sock" list-panes -a -F '#{pane_pid}' 2>/dev/null); do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  tmux -S "$sock" kill-server 2>/dev/null || true
  [ -n "${api_pid:-}" ] && kill "$api_pid" 2>/dev/null
  [ -n "${mcp_pid:-}" ] && kill "$mcp_pid" 2>/dev/null
  # A hook of the CLI just killed may still write its file: once more after it.
  rm -rf "$work" 2>/dev/null || { sleep 1; rm -rf "$work"; }
  return 0
}

start_standin() { # start_standin SCRIPT [ARGS…]: one of tests/fake-api/, on a free port
  local script=$1
  shift
  python3 "$FAKE/$script" --port 0 --port-file "$work/port" --log "$work/requests.jsonl" "$@" &
  api_pid=$!
  for _ in $(seq 100); do [ -f "$work/port" ] && break; sleep 0.1; done
  if [ ! -f "$work/port" ]; then
    echo "capture: the stand-in $script did not start" >&2
    exit 1
  fi
  port=$(cat "$work/port")
}

screen() { tmux -S "$sock" capture-pane -p -t cap:0; }

capture() { # capture NAME: $out/NAME.txt (plain) and $out/NAME.ansi (with escapes)
  screen > "$out/$1.txt"
  tmux -S "$sock" capture-pane -p -e -t cap:0 > "$out/$1.ansi"
}

# The sizes every catalogue screen is captured at: wide, the usual, the classic terminal,
# and narrow-but-tall (menus and footers wrap).
CAPTURE_SIZES=(200x50 120x40 80x24 50x30)

# ORCHESTRA_CATALOGUE_ONLY="id …": only these catalogue entries are captured.
wanted() { # wanted STATE-ID…: whether any of these entries is to be captured this run
  local e
  [ -z "${ORCHESTRA_CATALOGUE_ONLY:-}" ] && return 0
  for e; do [[ " $ORCHESTRA_CATALOGUE_ONLY " == *" ${e#*-} "* ]] && return 0; done
  return 1
}

capture_sizes() { # capture_sizes NAME: NAME@COLSxROWS at each of CAPTURE_SIZES (a
  # catalogue entry not wanted this run: nothing)
  local size cols rows before
  wanted "$1" || return 0
  before=$(tmux -S "$sock" display-message -p -t cap:0 '#{window_width}x#{window_height}')
  for size in "${CAPTURE_SIZES[@]}"; do
    cols=${size%x*} rows=${size#*x}
    tmux -S "$sock" resize-window -t cap:0 -x "$cols" -y "$rows"
    # The CLI redraws on SIGWINCH; give it the time a person's terminal would. Some
    # (gemini 0.20) clear the screen first and redraw a moment later: a blank screen is
    # no screen of theirs, so wait (5 s at most) until something is drawn again.
    sleep "${CAPTURE_SETTLE:-0.7}"
    for _ in $(seq 25); do screen | grep -q '[^[:space:]]' && break; sleep 0.2; done
    capture "$1@${cols}x${rows}"
  done
  tmux -S "$sock" resize-window -t cap:0 -x "${before%x*}" -y "${before#*x}"
  sleep "${CAPTURE_SETTLE:-0.7}"
}

wait_for() { # wait_for TEXT [SECONDS]
  for _ in $(seq $(( ${2:-${WAIT_SECONDS:-30}} * 10 ))); do
    screen | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  echo "timed out waiting for: $1" >&2
  screen >&2
  return 1
}

wait_re() { # wait_re REGEX [SECONDS]: an extended regular expression, for texts that
  # differ between releases
  for _ in $(seq $(( ${2:-${WAIT_SECONDS:-30}} * 10 ))); do
    screen | grep -qE -- "$1" && return 0
    sleep 0.1
  done
  echo "timed out waiting for: /$1/" >&2
  screen >&2
  return 1
}

wait_gone() { # wait_gone TEXT [SECONDS]
  for _ in $(seq $(( ${2:-${WAIT_SECONDS:-30}} * 10 ))); do
    screen | grep -qF -- "$1" || return 0
    sleep 0.1
  done
  echo "timed out waiting for this to go: $1" >&2
  screen >&2
  return 1
}

wait_dead() { # wait_dead [SECONDS]: the CLI in cap:0 has exited (remain-on-exit keeps it)
  for _ in $(seq $(( ${1:-${WAIT_SECONDS:-30}} * 10 ))); do
    [ "$(tmux -S "$sock" display-message -p -t cap:0 '#{pane_dead}')" = 1 ] && return 0
    sleep 0.1
  done
  echo "the CLI did not exit" >&2
  return 1
}

# The CLIs ignore keys for a moment after they draw a menu (against stray presses).
press() { sleep 1; tmux -S "$sock" send-keys -t cap:0 "$@"; }
