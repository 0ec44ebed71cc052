# Sourced by the capture scripts after tests/capture-lib.sh: their `catalogue` part, which
# drives each entry of tests/fixtures/screens/<agent>/catalogue.toml and captures it at
# every size (capture_sizes) as <state>-<id>@<cols>x<rows>. An entry a release does not
# show (its text never comes) is said on stderr and left out: never a screen under a name
# it does not show.
#
# Needs CATALOGUE_WHAT ("gemini 0.61.0": who says what is missing). ENTRY_WAIT names the
# function that waits for an entry's text (wait_for unless a script sets it), SETTLE the
# seconds between the text showing and the capture (1 unless set). With
# ORCHESTRA_CATALOGUE_ONLY="id …" only those entries are captured (the others are still
# driven where the screens lead into each other, but not kept: capture_sizes skips them).

missed=()

catalogue_clear() { # the captures of the entries this run takes, from $out
  local f id
  for f in "$out"/*@*.txt "$out"/*@*.ansi; do
    [ -e "$f" ] || continue
    id=${f##*/}
    wanted "${id%@*}" && rm -f "$f"
  done
  return 0
}

entry() { # entry STATE-ID WAIT_TEXT [SECONDS]: captured when WAIT_TEXT shows
  if "${ENTRY_WAIT:-wait_for}" "$2" "${3:-20}" >/dev/null 2>&1; then
    sleep "${SETTLE:-1}"
    capture_sizes "$1"
  else
    echo "$CATALOGUE_WHAT: $1 not shown (no \"$2\")" >&2
    missed+=("$1")
    return 1
  fi
}

missed_entries() { # what the catalogue part could not capture, on stderr
  [ ${#missed[@]} -eq 0 ] || echo "$CATALOGUE_WHAT: not shown: ${missed[*]}" >&2
}
