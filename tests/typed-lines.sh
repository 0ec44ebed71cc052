# Sourced by the capture scripts: a prompt a person types over many lines, not sent.
# Needs $sock (the capture's tmux socket, its CLI in the pane cap:0) and NEWLINE_KEYS, the
# send-keys arguments that start a new line in that CLI's input box without sending it.

# Lines FROM to TO, each after NEWLINE_KEYS, long enough to wrap at 50 columns.
add_lines() { # add_lines FROM TO
  local i key
  for i in $(seq "$1" "$2"); do
    if [ "$i" -gt 1 ]; then
      for key in "${NEWLINE_KEYS[@]}"; do
        tmux -S "$sock" send-keys -t cap:0 "$key"
        sleep 0.15
      done
    fi
    tmux -S "$sock" send-keys -t cap:0 -l -- "line $i: keep the old entries as they are and say why"
    sleep 0.2
  done
  sleep 1
}

# COUNT lines as one bracketed paste (as a terminal and orchestra's brief send them).
paste_lines() { # paste_lines COUNT
  local i text=""
  for i in $(seq "$1"); do text+="line $i: pasted, the old entries kept as they are"$'\n'; done
  printf '%s' "${text%$'\n'}" | tmux -S "$sock" load-buffer -b typed -
  tmux -S "$sock" paste-buffer -p -d -b typed -t cap:0
  sleep 1.5
}

# The box grown to 6, 12 and 28 lines, captured at each (the script's `capture`) as
# STATE-typed-6-lines, STATE-typed-12-lines and STATE-typed-fills-pane.
grow_box() { # grow_box STATE
  add_lines 1 6
  capture "$1-typed-6-lines"
  add_lines 7 12
  capture "$1-typed-12-lines"
  add_lines 13 28
  capture "$1-typed-fills-pane"
}

# A CLI whose box takes keys while a turn runs: the box grown while idle, the same while
# the turn of BUSY_PROMPT runs (BUSY_TEXT on screen then), and 12 lines pasted. Each in a
# CLI of its own, from the script's `fresh` (a new CLI in the session `cap`, ready for keys).
typed_idle_busy_pasted() { # typed_idle_busy_pasted BUSY_PROMPT BUSY_TEXT
  fresh
  grow_box idle
  fresh
  type_line "$1"
  wait_for "$2" 20
  grow_box busy
  fresh
  paste_lines 12
  capture idle-pasted-12-lines
  tmux -S "$sock" kill-session -t cap
}
