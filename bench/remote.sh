#!/usr/bin/env bash
# Benchmark: refreshing N agent windows on a remote host (a real sshd on 127.0.0.1) with
# `orchestra refresh --remote` (one SSH connection, one exec for the whole host) against
# the per-window way of a shell poller: one `ssh host tmux capture-pane` per window, with
# a fresh connection each time and with OpenSSH connection sharing (ControlMaster).
# Then the openssh transport (`transport = "openssh"`, a master `orchestra connect` opened):
# one refresh over the master against one `ssh` per window over the same master (target:
# <= 0.5x at 8 windows, and flat in windows).
# Side by side in one run, at 8 and 32 windows; medians and ratios.
#
#   bench/remote.sh [RUNS]      (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/orchestra
work=$(mktemp -d /tmp/orchestra-bench-remote.XXXXXX)
cleanup() {
  [ -f "$work/sshd.pid" ] && kill "$(cat "$work/sshd.pid")" 2>/dev/null || true
  ssh -S "$work/cm" -O exit x 2>/dev/null || true
  for s in "$work"/state/ssh/*; do [ -S "$s" ] && ssh -S "$s" -O exit x 2>/dev/null; done || true
  TMUX_TMPDIR=$work/remote-tmux tmux kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/home/.ssh" "$work/remote-tmux" "$work/remote-home" "$work/project"
ssh-keygen -q -t ed25519 -N '' -f "$work/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$work/userkey"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
user=$(id -un)
echo "environment=\"TMUX_TMPDIR=$work/remote-tmux\",environment=\"HOME=$work/remote-home\" $(cut -d' ' -f1,2 "$work/userkey.pub")" > "$work/authorized_keys"
cat > "$work/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $work/hostkey
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitUserEnvironment yes
StrictModes no
UsePAM no
PidFile $work/sshd.pid
MaxStartups 200
MaxSessions 200
CFG
mkdir -p /run/sshd
/usr/sbin/sshd -f "$work/sshd_config" -E "$work/sshd.log"
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$work/hostkey.pub")" > "$work/home/.ssh/known_hosts"

repo=$work/repo
git init -q -b main "$repo"
git -C "$repo" -c user.name=b -c user.email=b@localhost commit -q --allow-empty -m init
export ORCHESTRA_HOME=$work/state HOME=$work/home
unset TMUX TMUX_PANE SSH_AUTH_SOCK
ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ssh_opts=(-p "$port" -i "$work/userkey" -o BatchMode=yes -o UserKnownHostsFile="$work/home/.ssh/known_hosts")

manifest() { # manifest N [TRANSPORT]
  {
    printf '[orchestrator]\nagent = "cat"\n\n[hosts.gpu]\naddress = "%s@127.0.0.1:%s"\nidentity = "%s"\ntransport = "%s"\n\n' "$user" "$port" "$work/userkey" "${2:-ssh2}"
    for i in $(seq 1 "$1"); do
      printf '[sessions.w%s]\nhost = "gpu"\npath = "%s"\ntmux = "bench"\n\n' "$i" "$work/project"
    done
  } > "$repo/orchestra.toml"
}

panes() { TMUX_TMPDIR=$work/remote-tmux tmux list-panes -a -F '#{pane_id}'; }
per_window_fresh() {
  for p in $(panes); do ssh "${ssh_opts[@]}" "$user@127.0.0.1" tmux capture-pane -p -t "$p" >/dev/null; done
}
per_window_shared() {
  for p in $(panes); do ssh "${ssh_opts[@]}" -S "$work/cm" "$user@127.0.0.1" tmux capture-pane -p -t "$p" >/dev/null; done
}
ssh "${ssh_opts[@]}" -M -S "$work/cm" -fN "$user@127.0.0.1"

printf '%-8s %14s %14s %7s %14s %7s\n' windows "ssh per window" orchestra ratio "shared ssh" ratio
for n in 8 32; do
  manifest "$n"
  (cd "$repo" && "$bin" up >/dev/null)
  "$bin" refresh --remote >/dev/null
  fresh=(); ours=(); shared=()
  for _ in $(seq 1 "$runs"); do
    t0=$(ns); per_window_fresh; t1=$(ns); "$bin" refresh --remote >/dev/null; t2=$(ns); per_window_shared; t3=$(ns)
    fresh+=($(( (t1 - t0) / 1000 ))); ours+=($(( (t2 - t1) / 1000 ))); shared+=($(( (t3 - t2) / 1000 )))
  done
  f=$(median "${fresh[@]}"); o=$(median "${ours[@]}"); s=$(median "${shared[@]}")
  printf '%-8s %12sms %12sms %6sx %12sms %6sx\n' "$n" $((f / 1000)) $((o / 1000)) \
    "$(awk -v a="$f" -v b="$o" 'BEGIN{printf "%.1f", a/b}')" $((s / 1000)) \
    "$(awk -v a="$s" -v b="$o" 'BEGIN{printf "%.1f", a/b}')"
  (cd "$repo" && "$bin" down --wait 1 >/dev/null)
done

# The openssh transport: every call rides the master `orchestra connect` opened, as does
# the per-window poller (its socket, `-o ControlMaster=no`).
manifest 8 openssh
(cd "$repo" && "$bin" connect gpu --persist 10m >/dev/null)
master=$(ls -d "$ORCHESTRA_HOME"/ssh/*)
per_window_master() {
  for p in $(panes); do
    ssh "${ssh_opts[@]}" -S "$master" -o ControlMaster=no "$user@127.0.0.1" tmux capture-pane -p -t "$p" >/dev/null
  done
}
printf '\nopenssh transport (one master):\n'
printf '%-8s %22s %14s %7s\n' windows "ssh per window (master)" orchestra ratio
for n in 8 32; do
  manifest "$n" openssh
  (cd "$repo" && "$bin" up >/dev/null)
  "$bin" refresh --remote >/dev/null
  per=(); ours=()
  for _ in $(seq 1 "$runs"); do
    t0=$(ns); per_window_master; t1=$(ns); "$bin" refresh --remote >/dev/null; t2=$(ns)
    per+=($(( (t1 - t0) / 1000 ))); ours+=($(( (t2 - t1) / 1000 )))
  done
  p=$(median "${per[@]}"); o=$(median "${ours[@]}")
  printf '%-8s %20sms %12sms %6sx\n' "$n" $((p / 1000)) $((o / 1000)) \
    "$(awk -v a="$o" -v b="$p" 'BEGIN{printf "%.2f", a/b}')"
  (cd "$repo" && "$bin" down --wait 1 >/dev/null)
done
(cd "$repo" && "$bin" connect gpu --close >/dev/null)
