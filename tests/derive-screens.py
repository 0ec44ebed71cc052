#!/usr/bin/env python3
"""Derives claude screens from captured ones: the lines that come and go within a release.

Between the spinner (or a menu) and the input box, and under the footer, the CLI shows
lines of its own when it likes: tips, notices ("tmux focus-events off…"), update banners,
queued prompts, a prompt a person is still typing, lines wrapped in a narrow window.
Captures show some of them by luck; these derived screens put each one into every
release's screens, so a rule that leans on "the line above the box" or "the last line"
fails on them. Each file is named <source>-derived-<what>.txt: its first word (the state)
is its source's, since none of these lines changes what the agent is doing.

A second set stands in for screens of kinds no capture holds yet (issue 25: dialogs and
modes a walk did not drive), built on a real screen of the nearest kind from the words
the CLIs print: a dialog with no footer, plan-mode approvals, a question whose options
take two lines, a reply streaming with no spinner, a retry line, an error with a hint
first, bash mode, completion lists and the shortcuts panel under the box, and gemini's
YOLO and older boxed input. They change the state, so each is named
<state>-<entry>-derived-<what>.txt by the state it shows; a real capture of the same kind
replaces it when one comes.

    python3 tests/derive-screens.py tests/fixtures/screens/claude/2.1.332 [...]
    python3 tests/derive-screens.py tests/fixtures/screens/gemini/0.61.0

capture-screens.sh runs it after each capture. Plain text only (.txt).
"""

import os
import re
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


# --- Screens of kinds not captured yet (they change the state: see the module's doc) ---

FOOTER_WORDS = ("esc to cancel", "enter to confirm", "enter to select", "tab to amend")

WEB_FETCH = [
    " Fetch",
    "",
    "   https://docs.example.com/guide/install",
    "   Claude wants to fetch content from docs.example.com",
    "",
    " Do you want to allow Claude to fetch this content?",
    " ❯ 1. Yes",
    "   2. Yes, and don't ask again for docs.example.com",
    "   3. No, and tell Claude what to do differently (esc)",
]

EXIT_PLAN = [
    " Exit plan mode?",
    "",
    " Would you like to proceed?",
    "",
    "  ❯ 1. Yes, and auto-accept edits",
    "    2. Yes, and manually approve edits",
    "    3. No, keep planning",
]

PLAN_APPROVAL = [
    " Ready to code?",
    "",
    " Here is Claude's plan:",
    "╭" + "─" * 60 + "╮",
    "│ 1. Add a failing test for the parser                         │",
    "│ 2. Fix the off-by-one in the tokenizer                       │",
    "╰" + "─" * 60 + "╯",
    "",
    " Would you like to proceed?",
    "",
    " ❯ 1. Yes, and bypass permissions",
    "   2. Yes, and manually approve edits",
    "   3. Type here to tell Claude what to change",
    "",
    " ctrl-g to edit in your editor · ~/.claude/plans/parser-fix.md",
]


def question(cursor_at, footer):
    options = [
        ("Rewrite the parser", "Replace the hand-written parser with a generated one."),
        ("Patch the bug", "Fix the off-by-one where it happens and add a test for it."),
        ("Leave it", "Keep it as it is and write down why in the notes."),
        ("Type something.", None),
    ]
    out = [" ☐ Approach", "", " Which approach should I take?", ""]
    for n, (label, more) in enumerate(options, 1):
        out.append(f" {'❯' if n == cursor_at else ' '} {n}. {label}")
        if more:
            out.append(f"      {more}")
    out += ["─" * 60, f" {'❯' if cursor_at == 5 else ' '} 5. Chat about this"]
    if footer:
        out += ["", " Enter to select · ↑/↓ to navigate · Esc to cancel"]
    return out


def history_and_dialog(lines):
    """The lines above a menu's top border, and the index of that border."""
    for i in range(len(lines) - 1, -1, -1):
        if is_border(lines[i]):
            return lines[:i], i
    return None, None


def dialog(body):
    def how(lines):
        history, top = history_and_dialog(lines)
        if history is None or input_line(lines) is not None:
            return None
        return history + [lines[top]] + body
    return how


