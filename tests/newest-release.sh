#!/usr/bin/env bash
# The newest published release of each agent CLI, against the pinned one: installs it into
# the test cache when missing, captures the catalogue's screens on it (into a temporary
# folder), reads each with the built `orchestra classify`, prints every screen the newest
# release shows that reads differently from the pinned release's fixture of the same entry
# and size, then runs that CLI's live walk (busy → waiting → idle → error → exited) on it.
# A release that changes the screen shows up the day it is published.
#
#   tests/newest-release.sh                  # claude codex gemini opencode aider
#   tests/newest-release.sh gemini aider     # some of them
#   ORCHESTRA_NEWEST_BUDGET=300 tests/newest-release.sh   # seconds per CLI (default 600)
#   ORCHESTRA_NEWEST_CODEX=0.110.0 tests/newest-release.sh codex   # that release instead
#
# When the newest release is the pinned one it says so and moves on: the pinned release's
# fixtures and tests already prove it. Exit status: 0 when every newest release read as its
# pinned one did and its walk passed, 1 otherwise (tests/run.sh prints it as a report and
# ignores the status).
set -uo pipefail
cd "$(dirname "$0")/.."
CACHE=${ORCHESTRA_TEST_CACHE:-$HOME/.cache/orchestra-test}
export ORCHESTRA_TEST_CACHE=$CACHE
BUDGET=${ORCHESTRA_NEWEST_BUDGET:-600}
target=${CARGO_TARGET_DIR:-$PWD/target}
orchestra=$target/debug/orchestra

say() { printf '==> %s\n' "$*"; }

# The pinned releases are the ones tests/run.sh installs: read from it, one place.
pinned_of() { # pinned_of claude|codex|gemini|opencode|aider
  local var
  var=$(printf '%s_VERSION' "$1" | tr '[:lower:]' '[:upper:]')
  sed -n "s/^$var=\([0-9][0-9.]*\)$/\1/p" tests/run.sh | head -n 1
}

newest_of() { # newest_of AGENT: the newest published release, or nothing
  case $1 in
    claude) timeout 60 npm view @anthropic-ai/claude-code version 2>/dev/null ;;
    codex) timeout 60 npm view @openai/codex version 2>/dev/null ;;
    gemini) timeout 60 npm view @google/gemini-cli version 2>/dev/null ;;
    opencode) timeout 60 npm view opencode-ai version 2>/dev/null ;;
    # "aider-chat (0.86.2)" is pip's first line.
    aider) timeout 60 python3 -m pip index versions aider-chat 2>/dev/null |
      sed -n '1s/^aider-chat (\([^)]*\)).*/\1/p' ;;
  esac
}

npm_package() { # npm_package AGENT
  case $1 in
    claude) echo @anthropic-ai/claude-code ;;
    codex) echo @openai/codex ;;
    gemini) echo @google/gemini-cli ;;
    opencode) echo opencode-ai ;;
  esac
}

cli_path() { # cli_path AGENT VERSION: the file its tests run (ORCHESTRA_TEST_<AGENT>)
  local dir=$CACHE/$1-$2
  case $1 in
    claude) echo "$dir/node_modules/.bin/claude" ;;
    codex) find "$dir/node_modules/@openai/codex-linux-x64/vendor" -type f -name codex 2>/dev/null | head -n 1 ;;
    gemini) echo "$dir/node_modules/.bin/gemini" ;;
    # The native binary its install script links: the name tells orchestra the kind.
    opencode) echo "$dir/node_modules/opencode-ai/bin/opencode.exe" ;;
    aider) echo "$dir/bin/aider" ;;
  esac
}

install_release() { # install_release AGENT VERSION SECONDS
  local dir=$CACHE/$1-$2
  [ -e "$(cli_path "$1" "$2")" ] && return 0
  say "$1: installing $2 into $dir"
  if [ "$1" = aider ]; then
    python3 -m venv "$dir" &&
      timeout "$3" "$dir/bin/pip" install --quiet --disable-pip-version-check "aider-chat==$2"
  else
    mkdir -p "$dir" &&
      timeout "$3" npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$(npm_package "$1")@$2" >/dev/null
  fi
}

capture_release() { # capture_release AGENT VERSION OUT SECONDS: the catalogue's screens into OUT/VERSION
  local env=(ORCHESTRA_SCREENS_OUT="$3" ORCHESTRA_SCREENS_PART=catalogue)
  case $1 in
    claude) env "${env[@]}" timeout "$4" tests/capture-screens.sh "$2" ;;
    codex) env "${env[@]}" CODEX_VERSION="$2" timeout "$4" tests/capture-codex-screens.sh ;;
    gemini) env "${env[@]}" GEMINI_VERSION="$2" timeout "$4" tests/capture-gemini-screens.sh ;;
    opencode) env "${env[@]}" OPENCODE_VERSION="$2" timeout "$4" tests/capture-opencode-screens.sh ;;
    aider) env "${env[@]}" AIDER_VERSION="$2" timeout "$4" tests/capture-aider-screens.sh ;;
  esac
}

read_screen() { # read_screen AGENT FILE: the state orchestra reads
  "$orchestra" classify --kind "$1" "$2" 2>/dev/null || echo "(classify failed)"
}

