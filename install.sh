#!/usr/bin/env bash
# Build orchestra and install its binary into ~/.local/bin (or $PREFIX/bin). Idempotent:
# running it again rebuilds only what changed and replaces the binary in place.
#
#   ./install.sh                 # ~/.local/bin/orchestra
#   PREFIX=/usr/local ./install.sh
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "install.sh: $*" >&2; exit 2; }

command -v git >/dev/null 2>&1 || die "git is required"
command -v tmux >/dev/null 2>&1 || die "tmux 3.2 or newer is required (install it with your package manager)"
version=$(tmux -V | sed -E 's/^tmux (next-)?//')
major=${version%%.*}
minor=$(printf '%s' "${version#*.}" | sed -E 's/[^0-9].*//')
if [[ "$major" =~ ^[0-9]+$ ]] && { [ "$major" -lt 3 ] || { [ "$major" -eq 3 ] && [ "${minor:-0}" -lt 2 ]; }; }; then
  die "tmux $version is too old: orchestra needs tmux 3.2 or newer"
fi
command -v cargo >/dev/null 2>&1 || die "cargo is required to build orchestra (https://rustup.rs)"
# ssh2 needs OpenSSL. A system one (its development files, found by pkg-config, or
# Homebrew's on macOS, which openssl-sys finds by itself) saves the costliest part of a
# first build; without one, ssh2 builds its own, which takes perl and make.
# ORCHESTRA_BUNDLED_OPENSSL=1 builds the bundled one anyway.
features=
homebrew_openssl=
for dir in /opt/homebrew/opt/openssl@3 /usr/local/opt/openssl@3; do
  if [ "$(uname -s)" = Darwin ] && [ -d "$dir/include/openssl" ]; then homebrew_openssl=$dir; fi
done
if [ "${ORCHESTRA_BUNDLED_OPENSSL:-}" = 1 ]; then
  :
elif command -v pkg-config >/dev/null 2>&1 && pkg-config --exists openssl; then
  features=--no-default-features
  openssl="the system OpenSSL $(pkg-config --modversion openssl)"
elif [ -n "$homebrew_openssl" ]; then
  features=--no-default-features
  openssl="Homebrew's OpenSSL ($homebrew_openssl)"
fi
if [ -z "$features" ]; then
  command -v perl >/dev/null 2>&1 || die "perl is required to build the bundled OpenSSL (or install OpenSSL's development files and pkg-config)"
  command -v make >/dev/null 2>&1 || die "make is required to build the bundled OpenSSL (or install OpenSSL's development files and pkg-config)"
  openssl="OpenSSL built from source (no system OpenSSL found by pkg-config)"
fi

# The first build compiles about 240 units and bundled C (libgit2, SQLite, and OpenSSL
# unless the system's serves): say what that costs before it starts, and let cargo show
# its progress.
target=${CARGO_TARGET_DIR:-target}
if [ ! -x "$target/release/orchestra" ]; then
  echo "install.sh: building orchestra for the first time, with $openssl:"
  echo "            measured on a busy two-core machine, 8 CPU-minutes (30 minutes of wall time)"
  echo "            and 520 MB in $target/release with a system OpenSSL, 14 CPU-minutes and 590 MB"
  echo "            with the bundled one; later runs rebuild only what changed"
fi
# $features is one word or none: unquoted on purpose (no array: macOS's bash 3.2 with
# set -u refuses an empty one).
cargo build --release --locked $features
prefix=${PREFIX:-$HOME/.local}
mkdir -p "$prefix/bin"
# Copy then rename: a running orchestra (a status job) keeps its old file intact.
cp "$target/release/orchestra" "$prefix/bin/.orchestra.new"
mv -f "$prefix/bin/.orchestra.new" "$prefix/bin/orchestra"
echo "installed $("$prefix/bin/orchestra" --version) to $prefix/bin/orchestra"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on your PATH: add it (e.g. export PATH=\"$prefix/bin:\$PATH\" in ~/.profile)"
     echo "      before starting tmux; agents run \`orchestra done\` by name." ;;
esac
# The one status-line recipe (README's): the plugin turns #{orchestra_status} into the
# status job, and adds badges, hooks and keys.
cat <<CONF
To see every agent's state in tmux, add to ~/.tmux.conf:
    set -g status-right '#{orchestra_status} %H:%M'
    run-shell '$(pwd)/orchestra.tmux'
(with TPM: set -g @plugin '<what you would give git clone for this repository>'
 in place of the run-shell line, then prefix + I)
CONF
