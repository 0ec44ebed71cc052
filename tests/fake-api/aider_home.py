#!/usr/bin/env python3
"""A throwaway HOME in which the real `aider` CLI starts straight at its prompt, offline.

aider reads HOME/.aider.conf.yml for its defaults. This writes one that points aider at the
Chat Completions stand-in on 127.0.0.1:PORT (openai_chat.py) with a model aider knows
nothing about, describes that model in files of its own (so aider fetches no model list or
prices), and turns off everything that would reach the network or ask a question at start:
analytics, the update check, release notes, URL detection and scraping. The repository is
left as aider finds it: no .gitignore edits, no commits of its own (auto-commits off).

    python3 aider_home.py HOME --port PORT [--key KEY] [--print-env]

--print-env prints `export NAME=value` lines (shell-quoted) with the environment aider
needs to run in HOME (the switches litellm reads from the environment only).
"""

import argparse
import json
import os
import shlex

MODEL = "openai/orchestra-stand-in"
# Any key does: the stand-in takes the key as the conversation's name.
API_KEY = "sk-orchestra-stand-in"


def config(home, port, key):
    """HOME/.aider.conf.yml (YAML; JSON is YAML, and needs no quoting rules of its own)."""
    return {
        "model": MODEL,
        "weak-model": MODEL,
        "openai-api-base": f"http://127.0.0.1:{port}/v1",
        "openai-api-key": key,
        "model-settings-file": os.path.join(home, ".aider.model.settings.yml"),
        "model-metadata-file": os.path.join(home, ".aider.model.metadata.json"),
        # Nothing may leave the machine, and nothing may ask before the prompt shows.
        "analytics": False,
        "check-update": False,
        "show-release-notes": False,
        "show-model-warnings": False,
        "check-model-accepts-settings": False,
        "detect-urls": False,
        "disable-playwright": True,
        "gitignore": False,
        "auto-commits": False,
        "auto-lint": False,
        "map-tokens": 0,
    }


def model_settings():
    # The "diff" edit format: aider offers the ```bash blocks of an answer to run (the
    # "whole" format does not), and a SEARCH/REPLACE block with an empty SEARCH makes a file.
    return [{"name": MODEL, "edit_format": "diff", "weak_model_name": MODEL, "use_repo_map": False}]


def model_metadata():
    return {
        MODEL: {
            "max_input_tokens": 128000,
            "max_output_tokens": 8192,
            "max_tokens": 8192,
            "input_cost_per_token": 0,
            "output_cost_per_token": 0,
            "litellm_provider": "openai",
            "mode": "chat",
        }
    }


def environment(home):
    return {
        "HOME": os.path.realpath(home),
        # litellm downloads its model price map at import unless told to use its own copy.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def write(path, obj):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("home", help="the folder to use as HOME (made if missing)")
    ap.add_argument("--port", type=int, required=True, help="the stand-in's port")
    ap.add_argument("--key", default=API_KEY, help="the API key (the stand-in's conversation name)")
    ap.add_argument("--print-env", action="store_true", help="print the environment as export lines")
    args = ap.parse_args()
    home = os.path.realpath(args.home)
    os.makedirs(home, exist_ok=True)
    write(os.path.join(home, ".aider.conf.yml"), config(home, args.port, args.key))
    write(os.path.join(home, ".aider.model.settings.yml"), model_settings())
    write(os.path.join(home, ".aider.model.metadata.json"), model_metadata())
    if args.print_env:
        for name, value in environment(home).items():
            print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
