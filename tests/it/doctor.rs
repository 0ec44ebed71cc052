//! doctor: checks, and reconciling the record with tmux and git.

use std::time::Duration;

use crate::harness::{AgentCli, ClaudeWorld, Env};

#[test]
fn doctor_finds_gone_panes_and_stray_worktrees_and_fixes_what_is_safe() {
    let env = Env::new();
    env.start_server(&[]);
    let clean = env.orchestra(&["doctor"]).ok();
    assert!(clean.stdout.contains("ok       tmux"), "{}", clean.stdout);
    assert!(
        clean.stdout.contains("ok       state store"),
        "{}",
        clean.stdout
    );

    env.dispatch_shell("lost").ok();
    let window = env.session("lost")["window"].as_str().unwrap().to_string();
    env.tmux(&["kill-window", "-t", &window]);
    // A worktree beside ours that no session owns.
    env.git(&[
        "worktree",
        "add",
        "-q",
        env.worktree_path("stray").to_str().unwrap(),
    ]);

    let run = env.orchestra(&["doctor"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("session lost"), "{}", run.stdout);
    assert!(run.stdout.contains("stray"), "{}", run.stdout);
    assert_eq!(
        env.session("lost")["status"],
        "running",
        "without --fix nothing changes"
    );

    let run = env.orchestra(&["doctor", "--fix"]);
    assert!(run.stdout.contains("marked dead"), "{}", run.stdout);
    assert_eq!(env.session("lost")["status"], "dead");
    // The stray worktree may hold work: listed, never removed.
    assert!(env.worktree_path("stray").exists());
    assert_eq!(
        run.code, 1,
        "the stray worktree is still a problem: {}",
        run.stdout
    );

    // A worktree folder deleted by hand: git's record of it is pruned by --fix.
    std::fs::remove_dir_all(env.worktree_path("stray")).unwrap();
    let run = env.orchestra(&["doctor", "--fix"]);
    assert!(run.stdout.contains("pruned"), "{}", run.stdout);
    assert!(!env.git(&["worktree", "list"]).contains("stray"));
}

/// The record of `labels` as `list` has it: (status, window, pane, conversation).
fn recorded(env: &Env, labels: &[&str]) -> Vec<[String; 4]> {
    labels
        .iter()
        .map(|l| {
            let s = env.session(l);
            ["status", "window", "pane", "conversation"]
                .map(|k| s[k].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// A lost record never costs a running agent: two real claude sessions lose their record
/// (state.db deleted, later damaged): doctor says what it finds and how to recover,
/// `--fix` adopts both as they run (their windows, panes, worktrees and branches
/// untouched, the damaged file kept aside), and a later kill works as ever.
#[test]
fn a_lost_record_is_rebuilt_from_tmux_and_git_without_costing_an_agent() {
    let env = Env::new();
    let labels = ["first", "second"];
    let trusted = labels.map(|l| env.worktree_path(l));
    let Some(world) = ClaudeWorld::start(&env, &[&trusted[0], &trusted[1]]) else {
        return;
    };
    env.start_server(&world.env);
    let agent = AgentCli::claude("").command(&world.claude);
    for label in labels {
        env.orchestra(&[
            "dispatch",
            label,
            "--agent",
            &agent,
            "--prompt",
            "[[say: on it]]",
        ])
        .ok();
    }
    for label in labels {
        env.reaches(label, "idle", Duration::from_secs(60));
    }
    let before = recorded(&env, &labels);
    let windows = env.windows();
    let branches = env.branches();
    // The record that begins after the loss is younger than the branches by a second at
    // least (git's reflog keeps seconds).
    std::thread::sleep(Duration::from_millis(1100));
    for name in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(env.home.join(name));
    }

    let run = env.orchestra(&["doctor"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.stdout.matches("whose row was lost").count(),
        2,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("doctor --fix: adopted"),
        "{}",
        run.stdout
    );
    assert!(
        env.list_json().is_empty(),
        "without --fix nothing is recorded"
    );
    assert_eq!(env.windows(), windows, "without --fix nothing is closed");

    let run = env.orchestra(&["doctor", "--fix"]);
    assert_eq!(
        run.stdout.matches("adopted into the record").count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(env.windows(), windows, "{}", run.stdout);
    assert_eq!(env.branches(), branches, "{}", run.stdout);
    for path in &trusted {
        assert!(
            path.exists(),
            "{} was removed: {}",
            path.display(),
            run.stdout
        );
    }
    assert_eq!(recorded(&env, &labels), before, "{}", run.stdout);
    let again = env.orchestra(&["doctor"]);
    assert_eq!(again.code, 0, "adopted, all is settled: {}", again.stdout);

    // A damaged file: every command says how to recover, --fix keeps it aside.
    std::fs::write(
        env.home.join("state.db"),
        "this is no database, just text\n".repeat(200),
    )
    .unwrap();
    for name in ["state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(env.home.join(name));
    }
    std::thread::sleep(Duration::from_millis(1100));
    let run = env.orchestra(&["doctor"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("is damaged")
            && run
                .stdout
                .contains("`orchestra doctor --fix` moves it aside"),
        "{}",
        run.stdout
    );
    let list = env.orchestra(&["list"]);
    assert_eq!(list.code, 1, "{}", list.stderr);
    assert!(
        list.stderr.contains("orchestra doctor --fix"),
        "{}",
        list.stderr
    );
    let run = env.orchestra(&["doctor", "--fix"]);
    assert!(run.stdout.contains("moved aside to"), "{}", run.stdout);
    let aside: Vec<_> = std::fs::read_dir(&env.home)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("state.db.corrupt-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{}", run.stdout);
    assert!(std::fs::read_to_string(aside[0].path())
        .unwrap()
        .starts_with("this is no database"));
    assert_eq!(
        run.stdout.matches("adopted into the record").count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(env.windows(), windows, "{}", run.stdout);
    assert_eq!(recorded(&env, &labels), before, "{}", run.stdout);

    // The adopted sessions are sessions like any other: one killed, the other still heard.
    let run = env.orchestra(&["kill", "first"]).ok();
    assert!(run.stdout.contains("session/first"), "{}", run.stdout);
    assert!(!trusted[0].exists());
    assert_eq!(env.windows().len(), windows.len() - 1);
    let listed: Vec<String> = env
        .list_json()
        .iter()
        .map(|s| s["label"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(listed, ["second"]);
    env.brief("second", "[[say: still here]]");
    env.wait_screen("second", "still here", Duration::from_secs(40));
    env.said_without_ticks("second", "idle", Duration::from_secs(20));
}

/// What a lost record's session cannot be adopted from (its branch checked out in no
/// worktree any more) is reported and left alone: its window stays open, its branch keeps
/// its name, its folder stays; a session beside it that can be is adopted.
#[test]
fn a_lost_session_that_cannot_be_adopted_is_left_alone() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("whole").ok();
    env.dispatch_shell("torn").ok();
    let torn = env.session("torn")["id"].as_str().unwrap().to_string();
    let windows = env.windows();
    std::thread::sleep(Duration::from_millis(1100));
    for name in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(env.home.join(name));
    }
    // Its worktree goes (by hand, say): its branch is checked out nowhere.
    env.git(&[
        "worktree",
        "remove",
        "--force",
        env.worktree_path("torn").to_str().unwrap(),
    ]);

    let run = env.orchestra(&["doctor", "--fix"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("whose row was lost, but its branch session/torn is checked out in no worktree: left alone"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("adopted into the record").count(),
        1,
        "{}",
        run.stdout
    );
    assert_eq!(env.windows(), windows, "{}", run.stdout);
    assert!(
        env.branches().contains(&"session/torn".to_string()),
        "{:?}",
        env.branches()
    );
    assert!(
        env.home.join("sessions").join(&torn).is_dir(),
        "{}",
        run.stdout
    );
    let listed: Vec<String> = env
        .list_json()
        .iter()
        .map(|s| s["label"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(listed, ["whole"]);
    // Asked again, it still says so and still changes nothing.
    let again = env.orchestra(&["doctor", "--fix"]);
    assert_eq!(again.code, 1, "{}", again.stdout);
    assert_eq!(env.windows(), windows, "{}", again.stdout);
    assert!(env.branches().contains(&"session/torn".to_string()));
}
