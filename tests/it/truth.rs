//! Where hooks are silent (issue 12, part 3), on the real claude CLI against the fake API:
//! after an approval, after an interrupt, across `/clear`, and on screens that ask.

use std::time::Duration;

use crate::harness::{wait_until, ClaudeWorld, Env};

struct Claude {
    env: Env,
    world: ClaudeWorld,
}

fn start(label: &str) -> Option<Claude> {
    start_trusting(&[label])
}

/// A world whose claude trusts the worktrees of `labels`.
fn start_trusting(labels: &[&str]) -> Option<Claude> {
    let env = Env::new();
    let worktrees: Vec<std::path::PathBuf> = labels.iter().map(|l| env.worktree_path(l)).collect();
    let trusted: Vec<&std::path::Path> =
        worktrees.iter().map(std::path::PathBuf::as_path).collect();
    let world = ClaudeWorld::start(&env, &trusted)?;
    env.start_server(&world.env);
    Some(Claude { env, world })
}

impl Claude {
    fn agent(&self) -> String {
        format!(
            "{} --permission-mode default",
            shell_words::quote(&self.world.claude.to_string_lossy())
        )
    }

    fn dispatch(&self, label: &str, prompt: &str) {
        self.env
            .orchestra(&[
                "dispatch",
                label,
                "--agent",
                &self.agent(),
                "--prompt",
                prompt,
            ])
            .ok();
    }

