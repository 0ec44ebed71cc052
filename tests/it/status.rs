//! The status path: refresh cost, status-line caching, stalled/exited/dead detection.

use std::time::Duration;

use crate::harness::{which, Env};

/// Puts a `tmux` on PATH that logs each call, then runs the real one.
pub(crate) fn count_tmux_calls(env: &mut Env) -> std::path::PathBuf {
    let dir = env.root.join("counting-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let log = env.root.join("tmux-calls.log");
    let real = which("tmux").unwrap();
    std::fs::write(
        dir.join("tmux"),
        format!(
            // One line per call: an argument may hold a newline (tmux formats do).
            "#!/bin/sh\n{{ printf '%s' \"$*\" | tr '\\n' ' '; echo; }} >> {}\nexec {} \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(dir.join("tmux"))
        .status()
        .unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    env.env.push(("PATH".into(), path));
    log
}

pub(crate) fn calls(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |t| t.lines().count())
}

#[test]
fn a_quiet_refresh_costs_one_call_and_a_fresh_status_line_none() {
    let mut env = Env::new();
    env.start_server(&[]);
    for label in ["one", "two", "three", "four"] {
        env.orchestra(&[
            "dispatch",
            label,
            "--agent",
            "sleep 600",
            "--kind",
            "generic",
        ])
        .ok();
    }
    // Settle: capture everything once, let a second pass so activity is older than it.
    env.orchestra(&["refresh"]).ok();
    std::thread::sleep(Duration::from_millis(1100));
    env.orchestra(&["refresh"]).ok();
    let events_before = env.orchestra(&["events", "--json"]).ok().stdout;

    let log = count_tmux_calls(&mut env);
    let run = env.orchestra(&["refresh", "--json"]).ok();
    let outcome: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(outcome["captured"], 0, "{outcome}");
    assert!(
        calls(&log) <= 2,
        "a quiet refresh made {} tmux calls",
        calls(&log)
    );
    assert_eq!(
        outcome["tmux_calls"].as_u64().unwrap() as usize,
        calls(&log)
    );
    env.env.clear();
    assert_eq!(
        env.orchestra(&["events", "--json"]).ok().stdout,
        events_before,
        "nothing written"
    );

    // status-line: the first call in a second refreshes, the next ones read the cache.
    let log = count_tmux_calls(&mut env);
    std::thread::sleep(Duration::from_millis(1100));
    env.orchestra(&["status-line"]).ok();
    let after_first = calls(&log);
    assert!((1..=2).contains(&after_first), "{after_first}");
    for _ in 0..5 {
        env.orchestra(&["status-line"]).ok();
    }
    assert_eq!(calls(&log), after_first, "a fresh cache makes no tmux call");
}

#[test]
fn status_line_sums_up_states_with_configurable_symbols() {
    let env = Env::new();
    env.start_server(&[]);
    for label in ["a", "b", "c"] {
        env.dispatch_shell(label).ok();
    }
    let id = |l: &str| env.session(l)["id"].as_str().unwrap().to_string();
    env.orchestra(&["event", "--session", &id("a"), "waiting"])
        .ok();
    env.orchestra(&["event", "--session", &id("b"), "waiting"])
        .ok();
    env.orchestra(&["event", "--session", &id("c"), "error"])
        .ok();
    env.tmux(&["set-option", "-g", "@orchestra-symbol-waiting", "W"]);
    std::thread::sleep(Duration::from_millis(1100));
    let line = env.orchestra(&["status-line"]).ok().stdout;
    assert!(line.contains("W2"), "{line}");
    assert!(line.contains("✗1"), "{line}");
    assert!(line.contains("#[fg=red,bold]"), "styled for tmux: {line}");
    // health shows the same.
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["health", "--json"]).ok().stdout).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows
        .iter()
        .any(|r| r["label"] == "c" && r["state"] == "error" && r["source"] == "hook"));
}

