# What the benchmarks share (bench/dispatch.sh, mcp.sh, sandbox.sh, compare.sh), sourced from the
# repository's root: `bench_setup PREFIX` sets `bin` (ORCHESTRA_BENCH_BIN, else a release
# build of this tree), `work` (a temporary folder, removed on exit), `sock` (a tmux server
# there with a session `bench`), `repo` (a generated repo of $files files, default 10,000),
# exports ORCHESTRA_HOME and ORCHESTRA_TMUX_SOCKET, and defines `ns` (the time in ns).
bench_setup() {
  files=${files:-10000}
  bin=${ORCHESTRA_BENCH_BIN:-}
  if [ -z "$bin" ]; then
    cargo build --release --quiet
    bin=${CARGO_TARGET_DIR:-$PWD/target}/release/orchestra
  fi
  work=$(mktemp -d "/tmp/$1.XXXXXX")
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
  git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m "$files files"
  tmux -S "$sock" -f /dev/null new-session -d -s bench

  export ORCHESTRA_HOME=$work/home ORCHESTRA_TMUX_SOCKET=$sock
  unset TMUX TMUX_PANE
  ns() { date +%s%N; }
}
