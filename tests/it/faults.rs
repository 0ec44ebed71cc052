//! Fault injection, as git's own test suite does it: `dispatch`, `merge`, `kill` and
//! `restart` are SIGKILLed at each of their steps in turn (`ORCHESTRA_FAULT_AT=<command>:<n>`,
//! n = 1, 2, … until the command runs to its end), then `doctor --fix` runs. Afterwards no
//! branch, worktree, commit or window may be lost or orphaned, and the record must match
//! what git and tmux hold — checked here directly, not by asking doctor.

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use crate::harness::{git_in, Env, Run};

const FAULT: &str = "ORCHESTRA_FAULT_AT";
/// More steps than any command has: a guard against a loop that never ends.
const MOST_STEPS: usize = 40;

/// What a scenario made before the command runs: the commits, and uncommitted work (a
/// file in a worktree and its text) that must survive too.
pub(crate) struct Before {
    pub(crate) commits: HashSet<String>,
    pub(crate) uncommitted: Option<(PathBuf, String)>,
}

/// Every commit reachable from a branch or from the HEAD of any worktree.
pub(crate) fn all_commits(env: &Env) -> HashSet<String> {
    let mut commits: HashSet<String> = env
        .git(&["rev-list", "--branches"])
        .lines()
        .map(str::to_string)
        .collect();
    for wt in registered_worktrees(env) {
        if wt.exists() {
            commits.extend(
                git_in(&wt, &["rev-list", "HEAD"])
                    .lines()
                    .map(str::to_string),
            );
        }
    }
    commits
}

/// Linked worktrees as git records them (the main one left out).
fn registered_worktrees(env: &Env) -> Vec<PathBuf> {
    env.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|p| *p != env.repo)
        .collect()
}

fn run_with_fault(env: &Env, args: &[&str], command: &str, step: usize) -> (bool, Run) {
    let output = env
        .orchestra_command(&env.repo, args)
        .env(FAULT, format!("{command}:{step}"))
        .output()
        .expect("run orchestra");
    let killed = output.status.signal() == Some(9);
    (killed, Run::from(output))
}

/// Runs `args` killed at step 1, 2, … in a fresh world each time (made by `setup`), until
/// it completes; after each kill `doctor --fix` must leave a consistent world. Returns
/// the number of kill points.
fn at_every_step(command: &str, args: &[&str], setup: impl Fn(&Env) -> Before) -> usize {
    at_every_step_then(command, args, setup, |_, _| {})
}

/// [`at_every_step`], with `after` checking more of each world after its `doctor --fix`
/// (given the world and what was killed where).
pub(crate) fn at_every_step_then(
    command: &str,
    args: &[&str],
    setup: impl Fn(&Env) -> Before,
    after: impl Fn(&Env, &str),
) -> usize {
    for step in 1..=MOST_STEPS {
        let env = Env::new();
        env.start_server(&[]);
        let before = setup(&env);
        let (killed, run) = run_with_fault(&env, args, command, step);
        let context = format!("{command} killed at step {step}");
        if !killed {
            assert_eq!(
                run.code, 0,
                "{command} without a kill at step {step}: {}{}",
                run.stdout, run.stderr
            );
            assert_consistent(&env, &before, &format!("{command} run to its end"));
            return step - 1;
        }
        let fixed = env.orchestra(&["doctor", "--fix"]);
        eprintln!("--- {context}\n{}{}", fixed.stdout, fixed.stderr);
        let check = env.orchestra(&["doctor"]);
        assert_eq!(
            check.code, 0,
            "{context}: doctor still finds problems after --fix\n--fix said:\n{}{}\ndoctor says:\n{}",
            fixed.stdout, fixed.stderr, check.stdout
        );
        assert_consistent(&env, &before, &context);
        after(&env, &context);
    }
    panic!("{command} still killed after {MOST_STEPS} steps: is the fault point in a loop?");
}

