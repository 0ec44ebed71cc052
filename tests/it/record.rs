//! The record under strain: a write lock another process holds, clocks that step back.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::harness::{wait_until, Env};

/// A python3 process holding `BEGIN IMMEDIATE` on `db` (as another writer would) until
/// dropped.
struct WriteLock {
    child: Child,
    release: PathBuf,
}

impl WriteLock {
    fn hold(db: &Path, dir: &Path) -> WriteLock {
        let held = dir.join("lock-held");
        let release = dir.join("lock-release");
        let script = "import os, sqlite3, sys, time\n\
            c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
            c.execute('BEGIN IMMEDIATE')\n\
            open(sys.argv[2], 'w').close()\n\
            while not os.path.exists(sys.argv[3]): time.sleep(0.05)\n\
            c.execute('ROLLBACK')\n";
        let child = Command::new("python3")
            .args(["-c", script])
            .arg(db)
            .arg(&held)
            .arg(&release)
            .spawn()
            .expect("python3 (tests/run.sh installs it)");
        assert!(
            wait_until(Duration::from_secs(10), || held.exists()),
            "python3 never took the write lock"
        );
        WriteLock { child, release }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.release, "");
        let _ = self.child.wait();
    }
}

/// The words of `id`'s hook events, as Claude Code runs its hooks (JSON on stdin).
fn hook(env: &Env, id: &str, event: &str, json: &str) -> (crate::harness::Run, Duration) {
    let started = Instant::now();
    let run = env.orchestra_stdin(
        &["event", "--from-hook", "--session", id, event],
        json.as_bytes(),
    );
    (run, started.elapsed())
}

/// A hook returns quickly whatever the database does: with another process holding the
/// write lock, hook events return well within Claude's 10 s timeout (and the status line
/// within tmux's patience), their words are kept (no prompt text with them), and the next
/// command after the lock is released records them in the order they were said.
#[test]
fn a_hook_on_a_write_locked_record_returns_at_once_and_its_word_is_kept() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("locked").ok();
    let id = env.session("locked")["id"].as_str().unwrap().to_string();
    let lock = WriteLock::hold(&env.home.join("state.db"), &env.root);

    let (run, took) = hook(
        &env,
        &id,
        "UserPromptSubmit",
        r#"{"prompt":"a secret 9c1e"}"#,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(took < Duration::from_secs(3), "the hook took {took:?}");
    let (run, took) = hook(&env, &id, "Stop", "{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(took < Duration::from_secs(3), "the hook took {took:?}");
    let started = Instant::now();
    let line = env.orchestra(&["status-line"]);
    assert_eq!(line.code, 0, "{}", line.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let spooled: Vec<String> = std::fs::read_dir(env.home.join("spool"))
        .expect("the words wait in the spool")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(spooled.len(), 2, "{spooled:?}");
    assert!(!spooled.iter().any(|w| w.contains("9c1e")), "{spooled:?}");
    drop(lock);

    env.orchestra(&["refresh"]).ok();
    let changes = env.changes_text("locked");
    assert!(
        changes.contains("unknown>busy:UserPromptSubmit busy>idle:Stop"),
        "{changes}"
    );
    assert!(
        std::fs::read_dir(env.home.join("spool")).map_or(0, std::iter::Iterator::count) == 0,
        "replayed words leave the spool"
    );
}

/// No time from outside is trusted past now + skew: a record stamped ten minutes ahead
/// (the clock stepped back since: NTP, a resumed VM) still takes the next hook's word.
#[test]
fn a_clock_stepped_back_still_takes_the_next_hook_word() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("stepped").ok();
    let id = env.session("stepped")["id"].as_str().unwrap().to_string();
    let ahead_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
        + 600_000_000;
    let script = "import sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        c.execute(\"UPDATE sessions SET state = 'idle', state_source = 'hook', state_at = ? WHERE id = ?\", (int(sys.argv[2]), sys.argv[3]))\n\
        c.commit()\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(env.home.join("state.db"))
        .arg(ahead_us.to_string())
        .arg(&id)
        .status()
        .expect("python3 (tests/run.sh installs it)");
    assert!(status.success());
    assert_eq!(env.state("stepped"), "idle");

    let (run, _) = hook(&env, &id, "UserPromptSubmit", "{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        env.state("stepped"),
        "busy",
        "the word after the step was dropped"
    );
    let (run, _) = hook(&env, &id, "Stop", "{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        env.state("stepped"),
        "idle",
        "{}",
        env.changes_text("stepped")
    );
}

/// The files in the home's briefings folder.
fn briefing_files(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(env.home.join("briefings"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Briefings go with their session (a kill removes them, the other session's stay) and
/// with the events of their time (pruned when the events past the retention are).
#[test]
fn briefings_go_with_their_session_and_with_the_events_of_their_time() {
    let mut env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("told").ok();
    env.dispatch_shell("kept").ok();
    env.brief("told", "echo first word");
    env.brief("kept", "echo second word");
    let id = |label: &str| env.session(label)["id"].as_str().unwrap().to_string();
    let (told, kept) = (id("told"), id("kept"));
    let files = briefing_files(&env);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files
            .iter()
            .any(|f| f.starts_with(&format!("{told}-told-"))),
        "{files:?}"
    );

    env.orchestra(&["kill", "told"]).ok();
    let files = briefing_files(&env);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with(&format!("{kept}-kept-")), "{files:?}");

    // A briefing from two days ago, with a retention of 3 s: once the oldest event is
    // past it (by as much again), the next event prunes the events and that briefing.
    let stale = env
        .home
        .join("briefings/0123456789ab-gone-20000101-000000.000.txt");
    std::fs::write(&stale, "long ago").unwrap();
    let touched = Command::new("touch")
        .args(["-d", "2 days ago"])
        .arg(&stale)
        .status()
        .expect("touch");
    assert!(touched.success());
    env.env
        .push(("ORCHESTRA_EVENTS_RETENTION".into(), "3".into()));
    std::thread::sleep(Duration::from_secs(7));
    env.brief("kept", "echo a fresh word");
    let (run, _) = hook(&env, &kept, "UserPromptSubmit", "{}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!stale.exists(), "{:?}", briefing_files(&env));
    let files = briefing_files(&env);
    assert_eq!(files.len(), 1, "the fresh briefing stays: {files:?}");
    let fresh = std::fs::read_to_string(env.home.join("briefings").join(&files[0])).unwrap();
    assert_eq!(fresh, "echo a fresh word");
}