walk_release() { # walk_release AGENT CLI SECONDS: its live tests, on that CLI
  local var filter
  var=ORCHESTRA_TEST_$(echo "$1" | tr '[:lower:]' '[:upper:]')
  # The tests that run the CLI through busy, waiting, idle, error and exited (not the ones
  # that read the pinned release's fixtures: those say nothing of this release).
  case $1 in
    claude) filter=(health::hooks_report_the_real_agents_states health::screens_alone_report_the_real_agents_states) ;;
    codex) filter=(codex::a_codex_session_is_busy_then_idle codex::codex_approvals_wait_and_approve
      codex::a_failing_api_makes_a_codex_session_error_and_quit) ;;
    gemini) filter=(gemini::a_dispatched_gemini_is_busy_then_idle gemini::gemini_approvals_wait_and_approve
      gemini::a_gemini_api_error_reads_as_error gemini::with_no_hooks_gemini_is_read_from_its_screen) ;;
    opencode) filter=(opencode::a_dispatched_opencode_walks_busy_waiting_idle_error_exited_by_its_plugin) ;;
    aider) filter=(aider::a_dispatched_aider_is_busy_then_idle aider::aider_asks_before_a_command
      aider::an_api_error_is_an_error_exiting_is_exited) ;;
  esac
  env "$var=$2" timeout "$3" cargo test --quiet --test it -- --test-threads=2 "${filter[@]}"
}

agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(claude codex gemini opencode aider)
for agent in "${agents[@]}"; do
  case $agent in
    claude | codex | gemini | opencode | aider) ;;
    *) echo "newest-release.sh: no agent $agent (claude, codex, gemini, opencode or aider)" >&2; exit 2 ;;
  esac
done

built=""
build_once() { # the orchestra binary the reads and walks use, built when first needed
  [ -n "$built" ] && return 0
  cargo build --quiet 2>&1 && built=1
}
failed=()
summary=()
work=$(mktemp -d /tmp/orchestra-newest.XXXXXX)
trap 'rm -rf "$work"' EXIT
for agent in "${agents[@]}"; do
  started=$(date +%s)
  deadline=$((started + BUDGET))
  left() { local n=$((deadline - $(date +%s))); [ "$n" -gt 10 ] && echo "$n" || echo 10; }
  pinned=$(pinned_of "$agent")
  # ORCHESTRA_NEWEST_<AGENT>=<release> compares that release instead (one not newest).
  override=ORCHESTRA_NEWEST_$(echo "$agent" | tr '[:lower:]' '[:upper:]')
  newest=${!override:-$(newest_of "$agent")}
  if [ -z "$newest" ]; then
    say "$agent: the newest release could not be looked up (pinned $pinned)"
    summary+=("$agent: newest unknown, pinned $pinned")
    failed+=("$agent")
    continue
  fi
  if [ "$newest" = "$pinned" ]; then
    say "$agent: newest = pinned ($pinned)"
    summary+=("$agent: newest = pinned ($pinned)")
    continue
  fi
  say "$agent: newest $newest, pinned $pinned"
  if ! build_once; then
    summary+=("$agent $newest: orchestra did not build")
    failed+=("$agent")
    continue
  fi
  if ! install_release "$agent" "$newest" "$(left)"; then
    say "$agent: $newest could not be installed"
    summary+=("$agent $newest: not installed")
    failed+=("$agent")
    continue
  fi
  out=$work/$agent
  mkdir -p "$out"
  capture_release "$agent" "$newest" "$out" "$(left)" >"$work/$agent-capture.log" 2>&1
  captured_rc=$?
  grep -E 'not shown:|timed out' "$work/$agent-capture.log" | sed "s/^/  /"
  [ "$captured_rc" -eq 0 ] || tail -n 5 "$work/$agent-capture.log" | sed "s/^/  /"
  differ=0 screens=0
  printf '  %-40s %-9s %-10s %-10s\n' entry size pinned "newest"
  for file in "$out/$newest"/*@*.txt; do
    [ -e "$file" ] || continue
    screens=$((screens + 1))
    name=$(basename "$file" .txt)
    entry=${name%@*} size=${name#*@}
    fixture=tests/fixtures/screens/$agent/$pinned/$name.txt
    now=$(read_screen "$agent" "$file")
    if [ -f "$fixture" ]; then
      was=$(read_screen "$agent" "$fixture")
    else
      was="(none)"
    fi
    # A screen reads differently when its read is not the pinned one's, or not the state
    # its name says (the pinned fixture may be missing: an entry new in this release).
    if [ "$now" != "$was" ] || [ "$now" != "${entry%%-*}" ]; then
      printf '  %-40s %-9s %-10s %-10s\n' "$entry" "$size" "$was" "$now"
      differ=$((differ + 1))
    fi
  done
  walk=passed
  if [ "$(printf '%s\n%s\n' "$newest" "$pinned" | sort -V | head -n 1)" = "$newest" ]; then
    # The harness writes the pinned release's settings: an older release misreads them
    # (gemini 0.20.0 then updates itself into the global npm folder). Its screens are
    # compared above; its walk is not run.
    walk="not run (older than pinned)"
  else
    walk_release "$agent" "$(cli_path "$agent" "$newest")" "$(left)" >"$work/$agent-walk.log" 2>&1 || walk=FAILED
    [ "$walk" != FAILED ] || grep -E '^test .*FAILED|^test result|panicked' "$work/$agent-walk.log" | head -n 20 | sed 's/^/  /'
  fi
  line="$agent $newest (pinned $pinned): $screens screens, $differ read differently"
  [ "$captured_rc" -eq 0 ] || line+=", capture stopped (status $captured_rc)"
  line+=", live walk $walk, $(($(date +%s) - started))s"
  say "$line"
  summary+=("$line")
  { [ "$differ" -eq 0 ] && [ "$walk" != FAILED ] && [ "$captured_rc" -eq 0 ]; } || failed+=("$agent")
done
say "newest releases:"
printf '  %s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ]
