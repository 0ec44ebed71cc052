//! Talking to sessions from outside, with the real claude CLI against the fake API:
//! briefings arrive whole and literal; menus are answered by their labels.

use std::time::Duration;

use crate::harness::{wait_until, AgentCli, AgentWorld, Env};

/// A world for claude sessions in manual-approval mode; `trusted`: the worktree of `label`
/// is trusted in claude's config (else claude asks).
fn start(label: &str, trusted: bool) -> Option<AgentWorld> {
    AgentWorld::start(
        AgentCli::claude("--permission-mode default"),
        |env| match trusted {
            true => vec![env.worktree_path(label)],
            false => Vec::new(),
        },
        None,
    )
}

/// The bottom of the screen (the banner above it animates), without the footer: the CLI
/// redraws its hints there by itself (" · ← for agents" comes and goes).
fn bottom(c: &AgentWorld, label: &str) -> String {
    let screen = c.screen(label);
    let mut lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.pop();
    lines[lines.len().saturating_sub(9)..].join("\n")
}

/// [`bottom`] once it stopped changing: claude draws its turn's summary line ("Brewed for
/// 8s") a moment after its prompt is back.
fn settled_bottom(c: &AgentWorld, label: &str) -> String {
    let mut last = bottom(c, label);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(800));
        let now = bottom(c, label);
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("{label}'s screen never settled:\n{last}");
}

fn idle(c: &AgentWorld, label: &str) -> bool {
    let s = c.screen(label);
    s.lines().any(|l| l.trim_end() == "❯") && !s.contains("esc to interrupt")
}

#[test]
fn approve_runs_the_command_and_deny_does_not() {
    let Some(c) = start("perm", true) else { return };
    let wt = c.env.worktree_path("perm");
    c.dispatch("perm", "[[bash: touch approved.txt]]");
    c.wait_screen("perm", "Do you want to proceed?");
    let run = c.env.orchestra(&["approve", "perm"]).ok();
    assert!(run.stdout.contains("\"Yes\""), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(20), || wt.join("approved.txt").exists()),
        "{}",
        c.screen("perm")
    );
    assert!(wait_until(Duration::from_secs(20), || idle(&c, "perm")));

    // No menu: refused, nothing sent.
    let before = settled_bottom(&c, "perm");
    c.env.orchestra(&["approve", "perm"]).fails_with(1);
    assert_eq!(bottom(&c, "perm"), before);

    // Deny: the command does not run.
    c.brief("perm", "[[bash: touch denied.txt]]");
    c.wait_screen("perm", "Do you want to proceed?");
    let run = c.env.orchestra(&["deny", "perm"]).ok();
    assert!(run.stdout.contains("No"), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(20), || idle(&c, "perm")),
        "{}",
        c.screen("perm")
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(!wt.join("denied.txt").exists());
    // A Write menu, approved with --always ("allow edits", never auto mode).
    c.env
        .orchestra(&[
            "brief",
            "perm",
            &format!("[[write: {}/written.txt | hello]]", wt.display()),
        ])
        .ok();
    c.wait_screen("perm", "Do you want to create");
    let run = c.env.orchestra(&["approve", "perm", "--always"]).ok();
    assert!(run.stdout.contains("accept edits"), "{}", run.stdout);
    assert!(
        !run.stdout.to_lowercase().contains("auto mode"),
        "{}",
        run.stdout
    );
    assert!(
        wait_until(Duration::from_secs(20), || wt.join("written.txt").exists()),
        "{}",
        c.screen("perm")
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("written.txt")).unwrap(),
        "hello\n"
    );
    // (Last: in accept-edits mode the scripted model keeps rewriting the file.)
}

#[test]
fn a_hostile_briefing_arrives_whole_and_nothing_runs_in_a_shell() {
    let Some(c) = start("brief", true) else {
        return;
    };
    let wt = c.env.worktree_path("brief");
    c.dispatch("brief", "[[say: ready]]");
    c.wait_screen("brief", "ready");
    assert!(wait_until(Duration::from_secs(20), || idle(&c, "brief")));

    // One line with shell and tmux syntax in it.
    let short =
        "echo hi; $(touch pwned1) `touch pwned2` 'single' \"double\" C-c Enter \\n end-7731";
    c.env.orchestra(&["brief", "brief", short]).ok();
    assert!(
        wait_until(Duration::from_secs(20), || c
            .api
            .requests()
            .contains("end-7731")),
        "{}",
        c.screen("brief")
    );
    let sent = last_user_text(&c.api.requests(), "end-7731");
    assert_eq!(sent, short);
    assert!(wait_until(Duration::from_secs(20), || idle(&c, "brief")));

    // 50 KB over many lines, from a file: one message, pasted.
    let mut long = String::from("BEGIN-5521 $(touch pwned3); rm -rf ~ ; C-c\n");
    while long.len() < 50_000 {
        // (No tabs: the CLI itself turns pasted tabs into spaces.)
        long.push_str("line with `backticks` and 'quotes' and \"dq\" and $HOME; Enter C-d\n");
    }
    long.push_str("END-5521");
    let file = c.env.root.join("briefing.txt");
    std::fs::write(&file, &long).unwrap();
    c.env
        .orchestra(&["brief", "brief", &format!("@{}", file.display())])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || c
            .api
            .requests()
            .contains("END-5521")),
        "{}",
        c.screen("brief")
    );
    let sent = last_user_text(&c.api.requests(), "END-5521");
    let inside = pasted_content(&sent);
    assert!(
        inside.trim_end() == long.trim_end(),
        "the paste did not arrive whole: {} of {} bytes",
        inside.len(),
        long.len()
    );
    for f in ["pwned1", "pwned2", "pwned3"] {
        assert!(
            !wt.join(f).exists() && !c.env.repo.join(f).exists(),
            "{f} ran in a shell"
        );
    }
    let logs = std::fs::read_dir(c.env.home.join("briefings"))
        .unwrap()
        .count();
    assert_eq!(logs, 2, "each briefing is logged");
}

