#!/usr/bin/env bash
# The TPM entry point: find (or build) the orchestra binary, then let it set up tmux.
# TPM discards this script's output, so problems are reported with display-message.
set -u
plugin_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { tmux display-message -d 8000 "orchestra: $*"; }

version=$(tmux -V | sed -E 's/^tmux (next-)?//')
major=${version%%.*}
minor=$(printf '%s' "${version#*.}" | sed -E 's/[^0-9].*//')
if [[ "$major" =~ ^[0-9]+$ ]] && { [ "$major" -lt 3 ] || { [ "$major" -eq 3 ] && [ "${minor:-0}" -lt 2 ]; }; }; then
  say "tmux $version is too old: orchestra needs tmux 3.2 or newer"
  exit 0
fi

wanted=$(sed -n 's/^version = "\(.*\)"/\1/p' "$plugin_dir/Cargo.toml" | head -n 1)
# Whether dotted version $1 is at least $2, in bash alone: `sort -V` is GNU's (and
# FreeBSD's), not every macOS's or BusyBox's.
at_least() {
  local IFS=. have wanted i a b
  read -r -a have <<<"$1"
  read -r -a wanted <<<"$2"
  for ((i = 0; i < ${#have[@]} || i < ${#wanted[@]}; i++)); do
    a=${have[i]:-0} b=${wanted[i]:-0}
    a=${a%%[!0-9]*} b=${b%%[!0-9]*}
    [ "${a:-0}" -gt "${b:-0}" ] && return 0
    [ "${a:-0}" -lt "${b:-0}" ] && return 1
  done
  return 0
}
find_binary() {
  local candidate
  for candidate in "$(command -v orchestra 2>/dev/null)" "$plugin_dir/target/release/orchestra"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    # A binary older than this checkout is rebuilt, not used.
    have=$("$candidate" --version 2>/dev/null | awk '{print $2}')
    [ -n "$have" ] || continue
    at_least "$have" "$wanted" || continue
    printf '%s\n' "$candidate"
    return 0
  done
  return 1
}

if ! bin=$(find_binary); then
  if ! command -v cargo >/dev/null 2>&1; then
    say "no orchestra $wanted binary and no cargo to build it: see $plugin_dir/README.md"
    exit 0
  fi
  say "building orchestra $wanted (a popup shows the build; reload tmux when it is done)"
  tmux display-popup -E -w 80% -h 60% -T " building orchestra " \
    "cd '$plugin_dir' && PREFIX=\"\$HOME/.local\" ./install.sh; echo; echo 'Done: press Enter, then reload tmux (prefix + I or source your tmux.conf).'; read -r _" \
    2>/dev/null || (cd "$plugin_dir" && ./install.sh >/dev/null 2>&1 &)
  exit 0
fi

if ! out=$("$bin" tmux init 2>&1); then
  say "$out"
fi