#[test]
fn stalled_exited_and_dead_are_detected() {
    let env = Env::new();
    env.start_server(&[]);
    env.tmux(&["set-option", "-g", "@orchestra-stall-after", "1s"]);

    // Busy but silent past the limit: stalled; output again: running.
    env.dispatch_shell("silent").ok();
    let id = env.session("silent")["id"].as_str().unwrap().to_string();
    env.orchestra(&["event", "--session", &id, "busy"]).ok();
    std::thread::sleep(Duration::from_millis(2500));
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("silent")["status"], "stalled");
    let pane = env.session("silent")["pane"].as_str().unwrap().to_string();
    env.tmux(&["send-keys", "-t", &pane, "-l", "echo awake"]);
    env.tmux(&["send-keys", "-t", &pane, "Enter"]);
    std::thread::sleep(Duration::from_millis(300));
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("silent")["status"], "running");

    // The agent replaced by a shell: exited.
    env.orchestra(&[
        "dispatch",
        "replaced",
        "--agent",
        "env bash --norc --noprofile",
        "--kind",
        "generic",
    ])
    .ok();
    std::thread::sleep(Duration::from_millis(300));
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("replaced")["state"], "exited");

    // The window closed under us: dead.
    env.dispatch_shell("closed").ok();
    let window = env.session("closed")["window"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux(&["kill-window", "-t", &window]);
    env.orchestra(&["refresh"]).ok();
    let closed = env.session("closed");
    assert_eq!(closed["status"], "dead");
    assert_eq!(closed["state"], "exited");
}

#[test]
fn watch_redraws_the_table_in_place() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("watched").ok();
    let run = env
        .orchestra(&["watch", "--count", "2", "--interval", "1"])
        .ok();
    assert_eq!(
        run.stdout.matches("\u{1b}[H").count(),
        2,
        "two frames, each from the top"
    );
    assert!(
        run.stdout.contains("watched") && run.stdout.contains("LABEL"),
        "{}",
        run.stdout
    );
}

/// Sends `signal` (`-STOP`, `-CONT`) to process `pid`.
fn signal(pid: &str, signal: &str) {
    let ok = std::process::Command::new("kill")
        .args([signal, pid])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {signal} {pid}");
}

/// Wakes a stopped tmux server whatever the test's end, before the world's cleanup needs
/// the server to answer.
struct Resume(String);

impl Drop for Resume {
    fn drop(&mut self) {
        signal(&self.0, "-CONT");
    }
}

/// A tmux server that stopped answering (SIGSTOP: alive, its socket still accepting, no
/// reply ever) costs the status line tmux's deadline, not forever: `status-line` and
/// `refresh` come back with one line naming tmux and the time it had, and once the server
/// answers again the status line is whole again (only our tmux client was killed).
#[test]
fn a_hung_tmux_server_costs_the_status_line_its_deadline_not_forever() {
    let env = Env::new();
    env.start_server(&[]);
    env.orchestra(&[
        "dispatch",
        "one",
        "--agent",
        "sleep 600",
        "--kind",
        "generic",
    ])
    .ok();
    env.orchestra(&["status-line"]).ok();
    let pid = env
        .tmux(&["display-message", "-p", "#{pid}"])
        .trim()
        .to_string();
    signal(&pid, "-STOP");
    let resume = Resume(pid);
    // Past the status line's cache (1 s): the next one asks tmux.
    std::thread::sleep(Duration::from_millis(1100));

    let deadline = orchestra::tmux::TMUX_DEADLINE;
    let bound = deadline + Duration::from_millis(1500);
    let said = format!(
        "orchestra: tmux did not finish within {}s: it was killed",
        deadline.as_secs()
    );
    for args in [&["status-line"][..], &["refresh"]] {
        let started = std::time::Instant::now();
        let run = env.orchestra(args);
        let took = started.elapsed();
        eprintln!("{args:?} against a stopped tmux server: {took:?}");
        assert!(took < bound, "{args:?} took {took:?} (bound {bound:?})");
        assert!(
            took >= deadline,
            "{args:?} gave up before tmux's deadline: {took:?}"
        );
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim_end(), said, "{args:?}");
        assert_eq!(run.stdout, "", "{args:?}");
    }

    // Awake again, the server answers the next tick (the generic agent has been silent
    // long enough by now to count as idle).
    drop(resume);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        env.orchestra(&["status-line"]).ok().stdout,
        "#[fg=green]✓1#[default]\n"
    );
}