#[test]
fn briefings_are_refused_on_a_menu_and_on_an_exited_agent() {
    let Some(c) = start("guard", true) else {
        return;
    };
    c.dispatch("guard", "[[bash: touch x.txt]]");
    c.wait_screen("guard", "Do you want to proceed?");
    let before = settled_bottom(&c, "guard");
    let run = c.env.orchestra(&["brief", "guard", "1"]).fails_with(1);
    assert!(run.stderr.contains("menu"), "{}", run.stderr);
    assert_eq!(bottom(&c, "guard"), before, "nothing typed");
    c.env.orchestra(&["deny", "guard"]).ok();
    // The agent killed: the pane is dead.
    let pid = c.env.tmux(&[
        "display-message",
        "-p",
        "-t",
        &c.pane("guard"),
        "#{pane_pid}",
    ]);
    std::process::Command::new("kill")
        .arg(pid.trim())
        .status()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || c
        .env
        .tmux(&[
            "display-message",
            "-p",
            "-t",
            &c.pane("guard"),
            "#{pane_dead}"
        ])
        .trim()
        == "1"));
    let run = c.env.orchestra(&["brief", "guard", "hello"]).fails_with(1);
    assert!(run.stderr.contains("exited"), "{}", run.stderr);
}

#[test]
fn dispatch_answers_the_trust_dialog_of_its_worktree() {
    let Some(c) = start("trusty", false) else {
        return;
    };
    c.dispatch("trusty", "[[say: trusted and running]]");
    c.wait_screen("trusty", "trusted and running");
}

#[test]
fn approve_answers_the_trust_dialog_with_the_entry_that_trusts() {
    let Some(c) = start("second", false) else {
        return;
    };
    // With the option off the dialog stays for a person; approve picks the entry that
    // trusts (not the default "No, exit").
    c.env
        .tmux(&["set-option", "-g", "@orchestra-trust-worktrees", "off"]);
    c.dispatch("second", "[[say: second one runs]]");
    c.wait_screen("second", "trust");
    assert!(c.screen("second").contains("No, exit") || c.screen("second").contains("Yes, proceed"));
    c.env.orchestra(&["approve", "second"]).ok();
    c.wait_screen("second", "second one runs");
}

/// The newest user text in the fake API's log that contains `marker`.
fn last_user_text(log: &str, marker: &str) -> String {
    let mut found = String::new();
    for line in log.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for m in v["request"]["messages"].as_array().into_iter().flatten() {
            if m["role"] != "user" {
                continue;
            }
            let texts: Vec<String> = match &m["content"] {
                serde_json::Value::String(s) => vec![s.clone()],
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(|i| i["text"].as_str().map(str::to_string))
                    .collect(),
                _ => vec![],
            };
            for t in texts {
                if t.contains(marker) {
                    found = t;
                }
            }
        }
    }
    found
}

/// The text inside `<pasted_content …>…</pasted_content …>`, or the text itself.
fn pasted_content(text: &str) -> String {
    let Some(start) = text.find("<pasted_content") else {
        return text.to_string();
    };
    let body_start = start + text[start..].find('>').unwrap() + 1;
    let end = text.rfind("</pasted_content").unwrap();
    text[body_start..end].trim_start_matches('\n').to_string()
}

#[test]
fn brief_all_reaches_every_live_session_and_names_the_ones_it_skipped() {
    let env = Env::new();
    env.start_server(&[]);
    for label in ["alive-1", "alive-2", "gone"] {
        env.dispatch_shell(label).ok();
    }
    let pane = env.session("gone")["pane"].as_str().unwrap().to_string();
    let pid = env.tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
    std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.trim())
        .status()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || env
        .tmux(&["display-message", "-p", "-t", &pane, "#{pane_dead}"])
        .trim()
        == "1"));
    let run = env
        .orchestra(&["brief", "--all", "echo briefed > briefed.txt"])
        .fails_with(1);
    assert!(
        run.stderr.contains("gone") && run.stderr.contains("exited"),
        "{}",
        run.stderr
    );
    for label in ["alive-1", "alive-2"] {
        let file = env.worktree_path(label).join("briefed.txt");
        assert!(
            wait_until(Duration::from_secs(10), || file.exists()),
            "{label} was not briefed"
        );
    }
    env.orchestra(&["brief", "--all", "x", "y"]).fails_with(2);
}