#[track_caller]
fn assert_consistent(env: &Env, before: &Before, context: &str) {
    let rows = env.list_json();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();

    // No commit lost: every one is still reachable from a branch, or from the HEAD of a
    // worktree that is still there (and recorded, as checked below).
    let now = all_commits(env);
    let lost: Vec<&String> = before.commits.difference(&now).collect();
    assert!(
        lost.is_empty(),
        "{context}: commits no branch or worktree reaches: {lost:?}"
    );
    // Uncommitted work: still in its worktree, or committed on some branch.
    if let Some((file, content)) = &before.uncommitted {
        let in_place = std::fs::read_to_string(file).ok().as_deref() == Some(content.as_str());
        // The scenarios write it at the top of the worktree.
        let rel = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let committed = env.branches().iter().any(|b| {
            let run = std::process::Command::new("git")
                .arg("-C")
                .arg(&env.repo)
                .args(["show", &format!("{b}:{rel}")])
                .output()
                .expect("git show");
            String::from_utf8_lossy(&run.stdout) == *content
        });
        assert!(
            in_place || committed,
            "{context}: the uncommitted {rel} is lost"
        );
    }

    // Worktrees: every folder git records exists and belongs to a row; every folder in
    // the worktree root is recorded by git.
    let registered = registered_worktrees(env);
    for wt in &registered {
        assert!(
            wt.exists(),
            "{context}: git records {} (gone)",
            wt.display()
        );
        assert!(
            rows.iter().any(|r| Path::new(&text(&r["worktree"])) == wt),
            "{context}: worktree {} has no row",
            wt.display()
        );
    }
    if let Ok(entries) = std::fs::read_dir(env.root.join("repo.worktrees")) {
        for entry in entries.flatten() {
            assert!(
                registered.contains(&entry.path()),
                "{context}: {} is not a worktree git knows",
                entry.path().display()
            );
        }
    }

    // Windows: each one orchestra made is the recorded window of a live row; no other
    // window exists outside the harness's own session.
    let windows = env.tmux(&[
        "list-windows",
        "-a",
        "-F",
        "#{session_name}\t#{window_id}\t#{@orchestra_id}",
    ]);
    for line in windows.lines() {
        let [session, window, id] = line.split('\t').collect::<Vec<_>>()[..] else {
            panic!("{context}: odd list-windows line {line:?}");
        };
        if session == "harness" {
            continue;
        }
        assert!(
            rows.iter()
                .any(|r| text(&r["id"]) == id && text(&r["window"]) == window),
            "{context}: window {window} ({session}, id {id:?}) is no row's window: {rows:#?}"
        );
    }

    // Rows: each has its branch and worktree; a live one its window and pane, ours.
    for r in &rows {
        let label = text(&r["label"]);
        assert!(
            env.branches().contains(&text(&r["branch"])),
            "{context}: {label}'s branch is gone"
        );
        assert!(
            Path::new(&text(&r["worktree"])).exists(),
            "{context}: {label}'s worktree is gone"
        );
        if text(&r["status"]) == "dead" {
            continue;
        }
        let window = text(&r["window"]);
        assert_eq!(
            env.tmux_try(&["show-options", "-wqv", "-t", &window, "@orchestra_id"])
                .stdout
                .trim(),
            text(&r["id"]),
            "{context}: {label} is {} but its window {window} is not its own",
            text(&r["status"])
        );
        let pane_window = env.tmux_try(&[
            "display-message",
            "-p",
            "-t",
            &text(&r["pane"]),
            "#{window_id}",
        ]);
        assert_eq!(
            pane_window.stdout.trim(),
            window,
            "{context}: {label}'s pane is not in its window"
        );
    }

    // Branches: a session/ branch belongs to a row.
    for b in env.branches() {
        if b.starts_with("session/") {
            assert!(
                rows.iter().any(|r| text(&r["branch"]) == b),
                "{context}: branch {b} has no row"
            );
        }
    }

    // Orchestra's own folder: no session folder without a row, no merge journal left.
    if let Ok(entries) = std::fs::read_dir(env.home.join("sessions")) {
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            assert!(
                rows.iter().any(|r| text(&r["id"]) == id),
                "{context}: session folder {id} has no row"
            );
        }
    }
    let journals = std::fs::read_dir(env.home.join("merges")).map_or(0, std::iter::Iterator::count);
    assert_eq!(journals, 0, "{context}: a merge journal is left");
}

/// A generic agent session with one commit on its branch.
fn session_with_commit(env: &Env, label: &str) -> PathBuf {
    env.dispatch_shell(label).ok();
    let wt = env.worktree_path(label);
    std::fs::write(wt.join(format!("{label}.txt")), format!("{label}'s work\n")).unwrap();
    git_in(&wt, &["add", "."]);
    git_in(&wt, &["commit", "-q", "-m", &format!("{label}: work")]);
    wt
}

