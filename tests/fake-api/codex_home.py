#!/usr/bin/env python3
"""A throwaway HOME in which the real `codex` CLI starts straight at its prompt, offline,
talking to openai.py.

It writes HOME/.codex/config.toml (CODEX_HOME) with a custom model provider (the stand-in's base URL,
the Responses API, an API key from an environment variable, so no login), a model catalog
naming the stand-in's one model (so the CLI knows its tools: a freeform apply_patch and a
shell), each --trust folder trusted (a folder left out gets the real "Trust this folder?"
dialog), and the first-run notices already seen.

    python3 codex_home.py HOME --port PORT [--trust DIR…] [--print-env]

--print-env prints `export NAME=value` lines (shell-quoted) with the environment the CLI
needs to run in HOME against the stand-in on 127.0.0.1:PORT. HOME is the CLI's too: the
login shells it runs commands in read no rc file of the machine's user (which may be
slow, or wait on a lock).
"""

import argparse
import json
import os
import shlex

MODEL = "stand-in"
PROVIDER = "stand-in"
KEY_ENV = "ORCHESTRA_STAND_IN_API_KEY"
# Any key does: the stand-in accepts every key.
API_KEY = "sk-orchestra-stand-in"


def toml_string(text):
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def catalog():
    """The model metadata the CLI would otherwise fetch: what makes it offer its tools."""
    return {
        "models": [
            {
                "slug": MODEL,
                "display_name": "API stand-in",
                "description": "The tests' scripted model (tests/fake-api/openai.py).",
                "supported_reasoning_levels": [],
                "shell_type": "shell_command",
                "visibility": "list",
                "supported_in_api": True,
                "priority": 1,
                "availability_nux": None,
                "upgrade": None,
                "base_instructions": "You are a scripted stand-in for a model.",
                "supports_reasoning_summaries": False,
                "support_verbosity": False,
                "default_verbosity": None,
                "apply_patch_tool_type": "freeform",
                "truncation_policy": {"mode": "bytes", "limit": 10000},
                "supports_parallel_tool_calls": False,
                "context_window": 200000,
                "experimental_supported_tools": [],
            }
        ]
    }


def config(home, port, trust):
    catalog_file = os.path.join(home, "stand-in-models.json")
    lines = [
        f"model = {toml_string(MODEL)}",
        f"model_provider = {toml_string(PROVIDER)}",
        f"model_catalog_json = {toml_string(catalog_file)}",
        # Nothing may leave the machine: no update check, no analytics.
        "check_for_update_on_startup = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        f"[model_providers.{toml_string(PROVIDER)}]",
        'name = "API stand-in"',
        f"base_url = {toml_string(f'http://127.0.0.1:{port}/v1')}",
        f"env_key = {toml_string(KEY_ENV)}",
        'wire_api = "responses"',
        "",
        "[tui]",
        "screen_reader_detection_done = true",
        "",
        "[tui.model_availability_nux]",
        f"{toml_string(MODEL)} = 1",
    ]
    for folder in trust:
        # The CLI looks folders up by their real path.
        lines += ["", f"[projects.{toml_string(os.path.realpath(folder))}]", 'trust_level = "trusted"']
    return "\n".join(lines) + "\n", catalog_file


def environment(home):
    return {
        "HOME": home,
        "CODEX_HOME": os.path.join(home, ".codex"),
        KEY_ENV: API_KEY,
    }


def write(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("home", help="the folder to use as HOME (made if missing)")
    ap.add_argument("--port", type=int, required=True, help="the stand-in's port")
    ap.add_argument("--trust", action="append", default=[], metavar="DIR", help="a folder the CLI trusts")
    ap.add_argument("--print-env", action="store_true", help="print the environment as export lines")
    args = ap.parse_args()
    home = os.path.realpath(args.home)
    codex_home = os.path.join(home, ".codex")
    os.makedirs(codex_home, exist_ok=True)
    text, catalog_file = config(codex_home, args.port, args.trust)
    write(catalog_file, json.dumps(catalog(), indent=2) + "\n")
    write(os.path.join(codex_home, "config.toml"), text)
    if args.print_env:
        for name, value in environment(home).items():
            print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