def no_footer(lines):
    """A dialog with its footer line dropped."""
    if input_line(lines) is not None or not lines:
        return None
    if not lines[-1].strip().lower().startswith(FOOTER_WORDS):
        return None
    # (2.1.332's trust dialog is not numbered: without its footer the rules do not read
    # it, unknown.)
    if not any(re.match(r"^\s*[❯›]\s*\d+\.", l) for l in lines):
        return None
    return lines_of("\n".join(lines[:-1]))


def exit_plan(lines):
    """ "exit plan mode?": short, no footer, right under the echoed prompt."""
    if input_line(lines) is not None:
        return None
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("❯ "):
            return lines[: i + 1] + [""] + EXIT_PLAN
    return None


def box_and_below(lines):
    """The input line's index and the box's bottom border's."""
    i = input_line(lines)
    if i is None:
        return None, None
    for j in range(i + 1, len(lines)):
        if is_border(lines[j]):
            return i, j
    return None, None


def under_box(typed, below):
    def how(lines):
        i, bottom = box_and_below(lines)
        if i is None:
            return None
        return lines[:i] + [typed] + lines[i + 1 : bottom + 1] + below
    return how


SLASH_LIST = [
    "  /add-dir                     Add a new working directory",
    "  /agents                      Manage agent configurations",
    "  /clear (reset, new)          Clear conversation history and free up context",
    "  /compact                     Clear conversation history but keep a summary in context",
    "  /config (theme)              Open config panel",
    "  /context                     Visualize current context usage as a colored grid",
    "  /cost                        Show the total cost and duration of the current session",
    "  /doctor                      Diagnose and verify your Claude Code installation and settings",
]
AT_LIST = [
    "  + src/",
    "  + src/agent/",
    "  + src/agent/menu.rs",
    "  + src/agent/mod.rs",
    "  + src/agent/rules.rs",
    "  + src/agent/rules.toml",
    "  + src/main.rs",
]
SHORTCUTS = [
    "  ! for bash mode          double tap esc to clear input      ctrl + _ to undo",
    "  / for commands           shift + tab to auto-accept edits   ctrl + z to suspend",
    "  @ for file paths         ctrl + o for verbose output        ctrl + v to paste images",
    "  # to memorize            ctrl + t to show todos             meta + p to switch model",
    "  & for background         shift + ⏎ for newline              ctrl + s to stash prompt",
    "                                                              ctrl + g to edit in $EDITOR",
]


def bash_mode(lines):
    i, bottom = box_and_below(lines)
    if i is None:
        return None
    return lines[:i] + ["! ls -la"] + lines[i + 1 : bottom + 1] + ["  ! for bash mode"]


def streaming_no_spinner(lines):
    """A new turn streams its reply with no spinner and no "esc to interrupt": only the
    summary line the turns above end with is missing. (From a screen whose turns show
    one.)"""
    if not any(l[:1] in "·✢✳✶✻✽*" and " for " in l and "…" not in l for l in lines):
        return None
    top = box_top(lines)
    if top is None:
        return None
    turn = [
        "❯ [[slow: 30]] [[say: a long reply that streams for a while before it ends]]",
        "",
        "● a long reply that streams",
    ]
    history = [l for l in lines[:top] if "focus-events" not in l]
    return lines_of("\n".join(history)) + [""] + turn + [""] + lines[top:]


def retrying(lines):
    """The spinner's line become a retry line, the footer without "esc to interrupt"."""
    for i, line in enumerate(lines):
        if line[:1] in "·✢✳✶✻✽*" and "…" in line:
            out = lines[:i] + ["✻ Connection refused · Retrying in 14s · attempt 6/10"] + lines[i + 1 :]
            return [l.replace(" · esc to interrupt", "").replace("esc to interrupt", "") for l in out]
    return None


def login_error(lines):
    for i, line in enumerate(lines):
        if line.startswith("● API Error"):
            return (
                lines[:i]
                + [
                    "● Please run /login · API Error: 401 {\"type\":\"error\",\"error\":"
                    "{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"
                ]
                + lines[i + 1 :]
            )
    return None


