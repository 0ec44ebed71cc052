#!/usr/bin/env python3
"""A throwaway HOME in which the real `gemini` CLI starts straight at its prompt, offline.

A first start of the CLI asks how to sign in, checks npm for updates and sends usage
statistics. This writes HOME/.gemini/settings.json with the API key chosen as the way in,
updates and statistics off, and a theme picked; existing settings in the file are kept.
Folders are not trusted here: a folder the CLI has not been told to trust shows its real
"Do you trust the files in this folder?" dialog (orchestra trusts its own worktrees with
GEMINI_CLI_TRUST_WORKSPACE).

    python3 gemini_home.py HOME [--port PORT --print-env]

--print-env prints `export NAME=value` lines (shell-quoted) with the environment the CLI
needs to run in HOME against the stand-in (gemini.py) on 127.0.0.1:PORT.
"""

import argparse
import json
import os
import shlex

# Any key does: the stand-in accepts every key.
API_KEY = "AIza-orchestra-stand-in-" + "0" * 15


def settings(path):
    try:
        with open(path) as f:
            conf = json.load(f)
    except (OSError, ValueError):
        conf = {}
    if not isinstance(conf, dict):
        conf = {}

    def section(name):
        value = conf.get(name)
        if not isinstance(value, dict):
            value = conf[name] = {}
        return value

    security = section("security")
    auth = security.get("auth") if isinstance(security.get("auth"), dict) else {}
    auth["selectedType"] = "gemini-api-key"
    security["auth"] = auth
    general = section("general")
    general["enableAutoUpdate"] = False
    general["enableAutoUpdateNotification"] = False
    section("privacy")["usageStatisticsEnabled"] = False
    section("telemetry")["enabled"] = False
    section("ui").setdefault("theme", "Default")
    return conf


def environment(home, port):
    env = {"HOME": os.path.realpath(home), "GEMINI_API_KEY": API_KEY}
    if port:
        env["GOOGLE_GEMINI_BASE_URL"] = f"http://127.0.0.1:{port}"
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("home", help="the folder to use as HOME (made if missing)")
    ap.add_argument("--port", type=int, help="the stand-in's port (for --print-env)")
    ap.add_argument("--print-env", action="store_true", help="print the environment as export lines")
    args = ap.parse_args()
    folder = os.path.join(args.home, ".gemini")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "settings.json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(settings(path), f, indent=2)
    os.replace(tmp, path)
    if args.print_env:
        for name, value in environment(args.home, args.port).items():
            print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
