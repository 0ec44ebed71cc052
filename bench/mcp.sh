#!/usr/bin/env bash
# Benchmark (issue 30): a dispatch through `orchestra mcp` (a tools/call to a server
# already initialized, as the orchestrator's is) against `orchestra dispatch` on the
# command line, alternating in one run on bench/dispatch.sh's repo of 10,000 files; then
# `list` at 64 sessions, the tool against `orchestra list --json`. Medians of each run's
# own ratio (a pair runs back to back, so a busy machine slows both sides alike).
#
#   bench/mcp.sh [RUNS]      (default 9; ORCHESTRA_BENCH_BIN=<binary> to skip the build)
# Target: dispatch through the server / the CLI <= 1.1.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
files=${BENCH_FILES:-10000}
. bench/lib.sh
bench_setup orchestra-bench-mcp

python3 - "$bin" "$repo" "$runs" "$files" <<'PY'
import json, statistics, subprocess, sys, time

bin, repo, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
agent = ["--agent", "sleep 600", "--kind", "generic"]
server = subprocess.Popen([bin, "mcp", "--repo", repo, "--session", "bench"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, bufsize=1)
ids = iter(range(1, 1 << 30))

def rpc(method, params):
    i = next(ids)
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    assert answer.get("id") == i and "result" in answer, answer
    return answer["result"]

def tool(name, args):
    t = time.perf_counter()
    result = rpc("tools/call", {"name": name, "arguments": args})
    spent = time.perf_counter() - t
    assert not result["isError"], result
    return spent

def cli(*args):
    t = time.perf_counter()
    subprocess.run([bin, *args], cwd=repo, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t

rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
made, ours, theirs, ratios = 0, [], [], []
for i in range(runs):
    # A-B, then B-A: every session made slows the next dispatch a little.
    sides = [("mcp", lambda: tool("dispatch", {"label": f"mcp-{i}", "prompt": "x", "agent": "sleep 600"})),
             ("cli", lambda: cli("dispatch", f"cli-{i}", "--prompt", "x", *agent))]
    got = dict((name, run()) for name, run in (sides if i % 2 == 0 else sides[::-1]))
    made += 2
    ours.append(got["mcp"]); theirs.append(got["cli"]); ratios.append(got["mcp"] / got["cli"])
while made < 64:
    cli("dispatch", f"more-{made}", "--prompt", "x", *agent)
    made += 1
l_ours, l_theirs, l_ratios = [], [], []
for i in range(runs):
    a = tool("list", {}); b = cli("list", "--json")
    l_ours.append(a); l_theirs.append(b); l_ratios.append(a / b)
server.stdin.close()
server.wait(timeout=30)
ms = lambda xs: statistics.median(xs) * 1000
print(f"dispatch into a repo of {int(sys.argv[4]):,} files, {runs} runs (median):")
print(f"  orchestra dispatch (CLI)            {ms(theirs):8.1f} ms")
print(f"  tools/call dispatch (orchestra mcp) {ms(ours):8.1f} ms")
print(f"  ratio                               {statistics.median(ratios):8.2f}x (target <= 1.10)")
print(f"list at {made} sessions, {runs} runs (median):")
print(f"  orchestra list --json (CLI)         {ms(l_theirs):8.1f} ms")
print(f"  tools/call list (orchestra mcp)     {ms(l_ours):8.1f} ms")
print(f"  ratio                               {statistics.median(l_ratios):8.2f}x")
PY
