#!/usr/bin/env python3
"""Derives claude screens from captured ones: the lines that come and go within a release.

Between the spinner (or a menu) and the input box, and under the footer, the CLI shows
lines of its own when it likes: tips, notices ("tmux focus-events off…"), update banners,
queued prompts, a prompt a person is still typing, lines wrapped in a narrow window.
Captures show some of them by luck; these derived screens put each one into every
release's screens, so a rule that leans on "the line above the box" or "the last line"
fails on them. Each file is named <source>-derived-<what>.txt: its first word (the state)
is its source's, since none of these lines changes what the agent is doing.

    python3 tests/derive-screens.py tests/fixtures/screens/claude/2.1.332 [...]

capture-screens.sh runs it after each capture. Plain text only (.txt).
"""

import os
import sys

BORDER = ("─" * 8, "━" * 8)

# Lines the real CLIs print (their texts are in the releases' code).
NOTICE = (
    "                  tmux focus-events off · add 'set -g focus-events on' to ~/.tmux.conf and"
    " reattach for focus tracking"
)
TIP = "  ⎿  Tip: Use /memory to view and manage Claude memory"
UPDATE_BANNER = "  ✗ Auto-update failed · Try claude doctor or npm i -g @anthropic-ai/claude-code"
INSTALLER_NOTICE = (
    "  Claude Code has switched from npm to native installer. Run `claude install` or see"
    " https://docs.anthropic.com/en/do…"
)
# What a person has begun to type and not sent: wrapped over several lines of the box.
TYPED = [
    "❯ please also look at the flaky test in the integration suite, the one that times out",
    "  under load; and when you are done with that, write down what you changed and why in",
    "  the notes file, keeping the old entries as they are, then run the whole suite again",
    "  and tell me how long it took",
]


def lines_of(text):
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def is_border(line):
    return line.startswith(BORDER)


def input_line(lines):
    """The index of the input box's line: the last `❯` line right under a border."""
    for i in range(len(lines) - 1, 0, -1):
        if lines[i].startswith("❯") and is_border(lines[i - 1]):
            return i
    return None


def box_top(lines):
    i = input_line(lines)
    return None if i is None else i - 1


def notice_above_box(lines):
    top = box_top(lines)
    if top is None or any("focus-events off" in l for l in lines):
        return None
    return lines[:top] + [NOTICE] + lines[top:]


def tip_above_box(lines):
    top = box_top(lines)
    if top is None:
        return None
    return lines[:top] + [TIP] + lines[top:]


def banner_below(lines):
    if input_line(lines) is None:
        return None
    return lines + [UPDATE_BANNER]


def two_notices_below(lines):
    if input_line(lines) is None:
        return None
    return lines + [INSTALLER_NOTICE, UPDATE_BANNER]


def typing_in_box(lines):
    i = input_line(lines)
    if i is None:
        return None
    return lines[:i] + TYPED + lines[i + 1 :]


def wrapped_spinner(lines):
    """The spinner's status line wrapped in two, as a window narrower than it does."""
    for i, line in enumerate(lines):
        if line[:1] in "·✢✳✶✻✽*" and "…" in line:
            more = "ctrl+t to show todos · thought for 3s"
            longer = f"{line[:-1]} · {more})" if line.endswith(")") else f"{line} ({more})"
            cut = longer.rfind(" ", 0, 50)
            return lines[:i] + [longer[:cut], "  " + longer[cut + 1 :]] + lines[i + 1 :]
    return None


def shell_after_exit(lines):
    """The CLI exited in a shell (not a pane of its own): the shell's prompt, not tmux's
    "Pane is dead", under the resume hint."""
    if not lines or not lines[-1].startswith("Pane is dead"):
        return None
    left = lines_of("\n".join(lines[:-1]))
    if not left or not left[-1].startswith("claude --resume "):
        return None
    return left + ["user@host:~/project$"]


DERIVATIONS = {
    # source screen: [(what, how)]
    "busy-streaming": [
        ("notice-above-box", notice_above_box),
        ("tip-above-box", tip_above_box),
        ("update-banner", banner_below),
        ("two-notices", two_notices_below),
        ("typing-in-box", typing_in_box),
        ("wrapped-spinner", wrapped_spinner),
    ],
    "busy-tool-running": [
        ("update-banner", banner_below),
        ("notice-above-box", notice_above_box),
    ],
    "idle-after-turn": [
        ("notice-above-box", notice_above_box),
        ("update-banner", banner_below),
        ("two-notices", two_notices_below),
        ("typing-in-box", typing_in_box),
    ],
    "exited-after-exit": [
        ("shell-prompt", shell_after_exit),
    ],
    "error-api-400": [
        ("notice-above-box", notice_above_box),
        ("tip-above-box", tip_above_box),
        ("update-banner", banner_below),
        ("typing-in-box", typing_in_box),
    ],
}


def derive(folder):
    made = 0
    for source, derivations in DERIVATIONS.items():
        path = os.path.join(folder, source + ".txt")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            lines = lines_of(f.read())
        for what, how in derivations:
            out = how(lines)
            name = os.path.join(folder, f"{source}-derived-{what}.txt")
            if out is None:
                if os.path.exists(name):
                    os.remove(name)
                continue
            with open(name, "w", encoding="utf-8") as f:
                f.write("\n".join(out) + "\n")
            made += 1
    return made


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: derive-screens.py FOLDER…")
    for folder in sys.argv[1:]:
        print(f"derived {derive(folder)} screens in {folder}")


if __name__ == "__main__":
    main()