    fn pane(&self, label: &str) -> String {
        self.env.session(label)["pane"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn screen(&self, label: &str) -> String {
        self.env
            .tmux(&["capture-pane", "-p", "-t", &self.pane(label)])
    }

    #[track_caller]
    fn wait_screen(&self, label: &str, text: &str) {
        assert!(
            wait_until(Duration::from_secs(30), || self
                .screen(label)
                .contains(text)),
            "{text:?} never showed:\n{}",
            self.screen(label)
        );
    }

    fn state(&self, label: &str) -> String {
        self.env.session(label)["state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Ticks until `label` is in `state` (or `limit` passes).
    fn ticks_until(&self, label: &str, state: &str, limit: Duration) -> bool {
        wait_until(limit, || {
            self.env.orchestra(&["refresh"]).ok();
            self.state(label) == state
        })
    }
}

#[test]
fn an_approved_tool_is_busy_at_once_and_stays_busy_while_it_runs() {
    let Some(c) = start("slow-tool") else { return };
    let done = c.env.worktree_path("slow-tool").join("slow-done.txt");
    c.dispatch("slow-tool", "[[bash: sleep 8 && touch slow-done.txt]]");
    c.wait_screen("slow-tool", "Do you want to proceed?");
    assert!(c.ticks_until("slow-tool", "waiting", Duration::from_secs(10)));
    c.env.orchestra(&["approve", "slow-tool"]).ok();
    // No hook fires until the command ends; orchestra knows what it just did.
    assert_eq!(c.state("slow-tool"), "busy");
    let badge = c.env.tmux(&[
        "show-options",
        "-w",
        "-v",
        "-t",
        c.env.session("slow-tool")["window"].as_str().unwrap(),
        "@orchestra_state",
    ]);
    assert_eq!(badge.trim(), "busy");
    loop {
        c.env.orchestra(&["refresh"]).ok();
        let state = c.state("slow-tool");
        // Read before the file exists: the command was still running then.
        if done.exists() {
            break;
        }
        assert_eq!(state, "busy", "{}", c.screen("slow-tool"));
        std::thread::sleep(Duration::from_millis(700));
    }
    assert!(c.ticks_until("slow-tool", "idle", Duration::from_secs(30)));
}

#[test]
fn an_interrupted_turn_is_idle_a_few_ticks_after_the_interrupt_and_the_gap_is_kept() {
    let Some(c) = start("stopped") else { return };
    c.dispatch("stopped", "[[say: ready]]");
    assert!(c.ticks_until("stopped", "idle", Duration::from_secs(30)));
    c.env
        .orchestra(&["brief", "stopped", "[[slow: 30]] tell a long story"])
        .ok();
    assert!(c.ticks_until("stopped", "busy", Duration::from_secs(20)));
    // Let the answer start streaming, then interrupt it as a person would.
    std::thread::sleep(Duration::from_secs(3));
    let interrupted = wait_until(Duration::from_secs(15), || {
        c.env
            .tmux(&["send-keys", "-t", &c.pane("stopped"), "Escape"]);
        std::thread::sleep(Duration::from_millis(700));
        !c.screen("stopped").contains("esc to interrupt")
    });
    // Interrupted before any text arrived, the CLI puts the prompt back in the box.
    assert!(interrupted, "{}", c.screen("stopped"));
    // No Stop hook fires: the screen brings it to idle once it has said so for three
    // ticks over 2 s, and the screen that overruled the hook's busy is kept.
    let idle = wait_until(Duration::from_secs(15), || {
        c.env.orchestra(&["refresh"]).ok();
        std::thread::sleep(Duration::from_millis(500));
        c.state("stopped") == "idle"
    });
    assert!(idle, "{}", c.screen("stopped"));
    let changes = c.env.state_changes("stopped");
    // A status tick of the server may have counted too; a hook, where a release sends
    // one, says idle itself (and then nothing disagreed). And when a refresh read the
    // turn's spinner before the prompt's hook arrived, busy was the screen's word (the
    // hook's same word changes nothing): no hook's word was disputed, nothing is kept.
    let busy_by_hook = changes
        .iter()
        .rev()
        .find(|ch| ch.new == "busy")
        .is_some_and(|ch| {
            matches!(
                ch.detail.as_str(),
                "UserPromptSubmit" | "PreToolUse" | "PostToolUse"
            )
        });
    let idle_by_stop = changes
        .last()
        .is_some_and(|ch| ch.new == "idle" && ch.detail == "Stop");
    if idle_by_stop || !busy_by_hook {
        return;
    }
    let kept = c
        .env
        .orchestra(&["classify", "--disagreements", "--json"])
        .ok()
        .stdout;
    let kept: Vec<serde_json::Value> = serde_json::from_str(&kept).unwrap();
    assert!(
        kept.iter().any(|k| k["label"] == "stopped"
            && k["hook_state"] == "busy"
            && k["screen_state"] == "idle"),
        "the screen that overruled the hook's busy was not kept: {kept:?}"
    );
}

#[test]
fn clear_moves_the_session_to_its_new_conversation_and_restart_resumes_that_one() {
    let Some(c) = start("talk") else { return };
    c.dispatch("talk", "[[say: first conversation]]");
    c.wait_screen("talk", "first conversation");
    assert!(c.ticks_until("talk", "idle", Duration::from_secs(30)));
    let first = c.env.session("talk")["conversation"]
        .as_str()
        .unwrap()
        .to_string();
    c.env.orchestra(&["brief", "talk", "/clear"]).ok();
    let moved = wait_until(Duration::from_secs(20), || {
        c.env.session("talk")["conversation"].as_str() != Some(first.as_str())
    });
    assert!(moved, "{}", c.screen("talk"));
    let second = c.env.session("talk")["conversation"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(second.len(), 36, "{second}");
    let events = c.env.orchestra(&["events", "talk", "--json"]).ok().stdout;
    assert!(events.contains(&second), "{events}");
    // The agent exits; restart resumes the conversation it was in, not the first one.
    c.env.orchestra(&["brief", "talk", "/exit"]).ok();
    assert!(c.ticks_until("talk", "exited", Duration::from_secs(20)));
    c.env.orchestra(&["restart", "talk"]).ok();
    let pid = c
        .env
        .tmux(&[
            "display-message",
            "-p",
            "-t",
            &c.pane("talk"),
            "#{pane_pid}",
        ])
        .trim()
        .to_string();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains(&format!("--resume {second}")), "{cmdline}");
}

#[test]
fn the_resume_picker_reads_as_waiting() {
    let Some(c) = start("pick") else { return };
    // The folder claude was told to trust (no trust dialog before the picker).
    let wt = c.env.worktree_path("pick");
    std::fs::create_dir_all(&wt).unwrap();
    let pane = c.env.tmux(&[
        "new-window",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "harness:",
        "-c",
        wt.to_str().unwrap(),
        &format!(
            "{} --resume",
            shell_words::quote(&c.world.claude.to_string_lossy())
        ),
    ]);
    let pane = pane.trim().to_string();
    assert!(wait_until(Duration::from_secs(20), || c
        .env
        .tmux(&["capture-pane", "-p", "-t", &pane])
        .contains("Resume session")));
    std::thread::sleep(Duration::from_millis(500));
    let screen = c.env.tmux(&["capture-pane", "-p", "-t", &pane]);
    let mut classify = c
        .env
        .orchestra_command(&c.env.repo, &["classify", "--kind", "claude", "--json"]);
    classify
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = classify.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(screen.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let verdict = String::from_utf8_lossy(&out.stdout);
    assert!(
        verdict.contains("\"state\":\"waiting\""),
        "{verdict}\n{screen}"
    );
}

impl Claude {
    /// What `health` says of `label` after one refresh: (the state, what its screen says).
    fn health(&self, label: &str) -> (String, String) {
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(&self.env.orchestra(&["health", "--json"]).ok().stdout)
                .expect("health --json is JSON");
        let row = rows
            .iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no row for {label}: {rows:?}"));
        let text = |k: &str| row[k].as_str().unwrap_or_default().to_string();
        (text("state"), text("screen"))
    }

    /// Types `count` lines into `label`'s input box as a person does (backslash-Enter
    /// between them), sending none, and checks after each that a tick reads `state` from
    /// the screen and records it.
    #[track_caller]
    fn type_lines_reading(&self, label: &str, first: &str, count: usize, state: &str) {
        let pane = self.pane(label);
        for i in 1..=count {
            if i > 1 {
                self.env.tmux(&["send-keys", "-t", &pane, "-l", "--", "\\"]);
                std::thread::sleep(Duration::from_millis(150));
                self.env.tmux(&["send-keys", "-t", &pane, "Enter"]);
                std::thread::sleep(Duration::from_millis(150));
            }
            let line = format!("line {i}: keep the old notes");
            let text = if i == 1 {
                format!("{first} {line}")
            } else {
                line.clone()
            };
            self.env
                .tmux(&["send-keys", "-t", &pane, "-l", "--", &text]);
            self.wait_screen(label, &line);
            assert_eq!(
                self.health(label),
                (state.to_string(), state.to_string()),
                "after line {i}:\n{}",
                self.screen(label)
            );
        }
    }
}

/// A person writes a long prompt into the box: however tall the box grows (2.1.332
/// scrolls it past a height, older releases let it grow), each tick reads what the agent
/// does from the screen, and records it.
fn a_prompt_typed_over_many_lines_on(release: &str) {
    let Some(mut c) = start("long") else { return };
    let Some(claude) = crate::matrix::claude_release(release) else {
        return;
    };
    c.world.claude = claude;
    c.dispatch("long", "[[say: at your service]]");
    c.wait_screen("long", "● at your service");
    let idle = || ("idle".to_string(), "idle".to_string());
    // The spinner can stay a moment after the answer (the Stop hook runs).
    assert!(wait_until(Duration::from_secs(30), || c.health("long") == idle()));
    // Typed into an idle session and not sent: idle at every tick, however tall the box.
    c.type_lines_reading(
        "long",
        "[[slow: 40]] [[say: the long prompt ran]]",
        12,
        "idle",
    );
    c.env.tmux(&["send-keys", "-t", &c.pane("long"), "Enter"]);
    assert!(c.ticks_until("long", "busy", Duration::from_secs(20)));
    // The next prompt typed while the turn runs: the screen still says busy (2.1.x drops
    // "esc to interrupt" from the footer while the box holds text; the spinner tells).
    c.type_lines_reading("long", "[[say: the next one]]", 12, "busy");
    assert!(
        wait_until(Duration::from_secs(60), || c
            .screen("long")
            .contains("the long prompt ran")),
        "{}",
        c.screen("long")
    );
    assert!(
        wait_until(Duration::from_secs(30), || c.health("long") == idle()),
        "{:?}\n{}",
        c.health("long"),
        c.screen("long")
    );
}

#[test]
fn a_prompt_typed_over_many_lines_reads_right_on_claude_2_0_77() {
    a_prompt_typed_over_many_lines_on(crate::matrix::CLAUDE_RELEASES[0]);
}

#[test]
fn a_prompt_typed_over_many_lines_reads_right_on_claude_2_1_100() {
    a_prompt_typed_over_many_lines_on(crate::matrix::CLAUDE_RELEASES[1]);
}

#[test]
fn a_prompt_typed_over_many_lines_reads_right_on_claude_2_1_332() {
    a_prompt_typed_over_many_lines_on(crate::matrix::CLAUDE_RELEASES[2]);
}

impl Claude {
    fn id(&self, label: &str) -> String {
        self.env.session(label)["id"].as_str().unwrap().to_string()
    }

    /// The agent's process under the pane's shell (see [`wrapped_claude`]): what a machine
    /// too loaded to redraw looks like is this one stopped. (tmux wakes a pane's own
    /// program when it stops, so the agent runs one level below it.)
    fn agent_pid(&self, label: &str) -> String {
        let pid = self
            .env
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                &self.pane(label),
                "#{pane_pid}",
            ])
            .trim()
            .to_string();
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
        children.split_whitespace().next().unwrap().to_string()
    }

    fn signal(&self, signal: &str, pid: &str) {
        let sent = std::process::Command::new("kill")
            .args([signal, pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {signal} {pid}");
    }

    /// A claude run by a small program rather than exec'd by it (dispatched `--kind
    /// claude`): the same CLI, one process below the pane's. (Not a shell script: a
    /// shell where the agent was is an agent that exited.)
    fn wrapped_claude(&self) -> String {
        let script = self.env.root.join("claude-below");
        std::fs::write(
            &script,
            format!(
                "#!/usr/bin/env python3\nimport subprocess, sys\nsys.exit(subprocess.call([{:?}] + sys.argv[1:]))\n",
                self.world.claude.to_string_lossy()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script.to_string_lossy().into_owned()
    }
}

/// Issue 25: with 64 live sessions an `idle` word sent while the turn went on stayed
/// recorded, refresh after refresh, though the screen showed "esc to interrupt": a pane
/// whose window printed nothing since its last capture was never read again, so the word
/// stood against a screen nobody looked at. A pane too starved to redraw is this one with
/// its agent stopped (SIGSTOP: the running turn stays on screen, the window quiet).
#[test]
fn a_wrong_idle_word_gives_way_to_the_running_turn_on_screen_and_is_kept() {
    let Some(c) = start("going") else { return };
    c.env
        .orchestra(&[
            "dispatch",
            "going",
            "--kind",
            "claude",
            "--agent",
            &format!("{} --permission-mode default", c.wrapped_claude()),
            "--prompt",
            "[[slow: 60]] [[say: the long answer]]",
        ])
        .ok();
    assert!(c.ticks_until("going", "busy", Duration::from_secs(30)));
    c.wait_screen("going", "esc to interrupt");
    // A tick reads the running turn (and caches what it read).
    c.env.orchestra(&["refresh"]).ok();
    let agent = c.agent_pid("going");
    c.signal("-STOP", &agent);
    // Whatever tmux still had to draw lands before the word.
    std::thread::sleep(Duration::from_millis(1500));
    c.env.orchestra(&["refresh"]).ok();
    let id = c.id("going");
    c.env.orchestra(&["event", "--session", &id, "idle"]).ok();
    assert_eq!(c.state("going"), "idle");
    let said = std::time::Instant::now();
    // The word is exact when said: the next ticks do not overrule it at once.
    c.env.orchestra(&["refresh"]).ok();
    c.env.orchestra(&["refresh"]).ok();
    assert_eq!(c.state("going"), "idle", "{}", c.screen("going"));
    let back = wait_until(Duration::from_secs(15), || {
        c.env.orchestra(&["refresh"]).ok();
        std::thread::sleep(Duration::from_millis(300));
        c.state("going") == "busy"
    });
    let screen = c.screen("going");
    c.signal("-CONT", &agent);
    assert!(back, "the screen never overruled the word:\n{screen}");
    assert!(
        said.elapsed() >= Duration::from_secs(2),
        "{:?}",
        said.elapsed()
    );
    assert!(screen.contains("esc to interrupt"), "{screen}");
    // The disagreement is kept: listed, and saved as a fixture a person names.
    let listed = c
        .env
        .orchestra(&["classify", "--disagreements"])
        .ok()
        .stdout;
    let row = listed
        .lines()
        .find(|l| l.starts_with("1 "))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("going"), "{listed}");
    assert!(row.contains(" idle "), "{listed}");
    assert!(row.contains("busy ("), "{listed}");
    let release = c
        .env
        .orchestra(&["health", "--json"])
        .ok()
        .stdout
        .contains("\"agent_release\"");
    assert!(release, "health learns the release");
    let fixture = c.env.home.join("kept-screen.txt");
    c.env
        .orchestra(&[
            "classify",
            "--disagreements",
            "--save",
            "1",
            fixture.to_str().unwrap(),
        ])
        .ok();
    let saved = std::fs::read_to_string(&fixture).unwrap();
    assert!(
        saved.contains("[[slow: 60]]"),
        "the captured screen: {saved}"
    );
    let verdict = c
        .env
        .orchestra(&["classify", fixture.to_str().unwrap()])
        .ok()
        .stdout;
    assert_eq!(verdict.trim(), "busy");
    // Bad input changes nothing: an unknown number, a file that exists.
    let fixture_arg = fixture.to_str().unwrap();
    let other = c.env.home.join("other.txt").to_string_lossy().into_owned();
    c.env
        .orchestra(&["classify", "--disagreements", "--save", "7", &other])
        .fails_with(2);
    c.env
        .orchestra(&["classify", "--disagreements", "--save", "1", fixture_arg])
        .fails_with(2);
    assert_eq!(std::fs::read_to_string(&fixture).unwrap(), saved);
    assert!(!std::path::Path::new(&other).exists());
    // A later hook word wins again, at once.
    c.env
        .orchestra(&["event", "--session", &id, "waiting"])
        .ok();
    assert_eq!(c.state("going"), "waiting");
}

/// Issue 25: a question the agent asks (AskUserQuestion) and its plan put up for approval
/// (ExitPlanMode) are waiting by their `PreToolUse` hook, exactly, whatever the screen
/// rules make of the dialog; the person's answer ends the tool (`PostToolUse`: busy) and
/// the turn goes on to its `Stop`.
fn questions_and_plans_wait_by_their_hook_on(release: &str) {
    let Some(mut c) = start_trusting(&["ask", "plan"]) else {
        return;
    };
    let Some(claude) = crate::matrix::claude_release(release) else {
        return;
    };
    c.world.claude = claude;
    c.dispatch(
        "ask",
        "[[ask: Which colour should the button be? | Red: warm | Blue: cool]] [[after: the button is red]]",
    );
    c.wait_screen("ask", "Which colour should the button be?");
    assert!(
        wait_until(Duration::from_secs(10), || c.state("ask") == "waiting"),
        "{}\n{}",
        c.env.changes_text("ask"),
        c.screen("ask")
    );
    let changes = c.env.changes_text("ask");
    assert!(changes.contains(">waiting:PreToolUse"), "{changes}");
    // The first option, as a person picks it (a review step, where a release has one,
    // submits with the same key).
    let pane = c.pane("ask");
    let answered = wait_until(Duration::from_secs(20), || {
        c.env.tmux(&["send-keys", "-t", &pane, "Enter"]);
        std::thread::sleep(Duration::from_millis(800));
        c.screen("ask").contains("● the button is red")
    });
    assert!(answered, "{}", c.screen("ask"));
    assert!(
        wait_until(Duration::from_secs(10), || c.state("ask") == "idle"),
        "{}",
        c.env.changes_text("ask")
    );
    let changes = c.env.changes_text("ask");
    assert!(changes.contains("waiting>busy:PostToolUse"), "{changes}");

    // Plan mode: the plan put up for approval waits by ExitPlanMode's PreToolUse.
    c.env
        .orchestra(&[
            "dispatch",
            "plan",
            "--agent",
            &format!(
                "{} --permission-mode plan",
                shell_words::quote(&c.world.claude.to_string_lossy())
            ),
            "--prompt",
            "[[plan: paint the button red]]",
        ])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || c.state("plan") == "waiting"),
        "{}\n{}",
        c.env.changes_text("plan"),
        c.screen("plan")
    );
    let changes = c.env.changes_text("plan");
    assert!(changes.contains(">waiting:PreToolUse"), "{changes}");
}

#[test]
fn questions_and_plans_wait_by_their_hook_on_claude_2_0_77() {
    questions_and_plans_wait_by_their_hook_on(crate::matrix::CLAUDE_RELEASES[0]);
}

#[test]
fn questions_and_plans_wait_by_their_hook_on_claude_2_1_100() {
    questions_and_plans_wait_by_their_hook_on(crate::matrix::CLAUDE_RELEASES[1]);
}

#[test]
fn questions_and_plans_wait_by_their_hook_on_claude_2_1_332() {
    questions_and_plans_wait_by_their_hook_on(crate::matrix::CLAUDE_RELEASES[2]);
}

/// Issue 25: a session whose agent runs a release the screen rules were not proven on is
/// named by `health`, once, with what still holds; its `--version` is asked once (at
/// launch, cached) and never again by a tick or by `health`.
#[test]
fn health_names_a_release_the_screen_rules_were_not_proven_on_once() {
    let Some(c) = start("newer") else { return };
    let asked = c.env.root.join("version-asked");
    let program = c.env.root.join("claude-2.1.400");
    std::fs::write(
        &program,
        format!(
            "#!/usr/bin/env python3\nimport os, sys\nif '--version' in sys.argv:\n    open({asked:?}, 'a').write('asked\\n')\n    print('2.1.400 (Claude Code)')\n    sys.exit(0)\nos.execv({claude:?}, [{claude:?}] + sys.argv[1:])\n",
            asked = asked.to_string_lossy(),
            claude = c.world.claude.to_string_lossy(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    c.env
        .orchestra(&[
            "dispatch",
            "newer",
            "--kind",
            "claude",
            "--agent",
            &format!("{} --permission-mode default", program.to_string_lossy()),
            "--prompt",
            "[[say: hello]]",
        ])
        .ok();
    assert!(c.ticks_until("newer", "idle", Duration::from_secs(30)));
    for _ in 0..2 {
        let health = c.env.orchestra(&["health"]).ok().stdout;
        let notes: Vec<&str> = health
            .lines()
            .filter(|l| l.contains("screen rules unproven"))
            .collect();
        assert_eq!(
            notes,
            ["claude 2.1.400: screen rules unproven, hooks exact (newer)"],
            "{health}"
        );
    }
    let rows = c.env.orchestra(&["health", "--json"]).ok().stdout;
    let rows: Vec<serde_json::Value> = serde_json::from_str(&rows).unwrap();
    assert_eq!(rows[0]["agent_release"], "2.1.400");
    assert_eq!(rows[0]["rules_proven"], false);
    c.env.orchestra(&["refresh"]).ok();
    let times = std::fs::read_to_string(&asked).unwrap_or_default();
    assert_eq!(times.lines().count(), 1, "--version asked {times:?}");
}
