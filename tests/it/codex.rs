//! The real codex CLI (pinned 0.171.0) against our OpenAI Responses API stand-in
//! (tests/fake-api/openai.py) in real tmux: states from its notify and its screen, its
//! approval menus answered by label, and the classifier on every captured codex screen.
//!
//! Its world: a throwaway HOME and CODEX_HOME (tests/fake-api/codex_home.py) with a custom
//! model provider (no login: the key comes from an environment variable). It runs with
//! `--no-daemon` (the shared background server copies the whole 300 MB CLI into
//! CODEX_HOME) and manual approvals (`-a on-request -s read-only`).

use std::path::PathBuf;
use std::time::Duration;

use crate::harness::{
    screen_fixture, screen_fixtures, stand_in_passes_its_own_tests, wait_until, AgentCli,
    AgentWorld, Env, CODEX_VERSION,
};

/// `None` (a reported skip) when the CLI is not installed, except on CI where that fails.
/// `trusted`: the worktree of `label` is trusted in codex's config (else codex asks).
fn start(label: &str, trusted: bool) -> Option<AgentWorld> {
    start_trusting(|env| {
        if trusted {
            vec![env.worktree_path(label)]
        } else {
            Vec::new()
        }
    })
}

/// The world of [`start`], with the folders `trust` names trusted in codex's config.
fn start_trusting(trust: impl FnOnce(&Env) -> Vec<PathBuf>) -> Option<AgentWorld> {
    start_world(trust, None)
}

/// [`start`] (trusted) with a notification bus whose server says it has `capabilities`.
fn start_on_bus(label: &str, capabilities: &[&str]) -> Option<AgentWorld> {
    start_world(|env| vec![env.worktree_path(label)], Some(capabilities))
}

fn start_world(
    trust: impl FnOnce(&Env) -> Vec<PathBuf>,
    bus_capabilities: Option<&[&str]>,
) -> Option<AgentWorld> {
    let mut world = AgentWorld::start(AgentCli::codex(), trust, bus_capabilities)?;
    world.patience = Duration::from_secs(40);
    Some(world)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn a_codex_session_is_busy_then_idle_when_its_notify_says_the_turn_ended() {
    let Some(c) = start("talker", true) else {
        return;
    };
    c.dispatch(
        "talker",
        "[[slow: 8]] [[say: one two three four five six seven eight nine ten]]",
    );
    // Told by its program name: a codex session, its notify wired on its command line.
    let cmdline = c
        .env
        .pane_proc(&c.pane("talker"), "cmdline")
        .replace('\n', " ");
    assert!(
        cmdline.contains("-c notify=[") && cmdline.contains("codex-notify"),
        "{cmdline}"
    );
    // The answer streams for 8 s: the screen says busy meanwhile.
    c.reaches("talker", "busy", secs(20));
    c.wait_screen("talker", "nine ten");
    // The end of the turn comes from codex's notify (exact), not a later screen.
    c.said_without_ticks("talker", "idle", secs(20));
    let changes = c.state_changes("talker");
    let last = changes.last().unwrap();
    assert_eq!(last.new, "idle");
    assert!(last.detail.contains("codex-notify"), "{changes:?}");
    // The stand-in got the prompt as codex's own prompt, not typed keys.
    assert!(c.api.requests().contains("nine ten"));
    // A second turn, typed: busy then idle again.
    c.brief(
        "talker",
        "[[slow: 8]] [[say: eleven twelve thirteen fourteen]]",
    );
    c.reaches("talker", "busy", secs(20));
    c.wait_screen("talker", "fourteen");
    c.said_without_ticks("talker", "idle", secs(20));
}

/// codex has no hook for its approvals: the screen says it waits, and the notification
/// names the command it shows — as written, on a server that reads the body as markup.
#[test]
fn a_waiting_codex_notification_names_the_command_on_its_screen() {
    let Some(c) = start_on_bus("asks", &["body", "body-markup"]) else {
        return;
    };
    c.dispatch("asks", "[[bash: echo 'a && b <x>']]");
    c.wait_screen("asks", "Would you like to run the following command?");
    c.reaches("asks", "waiting", secs(15));
    let body = c.waiting_note("asks");
    assert!(
        body.starts_with("asks wants to run: echo 'a &amp;&amp; b &lt;x&gt;' (in "),
        "{body:?}\n{}",
        c.screen("asks")
    );
}

#[test]
fn codex_approvals_wait_and_approve_runs_the_command_and_deny_does_not() {
    let Some(c) = start("perm", true) else { return };
    let wt = c.env.worktree_path("perm");
    c.dispatch("perm", "[[bash: touch approved.txt]] [[after: it is made]]");
    c.wait_screen("perm", "Would you like to run the following command?");
    c.reaches("perm", "waiting", secs(15));
    let run = c.env.orchestra(&["approve", "perm"]).ok();
    assert!(run.stdout.contains("Yes, proceed"), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(20), || wt.join("approved.txt").exists()),
        "{}",
        c.screen("perm")
    );
    c.wait_screen("perm", "it is made");
    c.reaches("perm", "idle", secs(20));

    // No menu: refused, nothing sent.
    c.env.orchestra(&["approve", "perm"]).fails_with(1);

    // Deny: codex's "No, and tell Codex what to do differently"; the command never runs.
    c.brief("perm", "[[bash: touch denied.txt]]");
    c.wait_screen("perm", "touch denied.txt");
    c.wait_screen("perm", "Press enter to confirm");
    c.reaches("perm", "waiting", secs(15));
    let run = c.env.orchestra(&["deny", "perm"]).ok();
    assert!(run.stdout.contains("No, and tell Codex"), "{}", run.stdout);
    c.reaches("perm", "idle", secs(20));
    std::thread::sleep(Duration::from_millis(500));
    assert!(!wt.join("denied.txt").exists(), "{}", c.screen("perm"));

    // A file write asks too; --always picks "don't ask again for these files".
    c.brief("perm", "[[write: written.txt | hello]]");
    c.wait_screen("perm", "Would you like to make the following edits?");
    c.reaches("perm", "waiting", secs(15));
    let run = c.env.orchestra(&["approve", "perm", "--always"]).ok();
    assert!(run.stdout.contains("don't ask again"), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(20), || wt.join("written.txt").exists()),
        "{}",
        c.screen("perm")
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("written.txt")).unwrap(),
        "hello\n"
    );
    c.reaches("perm", "idle", secs(20));
}

