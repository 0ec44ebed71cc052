#!/usr/bin/env bash
# The one test command (README, CI): installs what the tests need when it is missing,
# then runs cargo fmt --check, clippy, cargo deny (deny.toml) and the whole suite, then
# (ORCHESTRA_NEWEST=1 or CI) the newest-release report, then the tmux matrix (the
# plugin-side groups on each tmux release in the cache; README "Tested on").
#
#   tests/run.sh                 # everything
#   tests/run.sh dispatch::      # extra arguments go to the test filter (no matrix)
#   ORCHESTRA_TMUX_MATRIX="3.5a" tests/run.sh   # the matrix's releases (empty: none)
#   ORCHESTRA_NEWEST=1 tests/run.sh   # also the newest-release report (always on CI)
#
# The pinned Claude CLI releases, gemini, codex, opencode, aider and cargo-deny are
# installed once into $ORCHESTRA_TEST_CACHE (default ~/.cache/orchestra-test), outside the
# clone, and reused.
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
need_cmd bwrap bubblewrap
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
# opencode (issue 26): its npm package's install script links the platform package's
# native binary (the baseline build on CPUs without AVX2) as bin/opencode.exe, which
# tests/it/opencode.rs runs. A failed install only warns, except on CI.
OPENCODE_VERSION=1.18.33
opencode_dir="$CACHE/opencode-$OPENCODE_VERSION"
opencode="$opencode_dir/node_modules/opencode-ai/bin/opencode.exe"
if [ ! -x "$opencode" ]; then
  say "installing opencode $OPENCODE_VERSION into $opencode_dir"
  mkdir -p "$opencode_dir"
  if ! timeout 900 npm install --prefix "$opencode_dir" --no-audit --no-fund --loglevel=error \
    "opencode-ai@$OPENCODE_VERSION" >/dev/null || [ ! -x "$opencode" ]; then
    echo "tests/run.sh: opencode $OPENCODE_VERSION could not be installed into $opencode_dir" >&2
    [ "${CI:-}" != true ] || exit 1
  fi
fi
# Its package says the version: even `opencode --version` makes its folders in HOME.
[ ! -x "$opencode" ] ||
  say "opencode $(node -p "require('$opencode_dir/node_modules/opencode-ai/package.json').version")"
say "$("$CACHE/aider-$AIDER_VERSION/bin/aider" --version)"
say "$(tmux -V), $(git --version)"

say "cargo fmt --check"
cargo fmt --all -- --check
say "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The dependency tree's licences, duplicate versions and sources against deny.toml, with
# cargo-deny pinned and built once into the cache (8.4 CPU-minutes: 16 minutes on two
# cores shared with other builds).
# Advisories are not checked: their database is on a git host CI cannot reach, and no
# registry it reaches ships a copy (README "Project habits").
CARGO_DENY_VERSION=0.20.2
deny_root="$CACHE/cargo-deny-$CARGO_DENY_VERSION"
if [ ! -x "$deny_root/bin/cargo-deny" ]; then
  say "installing cargo-deny $CARGO_DENY_VERSION into $deny_root (minutes, once)"
  # A target dir of its own, removed after; the cache gets the whole install or nothing.
  deny_build=$(mktemp -d)
  rm -rf "$deny_root.partial"
  if ! timeout 2400 cargo install --locked --quiet "cargo-deny@$CARGO_DENY_VERSION" \
    --root "$deny_root.partial" --target-dir "$deny_build"; then
    rm -rf "$deny_build" "$deny_root.partial"
    echo "tests/run.sh: cargo-deny $CARGO_DENY_VERSION could not be installed" >&2
    exit 1
  fi
  rm -rf "$deny_build"
  mv "$deny_root.partial" "$deny_root"
