#!/usr/bin/env python3
"""A throwaway HOME in which the real `claude` CLI starts straight at its prompt, offline.

A first start of the CLI shows a theme picker and onboarding, asks whether to use an API
key from the environment, and (per folder) whether to trust it. This writes HOME/.claude.json
with onboarding done, the stand-in's key accepted and each --trust folder trusted; a folder
left out still gets the real trust dialog. Existing settings in the file are kept.

    python3 claude_home.py HOME --trust DIR [--trust DIR…] [--port PORT --print-env]

--print-env prints `export NAME=value` lines (shell-quoted) with the environment the CLI
needs to run in HOME against the stand-in on 127.0.0.1:PORT.
"""

import argparse
import json
import os
import shlex

# Any well-formed key does: the stand-in accepts every key.
API_KEY = "sk-ant-api03-orchestra-stand-in-" + "0" * 64


def settings(path, trust):
    try:
        with open(path) as f:
            conf = json.load(f)
    except (OSError, ValueError):
        conf = {}
    if not isinstance(conf, dict):
        conf = {}
    conf["hasCompletedOnboarding"] = True
    conf["theme"] = "dark"
    conf["autoUpdates"] = False
    # The CLI remembers a person's answer about a key by the key's last 20 characters.
    answers = conf.setdefault("customApiKeyResponses", {})
    approved = answers.setdefault("approved", [])
    answers.setdefault("rejected", [])
    if API_KEY[-20:] not in approved:
        approved.append(API_KEY[-20:])
    projects = conf.setdefault("projects", {})
    for folder in trust:
        # The CLI looks folders up by their real path.
        projects.setdefault(os.path.realpath(folder), {})["hasTrustDialogAccepted"] = True
    return conf


def environment(home, port):
    env = {
        "HOME": os.path.realpath(home),
        "ANTHROPIC_API_KEY": API_KEY,
        # Nothing may leave the machine: no telemetry, update checks or other extra calls.
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    if port:
        env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("home", help="the folder to use as HOME (made if missing)")
    ap.add_argument("--trust", action="append", default=[], metavar="DIR", help="a folder the CLI trusts")
    ap.add_argument("--port", type=int, help="the stand-in's port (for --print-env)")
    ap.add_argument("--print-env", action="store_true", help="print the environment as export lines")
    args = ap.parse_args()
    os.makedirs(args.home, exist_ok=True)
    path = os.path.join(args.home, ".claude.json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(settings(path, args.trust), f, indent=2)
    os.replace(tmp, path)
    if args.print_env:
        for name, value in environment(args.home, args.port).items():
            print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
