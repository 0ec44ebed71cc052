#!/usr/bin/env python3
"""A throwaway HOME in which the real `opencode` TUI starts at its prompt against anthropic.py, offline.

opencode reads its user config from XDG_CONFIG_HOME/opencode/opencode.json and keeps its
data (the SQLite database of sessions, messages and parts; logs; snapshots) under
XDG_DATA_HOME/opencode. This writes the config: the `anthropic` provider pointed at the
stand-in (options.baseURL, options.apiKey) with one model described in full, since with
OPENCODE_DISABLE_MODELS_FETCH it knows no model of its own; that model also as the small
model (titles), so no request names a real model; updates and sharing off.

    python3 opencode_home.py HOME --port PORT [--ask] [--print-env]

--ask makes bash and edit (write, edit, patch) ask first: the permission dialog shows
(opencode's default lets both run). --print-env prints `export NAME=value` lines
(shell-quoted): HOME, the XDG folders inside it, and the switches that keep it off the
network.
"""

import argparse
import json
import os
import shlex

MODEL = "claude-stand-in"
API_KEY = "sk-ant-api03-orchestra-stand-in-" + "0" * 64


def config(port, ask):
    conf = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"anthropic/{MODEL}",
        "small_model": f"anthropic/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "anthropic": {
                "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": API_KEY},
                "models": {
                    MODEL: {
                        "name": "Claude stand-in",
                        "tool_call": True,
                        "attachment": False,
                        "reasoning": False,
                        "temperature": True,
                        "cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
                        "limit": {"context": 200000, "output": 8192},
                    }
                },
            }
        },
    }
    if ask:
        conf["permission"] = {"bash": "ask", "edit": "ask"}
    return conf


def environment(home):
    home = os.path.realpath(home)
    return {
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        # Nothing may leave the machine: the models.dev catalogue, the self-update, share
        # links, language servers downloaded on first use of a file type.
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        # No ~/.claude skills or CLAUDE.md of the machine's person read into the prompt.
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("home", help="the folder to use as HOME (made if missing)")
    ap.add_argument("--port", type=int, required=True, help="the stand-in's port")
    ap.add_argument("--ask", action="store_true", help="bash and edit ask for permission first")
    ap.add_argument("--print-env", action="store_true", help="print the environment as export lines")
    args = ap.parse_args()
    env = environment(args.home)
    folder = os.path.join(env["XDG_CONFIG_HOME"], "opencode")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "opencode.json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(config(args.port, args.ask), f, indent=2)
    os.replace(tmp, path)
    if args.print_env:
        for name, value in env.items():
            print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