#[test]
fn a_failing_api_makes_a_codex_session_error_and_quit_makes_it_exited() {
    let Some(c) = start("broken", true) else {
        return;
    };
    c.dispatch("broken", "[[error: 400]]");
    c.wait_screen("broken", "scripted error 400");
    c.reaches("broken", "error", secs(20));
    // A good turn after it: idle again.
    c.brief("broken", "[[say: recovered]]");
    c.wait_screen("broken", "recovered");
    c.reaches("broken", "idle", secs(20));
    c.brief("broken", "/quit");
    c.reaches("broken", "exited", secs(20));
}

/// A dispatched codex that exited is restarted into the thread it was in (`resume
/// --last`, after its other options: its worktree is a folder of its own), so the model
/// hears the earlier turn.
#[test]
fn a_restarted_codex_resumes_the_thread_it_was_in() {
    let Some(c) = start("again", true) else {
        return;
    };
    c.dispatch("again", "[[say: the word is MARIGOLD-42]]");
    c.wait_screen("again", "MARIGOLD-42");
    c.said_without_ticks("again", "idle", secs(20));
    c.brief("again", "/quit");
    c.reaches("again", "exited", secs(20));
    c.env.orchestra(&["restart", "again"]).ok();
    let cmdline = c.env.pane_process("again", "cmdline");
    assert!(cmdline.ends_with("resume\n--last\n"), "{cmdline}");
    c.reaches("again", "idle", secs(40));
    let before = c.api.requests_json().len();
    c.brief("again", "[[say: and again]]");
    c.wait_screen("again", "and again");
    // The request goes out a moment after the typed text shows.
    let heard = wait_until(Duration::from_secs(30), || {
        c.api.heard_since(before, "MARIGOLD-42")
    });
    assert!(
        heard,
        "the resumed thread did not reach the model: {}",
        c.api.requests()
    );
}

#[test]
fn dispatch_answers_codex_trust_dialog_for_its_worktree() {
    let Some(c) = start("trusty", false) else {
        return;
    };
    c.dispatch("trusty", "[[say: trusted and running]]");
    c.wait_screen("trusty", "trusted and running");
}

/// A session `up` starts from the manifest gets what a dispatched codex gets: its notify,
/// so the end of a turn is codex's own word, through the manifest's `env` snippet and
/// again after a restart.
#[test]
fn a_codex_manifest_session_reports_its_turns_by_its_notify_after_up_and_restart() {
    let Some(c) = start_trusting(|env| vec![env.root.join("codex-folder")]) else {
        return;
    };
    let folder = c.env.root.join("codex-folder");
    c.env.write_agent_manifest(
        &c.agent,
        "coder",
        &folder,
        "export ORCHESTRA_TEST_SNIPPET=reached",
    );
    c.env.orchestra(&["up"]).ok();
    let id = c.env.session("coder")["id"].as_str().unwrap().to_string();
    let notify = |cmdline: &str| {
        cmdline.contains("notify=[") && cmdline.contains(&format!("{id}\", \"codex-notify"))
    };
    let cmdline = c.env.pane_process_once("coder", "cmdline", notify);
    assert!(notify(&cmdline), "{cmdline}");
    // The snippet ran before the agent: its export reached codex (once the wrapper shell
    // has exec'd it; the shell's own environ never shows an export).
    let environ = c.env.pane_process_once("coder", "environ", |e| {
        e.lines().any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached")
    });
    assert!(
        environ
            .lines()
            .any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached"),
        "{environ}"
    );
    c.wait_screen("coder", "← for agents");
    c.env
        .orchestra(&[
            "brief",
            "coder",
            "[[slow: 6]] [[say: alpha beta gamma delta]]",
        ])
        .ok();
    c.reaches("coder", "busy", secs(30));
    c.wait_screen("coder", "gamma delta");
    // No tick: only codex's notify can say the turn ended.
    c.said_without_ticks("coder", "idle", secs(20));
    let changes = c.state_changes("coder");
    assert!(
        changes.last().unwrap().detail.contains("codex-notify"),
        "{changes:?}"
    );

    c.env.orchestra(&["restart", "coder"]).ok();
    let new_id = c.env.session("coder")["id"].as_str().unwrap().to_string();
    assert_ne!(new_id, id);
    let cmdline = c.env.pane_process("coder", "cmdline");
    assert!(
        cmdline.contains(&format!("{new_id}\", \"codex-notify")),
        "{cmdline}"
    );
    c.env.orchestra(&["down"]).ok();
}