/// Detaches the worktree's HEAD and commits there: work only the detached HEAD has.
fn commit_on_detached_head(wt: &Path) {
    git_in(wt, &["checkout", "-q", "--detach"]);
    std::fs::write(wt.join("detached.txt"), "only on the detached HEAD\n").unwrap();
    git_in(wt, &["add", "."]);
    git_in(wt, &["commit", "-q", "-m", "on the detached HEAD"]);
}

fn report(command: &str, points: usize) {
    eprintln!("fault injection: {command} has {points} kill points");
}

#[test]
fn dispatch_killed_at_every_step_loses_and_orphans_nothing() {
    let args = [
        "dispatch",
        "fresh",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--prompt",
        "echo hello",
    ];
    // A neighbour session that must come through untouched.
    let points = at_every_step("dispatch", &args, |env| {
        session_with_commit(env, "neighbour");
        Before {
            commits: all_commits(env),
            uncommitted: None,
        }
    });
    report("dispatch", points);
    assert!(points >= 6, "dispatch has only {points} kill points");
    // The first session of the repo: dispatch makes the worktree folder too.
    let points = at_every_step("dispatch", &args, |env| Before {
        commits: all_commits(env),
        uncommitted: None,
    });
    report("dispatch (first session)", points);
    assert!(points >= 7, "dispatch has only {points} kill points");
}

#[test]
fn kill_killed_at_every_step_loses_and_orphans_nothing() {
    let points = at_every_step("kill", &["kill", "doomed", "--force"], |env| {
        let wt = session_with_commit(env, "doomed");
        commit_on_detached_head(&wt);
        let file = wt.join("unsaved.txt");
        std::fs::write(&file, "not committed yet\n").unwrap();
        Before {
            commits: all_commits(env),
            uncommitted: Some((file, "not committed yet\n".into())),
        }
    });
    report("kill", points);
    assert!(points >= 6, "kill has only {points} kill points");
}

#[test]
fn merge_killed_at_every_step_loses_and_orphans_nothing() {
    let points = at_every_step("merge", &["merge", "landing", "--yes"], |env| {
        let wt = session_with_commit(env, "landing");
        commit_on_detached_head(&wt);
        Before {
            commits: all_commits(env),
            uncommitted: None,
        }
    });
    report("merge", points);
    assert!(points >= 8, "merge has only {points} kill points");

    let points = at_every_step(
        "merge",
        &["merge", "landing", "--yes", "--include-uncommitted"],
        |env| {
            let wt = session_with_commit(env, "landing");
            let file = wt.join("unsaved.txt");
            std::fs::write(&file, "to be merged\n").unwrap();
            Before {
                commits: all_commits(env),
                uncommitted: Some((file, "to be merged\n".into())),
            }
        },
    );
    report("merge --include-uncommitted", points);
}

#[test]
fn restart_killed_at_every_step_loses_and_orphans_nothing() {
    // Its window closed under it: restart opens a new one.
    let points = at_every_step("restart", &["restart", "again"], |env| {
        session_with_commit(env, "again");
        let window = env.session("again")["window"].as_str().unwrap().to_string();
        env.tmux(&["kill-window", "-t", &window]);
        env.orchestra(&["doctor", "--fix"]);
        assert_eq!(env.session("again")["status"], "dead");
        Before {
            commits: all_commits(env),
            uncommitted: None,
        }
    });
    report("restart (new window)", points);
    assert!(points >= 2, "restart has only {points} kill points");

    // Its agent exited, the pane stayed: restart starts it again in that pane.
    let points = at_every_step("restart", &["restart", "again"], |env| {
        env.orchestra(&[
            "dispatch",
            "again",
            "--agent",
            "sleep 1000",
            "--kind",
            "generic",
        ])
        .ok();
        let pane = env.session("again")["pane"].as_str().unwrap().to_string();
        let pid = env.tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
        std::process::Command::new("kill")
            .arg(pid.trim())
            .status()
            .unwrap();
        assert!(crate::harness::wait_until(
            std::time::Duration::from_secs(10),
            || {
                env.orchestra(&["refresh"]).ok();
                env.session("again")["state"] == "exited"
            }
        ));
        Before {
            commits: all_commits(env),
            uncommitted: None,
        }
    });
    report("restart (same pane)", points);
    assert!(points >= 2, "restart has only {points} kill points");
}
