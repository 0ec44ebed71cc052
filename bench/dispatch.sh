#!/usr/bin/env bash
# Benchmark: `orchestra dispatch` against doing its core by hand (`git worktree add -b`
# plus `tmux new-window`), side by side in one run on a generated repo of 10,000 files.
# Runs alternate so machine noise hits both alike; medians are compared.
#
#   bench/dispatch.sh [RUNS]      (default 9)
# Target: ratio <= 1.3.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
files=${BENCH_FILES:-10000}

cargo build --release --quiet
bin=$PWD/target/release/orchestra
work=$(mktemp -d /tmp/orchestra-bench.XXXXXX)
sock=$work/tmux.sock
cleanup() { tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

repo=$work/repo
mkdir -p "$repo"
git -C "$repo" init -q -b main
python3 - "$repo" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, f"src/mod{i // 100:03d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"file{i:05d}.rs"), "w") as f:
        f.write(f"// file {i}\npub fn f{i}() -> u32 {{ {i} }}\n" * 20)
PY
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m "10k files"
tmux -S "$sock" -f /dev/null new-session -d -s bench

export ORCHESTRA_HOME=$work/home ORCHESTRA_TMUX_SOCKET=$sock
unset TMUX TMUX_PANE
ns() { date +%s%N; }
by_hand=() ; ours=()
for i in $(seq 1 "$runs"); do
  t0=$(ns)
  git -C "$repo" worktree add -q -b "manual/run-$i" "$work/manual/run-$i" HEAD
  tmux -S "$sock" new-window -d -t bench: -c "$work/manual/run-$i" -n "run-$i" 'sleep 600'
  t1=$(ns)
  (cd "$repo" && "$bin" dispatch "run-$i" --agent 'sleep 600' --kind generic >/dev/null)
  t2=$(ns)
  by_hand+=($(( (t1 - t0) / 1000 )))
  ours+=($(( (t2 - t1) / 1000 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m_hand=$(median "${by_hand[@]}")
m_ours=$(median "${ours[@]}")
printf 'dispatch into a repo of %d files, %d runs (median):\n' "$files" "$runs"
awk -v hand="$m_hand" -v ours="$m_ours" 'BEGIN {
  printf "  git worktree add + tmux new-window  %8.1f ms\n", hand / 1000
  printf "  orchestra dispatch                  %8.1f ms\n", ours / 1000
  printf "  ratio                               %8.2fx (target <= 1.30)\n", ours / hand
}'