# gemini: its input box drawn another way.
def gemini_box(lines):
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(" > "):
            return i
    return None


def gemini_yolo(lines):
    """YOLO mode: `*` for `>`, the box drawn with half blocks."""
    i = gemini_box(lines)
    if i is None:
        return None
    top = max(j for j in range(i) if lines[j].startswith("─" * 8))
    width = len(lines[top])
    return (
        lines[:top]
        + ["▀" * width, " YOLO mode (ctrl + y to toggle)"]
        + [" * " + lines[i][3:]]
        + ["▄" * width]
        + lines[i + 1 :]
    )


def gemini_boxed(lines):
    """The older layout: the input line in a rounded box."""
    i = gemini_box(lines)
    if i is None:
        return None
    top = max(j for j in range(i) if lines[j].startswith("─" * 8))
    width = len(lines[top])
    text = lines[i][1:]
    return (
        lines[:top]
        + ["╭" + "─" * (width - 2) + "╮", "│ " + text.ljust(width - 4) + " │", "╰" + "─" * (width - 2) + "╯"]
        + lines[i + 1 :]
    )


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
}

# Screens of other kinds: source: [(the name's state and entry, what, how)].
OTHER_KINDS = {
    "claude": {
        "waiting-bash-menu": [
            ("waiting-web-fetch", "no-footer", dialog(WEB_FETCH)),
            ("waiting-bash-menu", "no-footer", no_footer),
            ("waiting-exit-plan-mode", "short", exit_plan),
            ("waiting-plan-approval", "editor-footer", dialog(PLAN_APPROVAL)),
            ("waiting-ask-question", "two-line-options", dialog(question(1, True))),
            ("waiting-ask-question", "two-line-options-no-footer", dialog(question(1, False))),
            ("waiting-ask-question", "cursor-on-last", dialog(question(5, False))),
        ],
        "waiting-write-menu": [("waiting-write-menu", "no-footer", no_footer)],
        "waiting-trust-dialog": [("waiting-trust-dialog", "no-footer", no_footer)],
        "idle-after-turn": [
            ("busy-streaming", "no-spinner", streaming_no_spinner),
            ("idle-bash-mode", "after-turn", bash_mode),
            ("idle-slash-completion", "8-suggestions", under_box("❯ /", SLASH_LIST)),
            ("idle-at-completion", "7-suggestions", under_box("❯ @src/", AT_LIST)),
            ("idle-shortcuts-panel", "after-turn", under_box("❯ ", SHORTCUTS)),
        ],
        "busy-streaming": [
            ("busy-retrying", "connection-refused", retrying),
            ("busy-slash-completion", "8-suggestions", under_box("❯ /", SLASH_LIST)),
        ],
        "error-api-400": [("error-login-401", "hint-first", login_error)],
    },
    "gemini": {
        "idle-after-turn": [
            ("idle-yolo-mode", "after-turn", gemini_yolo),
            ("idle-boxed-input", "after-turn", gemini_boxed),
        ],
        "busy-streaming": [
            ("busy-yolo-mode", "streaming", gemini_yolo),
            ("busy-boxed-input", "streaming", gemini_boxed),
        ],
        "waiting-shell-menu": [("waiting-shell-menu", "no-footer", no_footer)],
    },
    "error-api-400": [
        ("notice-above-box", notice_above_box),
        ("tip-above-box", tip_above_box),
        ("update-banner", banner_below),
        ("typing-in-box", typing_in_box),
    ],
}


def write(name, out):
    if out is None:
        if os.path.exists(name):
            os.remove(name)
        return 0
    with open(name, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return 1


def derive(folder):
    made = 0
    agent = os.path.basename(os.path.dirname(os.path.abspath(folder)))
    for source, derivations in OTHER_KINDS.get(agent, {}).items():
        path = os.path.join(folder, source + ".txt")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            lines = lines_of(f.read())
        for entry, what, how in derivations:
            made += write(os.path.join(folder, f"{entry}-derived-{what}.txt"), how(lines))
    if agent != "claude":
        return made
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