fi
say "cargo deny check licenses bans sources ($("$deny_root/bin/cargo-deny" --version))"
PATH="$deny_root/bin:$PATH" cargo deny --locked check licenses bans sources
# The tmux matrix (README "Tested on"): each release in $CACHE/tmux-<release>, built from
# Debian's source package when missing (a private apt configuration under $CACHE/apt: the
# machine's own sources stay as they are). 3.2a and 3.4 are not in Debian's suites, and
# the suites that list 3.6b, 3.7c and 3.8 did not serve their files when this was written:
# those run when built by hand into the cache (README), and are skipped otherwise.
TMUX_MATRIX=${ORCHESTRA_TMUX_MATRIX-3.2a 3.4 3.5a 3.6b 3.7c 3.8}
TMUX_BY_HAND=" 3.2a 3.4 3.6b 3.7c 3.8 "
# The tests that drive tmux's plugin side: TPM load, status interpolation, badges, menus,
# popups, the person harness, merge in a popup, pane hooks, refresh and the status line.
TMUX_GROUPS=(plugin:: status:: markup:: radar:: health:: notify:: merge::merge_in_a_popup
  tasks::the_menu_offers popups::)
apt_dir="$CACHE/apt"
private_apt=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -qq)
# As root, apt's download sandbox user cannot read the cache's folder: download as root.
[ "$(id -u)" -ne 0 ] || private_apt+=(-o APT::Sandbox::User=root)
private_apt_ready=""
private_apt_update() {
  [ -n "$private_apt_ready" ] && return 0
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  local suite mirror
  # The Debian archive this machine's own apt uses (its first URI ending in /debian):
  # the private lists add source suites of it, never another host.
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | head -n 1 | tr -d ' ')
  if [ -z "$mirror" ]; then
    echo "tests/run.sh: no Debian archive in this machine's apt sources to take tmux's sources from" >&2
    return 1
  fi
  : >"$apt_dir/sources.list"
  for suite in bullseye bookworm bookworm-backports trixie trixie-backports sid; do
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror%/} $suite main" \
      >>"$apt_dir/sources.list"
  done
  apt-get "${private_apt[@]}" update
  private_apt_ready=1
}
build_tmux() { # build_tmux RELEASE: $CACHE/tmux-RELEASE/bin/tmux from Debian's source
  local release=$1 prefix="$CACHE/tmux-$1" version work
  [ -x "$prefix/bin/tmux" ] && return 0
  case "$TMUX_BY_HAND" in *" $release "*) return 1 ;; esac
  need_cmd dpkg-source dpkg-dev
  need_cmd bison bison
  need_cmd pkg-config pkg-config
  need_cmd make make
  dpkg -s libevent-dev >/dev/null 2>&1 || apt_install libevent-dev
  dpkg -s libncurses-dev >/dev/null 2>&1 || apt_install libncurses-dev
  private_apt_update
  version=$(apt-cache "${private_apt[@]}" showsrc tmux | awk '/^Version:/ {print $2}' |
    grep -E "^$release-" | sort -V | tail -n 1)
  if [ -z "$version" ]; then
    echo "tests/run.sh: Debian's suites list no source of tmux $release" >&2
    return 1
  fi
  work=$(mktemp -d)
  say "building tmux $release (Debian's $version) into $prefix"
  if ! (cd "$work" && apt-get "${private_apt[@]}" source --download-only "tmux=$version" >/dev/null 2>&1 &&
    tar -xzf "tmux_$release.orig.tar.gz" && cd "tmux-$release" &&
    ./configure --prefix="$prefix" >/dev/null && make -j"$(nproc)" >/dev/null 2>&1 && make install >/dev/null); then
    echo "tests/run.sh: tmux $release (Debian's $version) could not be fetched or built" >&2
    rm -rf "$work" "$prefix"
    return 1
  fi
  rm -rf "$work"
}

# The oldest release refused at load (plugin::a_tmux_older_than_3_2_is_refused…).
build_tmux 3.1c || true

say "cargo test"
# Each test runs its own tmux server and often a real claude: two per core is plenty.
cargo test --workspace --quiet -- --test-threads="${ORCHESTRA_TEST_THREADS:-4}" "$@"