fn classify(env: &Env, input: &[u8]) -> String {
    env.classify("codex", input).0
}

#[test]
fn every_real_codex_screen_is_classified_as_its_name_says() {
    let env = Env::new();
    let files = screen_fixtures("codex", CODEX_VERSION);
    let mut states: Vec<String> = Vec::new();
    let mut wrong = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let expected = name.split('-').next().unwrap();
        let got = classify(&env, &std::fs::read(file).unwrap());
        if got != expected {
            wrong.push(format!("{name}: {got}"));
        }
        states.push(expected.to_string());
    }
    assert!(wrong.is_empty(), "misread: {wrong:?}");
    for state in ["idle", "busy", "waiting", "error", "exited"] {
        assert!(
            states.iter().any(|s| s == state),
            "no {state} screen among {files:?}"
        );
    }
}

#[test]
fn the_openai_stand_in_passes_its_own_tests() {
    stand_in_passes_its_own_tests("test_openai.py");
}

fn fixture(name: &str) -> String {
    screen_fixture("codex", CODEX_VERSION, name)
}

#[test]
fn codex_screens_edited_by_hand_keep_their_meaning() {
    let env = Env::new();
    let input_line = "› Ask Codex to do anything";
    // An answer that quotes a status line is still a finished turn.
    let idle = fixture("idle-after-turn.txt");
    let quoted = idle.replacen(
        "  Worked for",
        "• Working (3s • esc to interrupt)\n\n  Worked for",
        1,
    );
    assert_ne!(quoted, idle);
    assert_eq!(classify(&env, quoted.as_bytes()), "idle");
    // A failed turn followed by a good one: idle, not error.
    let error = fixture("error-api-400.txt");
    let recovered = error.replacen(
        input_line,
        "› [[say: ok]]\n\n• ok\n\n  Worked for <1s • 15:41\n\n› Ask Codex to do anything",
        1,
    );
    assert_ne!(recovered, error);
    assert_eq!(classify(&env, error.as_bytes()), "error");
    assert_eq!(classify(&env, recovered.as_bytes()), "idle");
    // The same turn before its answer came: the status line says busy.
    let working = error.replacen(
        "■ {\"error\"",
        "◦ Working (2s • esc to interrupt)\n\n■ {\"error\"",
        1,
    );
    let before = working
        .lines()
        .filter(|l| !l.starts_with("■ {"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(classify(&env, before.as_bytes()), "busy");
    // Only the bottom of a 10,000-line pane counts.
    let mut long = String::new();
    for i in 0..10_000 {
        long.push_str(&format!(
            "{i} › 1. Yes, proceed (y)\nPress enter to confirm or esc to cancel\n"
        ));
    }
    let menu = fixture("waiting-bash-menu.txt");
    assert_eq!(classify(&env, format!("{long}{idle}").as_bytes()), "idle");
    assert_eq!(
        classify(&env, format!("{long}{menu}").as_bytes()),
        "waiting"
    );
    // A menu whose footer is not the last line is no menu (the history quotes one).
    let scrolled = format!("{menu}\n• later output\n\n{input_line}\n\n  ? for shortcuts\n");
    assert_ne!(classify(&env, scrolled.as_bytes()), "waiting");
}

#[test]
fn only_codex_notify_takes_a_payload_argument() {
    let env = Env::new();
    let run = env
        .orchestra(&["event", "--session", "abc", "busy", "{}"])
        .fails_with(2);
    assert!(run.stderr.contains("codex-notify"), "{}", run.stderr);
    // As codex calls it (a hook): never a failure, even for a session that is not there.
    let run = env.orchestra(&[
        "event",
        "--from-hook",
        "--session",
        "abc",
        "codex-notify",
        r#"{"type":"agent-turn-complete"}"#,
    ]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{}", run.stderr);
}
