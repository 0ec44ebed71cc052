//! The screen classifier on every labelled screen in tests/fixtures/screens/<agent>/<version>/
//! (real screens captured by the capture scripts, and screens derived from them), plus
//! hand-made edge cases.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::harness::{bin, Env};
use crate::matrix::CLAUDE_RELEASES;
use crate::screens::{labelled, STATES};

fn classify(env: &Env, input: &[u8], extra: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(bin());
    cmd.arg("classify")
        .args(extra)
        .env("ORCHESTRA_HOME", &env.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn every_real_screen_is_classified_as_its_name_says() {
    let env = Env::new();
    let screens = labelled();
    let (mut wrong, mut unknown) = (Vec::new(), Vec::new());
    for s in &screens {
        assert!(
            STATES.contains(&s.expected.as_str()),
            "{}: a fixture's name starts with the state it shows ({STATES:?})",
            s.path.display()
        );
        let (code, got, err) = classify(
            &env,
            &std::fs::read(&s.path).unwrap(),
            &["--kind", &s.agent],
        );
        assert_eq!(code, 0, "{}: {err}", s.path.display());
        if got == s.expected {
            continue;
        }
        let name = format!("{}/{}/{}: {got}", s.agent, s.version, s.name);
        // A confident wrong state is the failure that hurts (busy read as idle, a question
        // as idle). A catalogue capture read `unknown` is counted apart (the accuracy
        // bench lists them); the named fixtures must read exactly.
        if got == "unknown" && s.entry.is_some() {
            unknown.push(name);
        } else {
            wrong.push(name);
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} screens read wrong (cargo bench --bench accuracy shows the table):\n{}",
        wrong.len(),
        screens.len(),
        wrong.join("\n")
    );
    // Unknown is not wrong, but it must stay rare: an agent that waits and reads unknown is
    // never announced.
    assert!(
        unknown.len() * 20 <= screens.len(),
        "{} of {} catalogue screens read unknown (more than 5%):\n{}",
        unknown.len(),
        screens.len(),
        unknown.join("\n")
    );
}

#[test]
fn every_claude_release_of_the_matrix_has_a_screen_of_every_state() {
    let screens = labelled();
    for version in CLAUDE_RELEASES {
        let of_release: Vec<&str> = screens
            .iter()
            .filter(|s| s.agent == "claude" && s.version == version)
            .map(|s| s.name.as_str())
            .collect();
        for state in ["idle", "busy", "waiting", "error", "exited"] {
            assert!(
                of_release
                    .iter()
                    .any(|n| n.split(['-', '.']).next() == Some(state)),
                "claude {version}: no {state} screen (tests/capture-screens.sh {version}) in {of_release:?}"
            );
        }
        for menu in [
            "waiting-bash-menu.txt",
            "waiting-write-menu.txt",
            "waiting-trust-dialog.txt",
        ] {
            assert!(
                of_release.contains(&menu),
                "claude {version}: {menu} missing"
            );
        }
    }
}

/// A prompt typed over many lines and not sent, in every state it meets, on every agent
/// whose box takes one (ORCHESTRA_SCREENS_PART=typed of the capture scripts).
#[test]
fn every_agent_has_screens_of_a_prompt_typed_over_many_lines() {
    let screens = labelled();
    let claude = [
        "idle-typed-6-lines.txt",
        "idle-typed-12-lines.txt",
        "idle-typed-fills-pane.txt",
        "busy-typed-12-lines.txt",
        "busy-typed-fills-pane.txt",
        "waiting-bash-menu-typed-12-lines.txt",
        "idle-after-turn-typed-fills-pane.txt",
        "idle-pasted-12-lines.txt",
        "idle-typed-narrow-12-lines.txt",
        "busy-typed-narrow-12-lines.txt",
    ];
    let mut wanted: Vec<(&str, &str, &[&str])> = CLAUDE_RELEASES
        .iter()
        .map(|v| ("claude", *v, &claude[..]))
        .collect();
    let others = [
        "idle-typed-12-lines.txt",
        "idle-typed-fills-pane.txt",
        "busy-typed-12-lines.txt",
        "busy-typed-fills-pane.txt",
        "idle-pasted-12-lines.txt",
    ];
    wanted.push(("codex", "0.171.0", &others[..]));
    wanted.push(("gemini", "0.61.0", &others[..]));
    // aider shows no prompt while a turn runs.
    wanted.push((
        "aider",
        "0.86.2",
        &[
            "idle-typed-12-lines.txt",
            "idle-typed-fills-pane.txt",
            "idle-pasted-12-lines.txt",
        ][..],
    ));
    for (agent, version, names) in wanted {
        for name in names {
            assert!(
                screens
                    .iter()
                    .any(|s| s.agent == agent && s.version == version && s.name == *name),
                "{agent} {version}: {name} missing"
            );
        }
    }
}

/// `screen` with its line starting with `prefix` replaced by `with`.
fn replace_line(screen: &str, prefix: &str, with: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{screen}"));
    screen.replacen(line, with, 1)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/screens")
            .join(name),
    )
    .unwrap()
}

#[test]
fn hand_made_edge_cases() {
    let env = Env::new();
    let idle = fixture("claude/2.1.332/idle-after-turn.txt");
    let menu = fixture("claude/2.1.332/waiting-bash-menu.txt");
    let check = |input: &[u8], want: &str, why: &str| {
        let (code, got, err) = classify(&env, input, &[]);
        assert_eq!(code, 0, "{why}: {err}");
        assert_eq!(got, want, "{why}");
    };
    check(b"", "unknown", "an empty pane");
    check(b"\n\n   \n", "unknown", "a blank pane");
    check(b"user@host:~/src$ ", "unknown", "a shell prompt");
    // Hand-made: a notice that waits for Enter, and the same words quoted mid-turn.
    check(
        b"  Login successful.\n\n  Press Enter to continue\xe2\x80\xa6\n",
        "waiting",
        "a press-Enter notice",
    );
    let quoted_enter = replace_line(
        &idle,
        "\u{25cf}",
        "\u{25cf} The installer says: press Enter to continue",
    );
    check(
        quoted_enter.as_bytes(),
        "idle",
        "the words quoted in a finished turn",
    );

    // A finished turn names its duration; only a live spinner says "esc to interrupt".
    let churned = replace_line(&idle, "✻", "✻ Churned for 12s");
    check(churned.as_bytes(), "idle", "a finished turn");

    // Menu words quoted in the agent's prose, even on lines of their own, are not a menu.
    let quoted = replace_line(
        &idle,
        "✻",
        "● The dialog reads:\n  Do you want to proceed?\n  ❯ 1. Yes\n    2. No\n  Esc to cancel\n✻ Worked for 1s",
    );
    check(quoted.as_bytes(), "idle", "a quoted menu");
    let prose_interrupt = replace_line(&idle, "✻", "● Press esc to interrupt a turn.");
    check(
        prose_interrupt.as_bytes(),
        "idle",
        "prose naming the interrupt key",
    );

    // A 10,000-line pane: only its bottom decides.
    let mut long = String::new();
    for i in 0..10_000 {
        long.push_str(&format!("line {i}: ❯ 1. Yes  Esc to cancel  API Error\n"));
    }
    check(
        format!("{long}{idle}").as_bytes(),
        "idle",
        "10,000 lines then idle",
    );
    check(
        format!("{long}{menu}").as_bytes(),
        "waiting",
        "10,000 lines then a menu",
    );

    // Invalid UTF-8 does not stop it.
    let mut bytes = b"\xff\xfe garbage \xc3\x28\n".to_vec();
    bytes.extend_from_slice(menu.as_bytes());
    check(&bytes, "waiting", "invalid UTF-8 above a menu");
    let mut bytes = idle.as_bytes().to_vec();
    bytes.splice(10..10, b"\xff\xff".iter().copied());
    check(&bytes, "idle", "invalid UTF-8 inside the screen");

    // An API error is only an error while it is the last output.
    let error = fixture("claude/2.1.332/error-api-400.txt");
    check(error.as_bytes(), "error", "error as the last output");
    let recovered = replace_line(
        &error,
        "● API Error",
        "● API Error: 400 scripted error 400\n\n❯ try again\n\n● Done.\n\n✻ Worked for 1s · done 3:48 PM",
    );
    check(
        recovered.as_bytes(),
        "idle",
        "an error followed by a good turn",
    );
    // 2.1.332 ends every good turn with its summary line (the turns above show it): a
    // reply without one yet is still streaming, spinner or not.
    let streaming = recovered.replace("\n\n✻ Worked for 1s · done 3:48 PM", "");
    check(
        streaming.as_bytes(),
        "busy",
        "a reply before its summary line",
    );

    // A prompt being typed is the person's words: lines of it that look like the footer,
    // a spinner or a finished turn change nothing, however many lines the box holds.
    let typed_idle = fixture("claude/2.1.332/idle-typed-12-lines.txt");
    let footer_words = replace_line(&typed_idle, "  line 11:", "  esc to interrupt");
    let spinner_words = replace_line(
        &footer_words,
        "  line 10:",
        "  ✻ Thinking… (esc to interrupt)",
    );
    check(
        spinner_words.as_bytes(),
        "idle",
        "status words typed in the box",
    );
    let typed_busy = fixture("claude/2.1.332/busy-typed-12-lines.txt");
    let done_words = replace_line(&typed_busy, "  line 11:", "  ✻ Cooked for 8s");
    check(
        done_words.as_bytes(),
        "busy",
        "a finished turn's words typed",
    );

    // --json names the rule; unknown kinds are bad input.
    let (_, json, _) = classify(&env, menu.as_bytes(), &["--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["state"], "waiting");
    assert_eq!(v["rule"], "menu-or-dialog");
    let (code, _, err) = classify(&env, b"", &["--kind", "vim"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The structure the rules read, whatever the words: a numbered menu with its cursor and
/// no input box below is a question, whatever its footer (or none) and however many lines
/// its entries take; a prompt echoed above it, or its own cursor line, is no input box;
/// what is under a framed box (lists, panels) leaves it the box.
#[test]
fn the_screen_is_read_by_its_structure() {
    let env = Env::new();
    let check = |input: &str, want: &str, why: &str| {
        let (code, got, err) = classify(&env, input.as_bytes(), &[]);
        assert_eq!(code, 0, "{why}: {err}");
        assert_eq!(got, want, "{why}:\n{input}");
    };
    let idle = fixture("claude/2.1.332/idle-after-turn.txt");
    // The screen above the input box's top border, and the box with its footer.
    let lines: Vec<&str> = idle.lines().collect();
    let borders: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with('─'))
        .collect();
    let top = borders[borders.len() - 2];
    let (history, box_and_footer) = (lines[..top].join("\n"), lines[top..].join("\n"));
    // Entries of any number of lines, the cursor anywhere, any footer or none.
    for lines_per_entry in [1, 2, 5] {
        for cursor in [1, 4] {
            for footer in [
                "",
                "\n ctrl-g to edit in your editor",
                "\n Press ↑↓ to choose",
            ] {
                let mut menu = format!("{history}\n────────\n Pick one\n");
                for n in 1..=4 {
                    let mark = if n == cursor { "❯" } else { " " };
                    menu.push_str(&format!(" {mark} {n}. Option {n}\n"));
                    for more in 1..lines_per_entry {
                        menu.push_str(&format!("      what option {n} does, line {more}\n"));
                    }
                }
                menu.push_str(footer);
                check(&menu, "waiting", "a menu last");
                // The same menu quoted in the history, the box below it: idle.
                check(
                    &format!("{menu}\n{box_and_footer}"),
                    "idle",
                    "a menu above the box",
                );
            }
        }
    }
    // Two cursors, or numbers that do not run from 1: no menu (the box is gone: unknown).
    let two = format!("{history}\n ❯ 1. Yes\n ❯ 2. No\n");
    check(&two, "unknown", "two cursors");
    let gap = format!("{history}\n ❯ 2. Yes\n   3. No\n");
    check(&gap, "unknown", "not numbered from 1");
    // A long list under the box: still the box, however many lines.
    let mut listed = idle.trim_end().to_string();
    for n in 0..30 {
        listed.push_str(&format!("\n  /command-{n}    what it does"));
    }
    check(&listed, "idle", "30 suggestions under the box");
}

#[test]
fn users_can_add_and_replace_rules() {
    let env = Env::new();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("agents.toml"),
        "[generic]\n[[generic.rules]]\nname = \"ready\"\nstate = \"idle\"\nlast_line = 'READY>$'\n\n\
         [claude]\nreplace = true\n[[claude.rules]]\nname = \"only-this\"\nstate = \"busy\"\ntail = 'xyzzy'\n",
    )
    .unwrap();
    assert_eq!(
        classify(&env, b"booting\nREADY>", &["--kind", "generic"]).1,
        "idle"
    );
    let menu = fixture("claude/2.1.332/waiting-bash-menu.txt");
    assert_eq!(
        classify(&env, menu.as_bytes(), &[]).1,
        "unknown",
        "built-in claude rules replaced"
    );
    assert_eq!(classify(&env, b"xyzzy", &[]).1, "busy");

    std::fs::write(
        env.home.join("agents.toml"),
        "[claude]\n[[claude.rules]]\nname = \"bad\"\nstate = \"idle\"\ntail = '(unclosed'\n",
    )
    .unwrap();
    let (code, _, err) = classify(&env, b"", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("agents.toml") && err.contains("bad"), "{err}");
    // A kind of one's own reads its menus by structure too.
    std::fs::write(
        env.home.join("agents.toml"),
        "[generic]\nturn_marker = '^\\$( |$)'\nmenu_entry = '^(?P<cursor>> )?\\s*(?P<number>\\d+)\\) '\n\
         [[generic.rules]]\nname = \"asks\"\nstate = \"waiting\"\nmenu_last = true\n\
         [[generic.rules]]\nname = \"prompt\"\nstate = \"idle\"\ninput_box = true\n",
    )
    .unwrap();
    let generic = |s: &str| classify(&env, s.as_bytes(), &["--kind", "generic"]).1;
    assert_eq!(generic("Pick:\n> 1) this\n  2) that\n"), "waiting");
    assert_eq!(generic("Pick:\n> 1) this\n  2) that\n$ "), "idle");
    std::fs::write(
        env.home.join("agents.toml"),
        "[generic]\nmenu_entry = '^\\d+\\.'\n[[generic.rules]]\nname = \"x\"\nstate = \"idle\"\nmenu_last = true\n",
    )
    .unwrap();
    let (code, _, err) = classify(&env, b"", &["--kind", "generic"]);
    assert_eq!(code, 2, "a menu_entry without its number");
    assert!(err.contains("group named `number`"), "{err}");
    std::fs::write(env.home.join("agents.toml"), "[claude]\nrulez = []\n").unwrap();
    let (code, _, err) = classify(&env, b"", &[]);
    assert_eq!(code, 2, "unknown keys are errors");
    assert!(err.contains("rulez"), "{err}");
}