# The newest published release of each agent CLI against the pinned one
# (tests/newest-release.sh): with ORCHESTRA_NEWEST=1, and on CI, as a report only. Its
# status never fails the run; each of the five CLIs has ORCHESTRA_NEWEST_BUDGET seconds
# (420 here), the whole report at most 35 minutes. When every newest release is the pinned
# one it takes seconds.
if [ $# -eq 0 ] && { [ "${ORCHESTRA_NEWEST:-}" = 1 ] || [ "${CI:-}" = true ]; }; then
  say "newest releases (a report: it does not fail the run)"
  newest_start=$(date +%s)
  ORCHESTRA_NEWEST_BUDGET=${ORCHESTRA_NEWEST_BUDGET:-420} timeout 2100 tests/newest-release.sh 2>&1 |
    sed 's/^/    /' || true
  say "newest releases: $(($(date +%s) - newest_start))s"
fi

# The matrix runs with the whole suite (a filter given runs only the suite), release
# groups side by side where the machine has the cores (one group per two).
if [ $# -eq 0 ] && [ -n "$TMUX_MATRIX" ]; then
  missing=()
  ready=()
  for release in $TMUX_MATRIX; do
    if build_tmux "$release"; then
      ready+=("$release")
    else
      missing+=("$release")
    fi
  done
  jobs=$(($(nproc) / 2))
  [ "$jobs" -ge 1 ] || jobs=1
  logs=$(mktemp -d)
  failed=()
  running=0
  for release in "${ready[@]}"; do
    bin="$CACHE/tmux-$release/bin"
    say "tmux $release: ${TMUX_GROUPS[*]}"
    (
      start=$(date +%s)
      rc=0
      PATH="$bin:$PATH" ORCHESTRA_TEST_TMUX="$bin/tmux" cargo test --quiet --test it -- \
        --test-threads="${ORCHESTRA_TEST_THREADS:-4}" "${TMUX_GROUPS[@]}" >"$logs/$release" 2>&1 || rc=$?
      echo "tmux $release: $(($(date +%s) - start))s" >>"$logs/$release"
      exit $rc
    ) &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  done
  wait || true
  group_passed() { grep -q '^test result: ok' "$logs/$1" && ! grep -q 'FAILED' "$logs/$1"; }
  for release in "${ready[@]}"; do
    group_passed "$release" && continue
    # A shared two-core machine makes a timing-bound test miss now and then: a release's
    # groups get one more run, alone, and both runs' output is kept when that fails too.
    say "tmux $release: failed once, running its groups again alone"
    mv "$logs/$release" "$logs/$release.first"
    bin="$CACHE/tmux-$release/bin"
    start=$(date +%s)
    PATH="$bin:$PATH" ORCHESTRA_TEST_TMUX="$bin/tmux" cargo test --quiet --test it -- \
      --test-threads="${ORCHESTRA_TEST_THREADS:-4}" "${TMUX_GROUPS[@]}" >"$logs/$release" 2>&1 || true
    echo "tmux $release: $(($(date +%s) - start))s (second run)" >>"$logs/$release"
    group_passed "$release" || cat "$logs/$release.first"
  done
  for release in "${ready[@]}"; do
    if group_passed "$release"; then
      say "$(tail -n 1 "$logs/$release"), $(grep '^test result' "$logs/$release")"
    else
      cat "$logs/$release"
      failed+=("$release")
    fi
  done
  rm -rf "$logs"
  for release in "${missing[@]}"; do
    case "$TMUX_BY_HAND" in
      *" $release "*) say "tmux $release: not in the cache (not served by Debian; README: by hand)" ;;
      *) say "tmux $release: MISSING (Debian's source could not be fetched or built)" ;;
    esac
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "tests/run.sh: the plugin groups failed on tmux ${failed[*]}" >&2
    exit 1
  fi
  if [ "${CI:-}" = true ]; then
    for release in "${missing[@]}"; do
      case "$TMUX_BY_HAND" in
        *" $release "*) ;;
        *)
          echo "tests/run.sh: tmux $release is missing from the matrix" >&2
          exit 1
          ;;
      esac
    done
  fi
fi
