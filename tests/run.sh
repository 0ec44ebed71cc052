#!/usr/bin/env bash
# The one test command (README, CI): installs what the tests need when it is missing,
# then runs cargo fmt --check, clippy and the whole suite.
#
#   tests/run.sh                 # everything
#   tests/run.sh dispatch::      # extra arguments go to the test filter
#
# The pinned Claude CLI releases and aider are installed once into $ORCHESTRA_TEST_CACHE
# (default ~/.cache/orchestra-test), outside the clone, and reused.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_VERSION=2.1.332
CLAUDE_OLD_VERSION=2.0.77
AIDER_VERSION=0.86.2
# The middle of the release matrix (tests/it/matrix.rs): a 2.1 whose screens differ.
CLAUDE_MID_VERSION=2.1.100
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
export ORCHESTRA_TEST_CACHE=$CACHE

say() { printf '==> %s\n' "$*"; }

apt_updated=""
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: missing $*, and no apt-get to install it with" >&2
    exit 2
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ -z "$apt_updated" ]; then
    $sudo apt-get update -qq
    apt_updated=1
  fi
  say "installing $*"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

need_cmd() { # need_cmd COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || apt_install "$2"
}

need_cmd tmux tmux
need_cmd git git
need_cmd python3 python3
need_cmd npm npm
need_cmd node nodejs
# Remote hosts: a real sshd on loopback, ssh-keygen for its throwaway keys, and the
# OpenSSH client for `transport = "openssh"` hosts (orchestra connect).
[ -x /usr/sbin/sshd ] || apt_install openssh-server
need_cmd ssh-keygen openssh-client
need_cmd ssh openssh-client
# The ssh2 crate builds OpenSSL from source (vendored): it needs perl and make.
need_cmd perl perl
need_cmd make make
need_cmd dbus-daemon dbus
# The notification stand-in is a few lines of python3-dbus (Debian's python3).
/usr/bin/python3 -c 'import dbus, gi' 2>/dev/null || apt_install python3-dbus python3-gi

install_claude() { # install_claude VERSION
  local dir="$CACHE/claude-$1"
  if [ ! -e "$dir/node_modules/@anthropic-ai/claude-code/package.json" ]; then
    say "installing the Claude CLI $1 into $dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@$1" >/dev/null
  fi
}
install_claude "$CLAUDE_VERSION"
install_claude "$CLAUDE_OLD_VERSION"
# aider from PyPI in a venv of its own (aider-chat wants Python 3.10–3.12; its
# dependencies take a few hundred MB and minutes to install, once).
install_aider() { # install_aider VERSION
  local dir="$CACHE/aider-$1"
  if [ ! -x "$dir/bin/aider" ]; then
    python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
    say "installing aider $1 into $dir"
    python3 -m venv "$dir"
    timeout 1800 "$dir/bin/pip" install --quiet --disable-pip-version-check "aider-chat==$1"
  fi
}
install_aider "$AIDER_VERSION"
install_claude "$CLAUDE_MID_VERSION"
claude="$CACHE/claude-$CLAUDE_VERSION/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
if [ ! -x "$claude" ]; then
  echo "tests/run.sh: the Claude CLI binary is missing at $claude" >&2
  exit 1
fi
say "claude $("$claude" --version)"
# The Gemini CLI, pinned: tests/it/gemini.rs runs it against tests/fake-api/gemini.py.
GEMINI_VERSION=0.61.0
gemini_dir="$CACHE/gemini-$GEMINI_VERSION"
if [ ! -e "$gemini_dir/node_modules/@google/gemini-cli/package.json" ]; then
  say "installing the Gemini CLI $GEMINI_VERSION into $gemini_dir"
  mkdir -p "$gemini_dir"
  npm install --prefix "$gemini_dir" --no-audit --no-fund --loglevel=error \
    "@google/gemini-cli@$GEMINI_VERSION" >/dev/null
fi
# Its package says the version: `gemini --version` would write into ~/.gemini.
say "gemini $(node -p "require('$gemini_dir/node_modules/@google/gemini-cli/package.json').version")"
# The codex CLI (tests/it/codex.rs): its npm package ships the native binary.
CODEX_VERSION=0.171.0
codex_dir="$CACHE/codex-$CODEX_VERSION"
codex="$codex_dir/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
if [ ! -x "$codex" ]; then
  say "installing the codex CLI $CODEX_VERSION into $codex_dir"
  mkdir -p "$codex_dir"
  npm install --prefix "$codex_dir" --no-audit --no-fund --loglevel=error \
    "@openai/codex@$CODEX_VERSION" >/dev/null
fi
say "$("$codex" --version)"
say "$("$CACHE/aider-$AIDER_VERSION/bin/aider" --version)"
say "$(tmux -V), $(git --version)"

say "cargo fmt --check"
cargo fmt --all -- --check
say "cargo clippy"
cargo clippy --all-targets --quiet -- -D warnings
say "cargo test"
# Each test runs its own tmux server and often a real claude: two per core is plenty.
cargo test --quiet -- --test-threads="${ORCHESTRA_TEST_THREADS:-4}" "$@"