/// tmux's limit on one command (`orchestra::tmux::COMMAND_MAX`, what batches are cut to)
/// is the real server's: a command of exactly that size passes, one byte more is refused.
#[test]
fn the_command_limit_batches_keep_to_is_tmuxs_own() {
    let env = Env::new();
    env.start_server(&[]);
    let limit = orchestra::tmux::COMMAND_MAX;
    let sized = |total: usize| {
        // "display-message" and "-p", each with its NUL, then the word that fills it.
        let word = "x".repeat(total - 16 - 3 - 1);
        env.tmux_try(&["display-message", "-p", &word])
    };
    let fits = sized(limit);
    assert_eq!(fits.code, 0, "{}", fits.stderr);
    let over = sized(limit + 1);
    assert_ne!(over.code, 0, "tmux took {} bytes", limit + 1);
}

/// 256 sessions whose windows print: each refresh's batch is cut under tmux's command
/// limit, so refresh and the status line still read every window. The windows run a
/// cheap printing loop, not 256 real agents (this machine cannot run that many claude
/// processes), made straight in the test's real tmux server and recorded as generic
/// sessions (what dispatch records, without 256 worktrees): the refresh under test is
/// the real one.
#[test]
fn two_hundred_fifty_six_printing_windows_refresh_and_show_in_the_status_line() {
    const WINDOWS: usize = 256;
    let env = Env::new();
    env.start_server(&[]);
    let store = orchestra::state::Store::open(&env.home).expect("the record");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for n in 1..=WINDOWS {
        let label = format!("w{n}");
        let made = env.tmux(&[
            "new-window",
            "-d",
            "-t",
            "harness:",
            "-P",
            "-F",
            "#{window_id} #{pane_id}",
            "--",
            "sh",
            "-c",
            &format!("while :; do echo printing {label}; sleep 1; done"),
        ]);
        let (window, pane) = made.trim().split_once(' ').expect("window and pane");
        let id = format!("many{n:04}");
        env.tmux(&["set-option", "-w", "-t", window, "@orchestra_id", &id]);
        let session: orchestra::state::Session = serde_json::from_value(serde_json::json!({
            "id": id, "repo": env.repo.to_string_lossy(), "label": label,
            "branch": format!("session/{label}"), "base_commit": "", "base_branch": "main",
            "worktree": env.repo.to_string_lossy(),
            "tmux_socket": env.socket.to_string_lossy(), "tmux_session": "harness",
            "window": window, "pane": pane, "agent_kind": "generic",
            "agent_argv": ["sh"], "status": "running", "state": "unknown", "retry_count": 0,
            "created_at": now, "updated_at": now, "state_at": 0,
        }))
        .expect("a session row");
        store.insert_session(&session).expect("recorded");
    }
    drop(store);
    std::thread::sleep(Duration::from_millis(1500));

    let run = env.orchestra(&["refresh", "--json"]).ok();
    let outcome: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        outcome["tmux_calls"].as_u64().unwrap() > 1,
        "more than one call: one cannot hold {WINDOWS} captures: {outcome}"
    );
    let list = env.list_json();
    assert_eq!(list.len(), WINDOWS);
    let unread: Vec<&serde_json::Value> = list.iter().filter(|s| s["state"] != "busy").collect();
    assert!(
        unread.is_empty(),
        "windows whose state was not read: {unread:?}"
    );
    // Again, now with the recent printers recaptured inside the listing call.
    std::thread::sleep(Duration::from_millis(1100));
    env.orchestra(&["refresh"]).ok();
    std::thread::sleep(Duration::from_millis(1100));
    let line = env.orchestra(&["status-line"]).ok().stdout;
    assert!(line.contains(&WINDOWS.to_string()), "{line}");
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["health", "--json"]).ok().stdout).unwrap();
    assert_eq!(rows.len(), WINDOWS);
    assert!(rows.iter().all(|r| r["state"] == "busy"), "{rows:?}");
}
