//! Many orchestra processes on one repo at once, as a person with several panes (and the
//! agents' hooks) would run them: 16 dispatches in parallel (and four racing for one
//! label), then kills, merges, events and more dispatches all at the same time. Nothing
//! may be lost or left behind: every row, label, branch, worktree and window accounted for.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::Stdio;

use crate::harness::{git_in, Env, Run};

/// The generic agent every session runs: a shell that stays put.
const AGENT: &str = "bash --norc --noprofile";

fn dispatch(env: &Env, label: &str) -> Run {
    env.orchestra(&["dispatch", label, "--kind", "generic", "--agent", AGENT])
}

/// `orchestra event --from-hook EVENT --session ID` with `json` on stdin, as a hook runs.
fn hook_event(env: &Env, event: &str, id: &str, json: &str) -> Run {
    let mut child = env
        .orchestra_command(&env.repo, &["event", "--from-hook", event, "--session", id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run orchestra");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(json.as_bytes());
    Run::from(child.wait_with_output().expect("wait"))
}

/// Runs every job on its own thread at once; returns their results in order.
fn all_at_once<'a>(
    jobs: Vec<Box<dyn FnOnce() -> (String, Run) + Send + 'a>>,
) -> Vec<(String, Run)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs.into_iter().map(|job| s.spawn(job)).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a job panicked"))
            .collect()
    })
}

/// What the record, git and tmux say, checked against each other: each live row has its
/// branch, worktree and window (carrying its id); nothing of ours exists without a row.
#[track_caller]
fn assert_consistent(env: &Env, live: &BTreeSet<String>) -> BTreeMap<String, serde_json::Value> {
    let rows = env.list_json();
    let mut by_label = BTreeMap::new();
    for row in rows {
        let label = row["label"].as_str().expect("a label").to_string();
        assert!(
            by_label.insert(label.clone(), row).is_none(),
            "label {label} is listed twice"
        );
    }
    assert_eq!(
        by_label.keys().cloned().collect::<BTreeSet<_>>(),
        *live,
        "the live sessions"
    );
    let mut branches = BTreeSet::from(["main".to_string()]);
    branches.extend(live.iter().map(|l| format!("session/{l}")));
    assert_eq!(
        env.branches().into_iter().collect::<BTreeSet<_>>(),
        branches,
        "branches: one per live session, no stray, nothing archived"
    );
    let worktrees: BTreeSet<String> = env
        .git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(str::to_string)
        .collect();
    let mut expected = BTreeSet::from([env.repo.display().to_string()]);
    expected.extend(
        live.iter()
            .map(|l| env.worktree_path(l).display().to_string()),
    );
    assert_eq!(worktrees, expected, "git's worktrees");
    let folders: BTreeSet<String> = std::fs::read_dir(env.root.join("repo.worktrees"))
        .map(|d| {
            d.filter_map(std::result::Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(&folders, live, "worktree folders on disk");
    // Windows carrying an orchestra id: exactly the live rows', each once, with its name.
    let mut windows: BTreeMap<String, (String, String)> = BTreeMap::new();
    for line in env.windows() {
        let mut f = line.splitn(3, ' ');
        let (Some(window), Some(name), Some(id)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if id.is_empty() {
            continue;
        }
        assert!(
            windows
                .insert(id.to_string(), (window.to_string(), name.to_string()))
                .is_none(),
            "two windows carry id {id}"
        );
    }
    let ids: BTreeSet<String> = by_label
        .values()
        .map(|r| r["id"].as_str().expect("an id").to_string())
        .collect();
    assert_eq!(
        windows.keys().cloned().collect::<BTreeSet<_>>(),
        ids,
        "windows with an orchestra id: {windows:?}"
    );
    for (label, row) in &by_label {
        let id = row["id"].as_str().expect("id");
        let (window, name) = &windows[id];
        assert_eq!(row["window"].as_str(), Some(window.as_str()), "{label}");
        assert_eq!(name, label, "the window of {label} is named after it");
    }
    let ports: Vec<i64> = by_label
        .values()
        .filter_map(|r| r["port"].as_i64())
        .collect();
    assert_eq!(
        ports.iter().collect::<BTreeSet<_>>().len(),
        ports.len(),
        "ports are unique: {ports:?}"
    );
    let dirs: BTreeSet<String> = std::fs::read_dir(env.home.join("sessions"))
        .map(|d| {
            d.filter_map(std::result::Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        dirs.is_subset(&ids),
        "session folders of sessions that are gone: {:?}",
        dirs.difference(&ids).collect::<Vec<_>>()
    );
    by_label
}

#[test]
fn sixteen_parallel_dispatches_then_kills_merges_and_events_lose_nothing() {
    let env = Env::new();
    env.start_server(&[]);

    // 16 dispatches at once, and four more racing for one label.
    let labels: Vec<String> = (0..16).map(|i| format!("c{i:02}")).collect();
    let mut jobs: Vec<Box<dyn FnOnce() -> (String, Run) + Send + '_>> = Vec::new();
    for label in &labels {
        let env = &env;
        jobs.push(Box::new(move || (label.clone(), dispatch(env, label))));
    }
    for _ in 0..4 {
        let env = &env;
        jobs.push(Box::new(move || ("dup".to_string(), dispatch(env, "dup"))));
    }
    let runs = all_at_once(jobs);
    let mut failures = Vec::new();
    for (label, run) in &runs[..16] {
        if run.code != 0 {
            failures.push(format!(
                "dispatch {label}: exit {}: {}",
                run.code, run.stderr
            ));
        }
    }
    let dups: Vec<&Run> = runs[16..].iter().map(|(_, r)| r).collect();
    let won = dups.iter().filter(|r| r.code == 0).count();
    if won != 1 {
        failures.push(format!(
            "{won} of 4 dispatches of one label succeeded: {:?}",
            dups.iter().map(|r| &r.stderr).collect::<Vec<_>>()
        ));
    }
    for r in dups.iter().filter(|r| r.code != 0) {
        if r.code != 2 || r.stderr.lines().count() != 1 {
            failures.push(format!(
                "a losing dispatch of one label: exit {}, stderr {:?} (want 2 and one line)",
                r.code, r.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let mut live: BTreeSet<String> = labels.iter().cloned().collect();
    live.insert("dup".into());
    let rows = assert_consistent(&env, &live);

    // Work to merge: one commit (its own file) on each of c04..c07.
    for label in &labels[4..8] {
        let worktree = env.worktree_path(label);
        std::fs::write(worktree.join(format!("{label}.txt")), label).expect("write");
        git_in(&worktree, &["add", "."]);
        git_in(
            &worktree,
            &["commit", "-q", "-m", &format!("work of {label}")],
        );
    }

    // All at once: kill c00..c03 and c12..c15 (the latter while events hit them), merge
    // c04..c07, events to c08..c15, and four new dispatches.
    let id_of = |label: &str| rows[label]["id"].as_str().expect("id").to_string();
    let states = ["busy", "idle", "waiting", "busy", "idle"];
    let new_labels: Vec<String> = (0..4).map(|i| format!("d{i:02}")).collect();
    let mut jobs: Vec<Box<dyn FnOnce() -> (String, Run) + Send + '_>> = Vec::new();
    for label in labels[..4].iter().chain(&labels[12..]) {
        let env = &env;
        jobs.push(Box::new(move || {
            (format!("kill {label}"), env.orchestra(&["kill", label]))
        }));
    }
    for label in &labels[4..8] {
        let env = &env;
        jobs.push(Box::new(move || {
            (
                format!("merge {label}"),
                env.orchestra(&["merge", label, "--yes"]),
            )
        }));
    }
    for label in &labels[8..] {
        let id = id_of(label);
        for (i, state) in states.iter().enumerate() {
            let (env, id, label) = (&env, id.clone(), label.clone());
            jobs.push(Box::new(move || {
                let run = if i % 2 == 0 {
                    env.orchestra(&["event", state, "--session", &id])
                } else {
                    let json = format!(r#"{{"hook_event_name":"Stop","session_id":"{id}"}}"#);
                    hook_event(env, "Stop", &id, &json)
                };
                (format!("event {state} {label}"), run)
            }));
        }
    }
    for label in &new_labels {
        let env = &env;
        jobs.push(Box::new(move || {
            (format!("dispatch {label}"), dispatch(env, label))
        }));
    }
    let runs = all_at_once(jobs);
    let mut failures = Vec::new();
    for (what, run) in &runs {
        let killed_meanwhile = what.starts_with("event")
            && labels[12..]
                .iter()
                .any(|l| what.ends_with(&format!(" {l}")));
        // An event for a session killed a moment before is bad input (unknown id).
        let ok = run.code == 0 || killed_meanwhile && run.code == 2;
        if !ok {
            failures.push(format!("{what}: exit {}: {}", run.code, run.stderr));
        }
        if what.starts_with("event") && !run.stdout.is_empty() {
            failures.push(format!("{what} printed {:?}", run.stdout));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let mut live: BTreeSet<String> = labels[8..12].iter().cloned().collect();
    live.insert("dup".into());
    live.extend(new_labels.iter().cloned());
    let rows = assert_consistent(&env, &live);

    // Every merge landed on main, once, with its file.
    let log = env.git(&["log", "--format=%s", "main"]);
    for label in &labels[4..8] {
        assert_eq!(
            log.lines()
                .filter(|l| *l == format!("work of {label}"))
                .count(),
            1,
            "{label}'s commit on main:\n{log}"
        );
        assert_eq!(
            std::fs::read_to_string(env.repo.join(format!("{label}.txt"))).ok(),
            Some(label.clone()),
            "the main worktree shows {label}'s file"
        );
    }
    assert!(
        env.git(&["status", "--porcelain"]).trim().is_empty(),
        "the main worktree is clean"
    );
    // Merged sessions are history, killed ones are gone.
    let history = env.orchestra(&["events"]).ok().stdout;
    for label in &labels[4..8] {
        assert!(
            history.contains(label.as_str()),
            "{label} in the history:\n{history}"
        );
    }
    // The newest word wins: one more event each, after the burst, is the state.
    for label in &labels[8..12] {
        let id = rows[label.as_str()]["id"].as_str().expect("id").to_string();
        env.orchestra(&["event", "waiting", "--session", &id]).ok();
        assert_eq!(env.session(label)["state"], "waiting", "{label}");
    }

    // Everything goes at once; nothing of ours is left.
    let mut jobs: Vec<Box<dyn FnOnce() -> (String, Run) + Send + '_>> = Vec::new();
    for label in &live {
        let env = &env;
        jobs.push(Box::new(move || {
            (format!("kill {label}"), env.orchestra(&["kill", label]))
        }));
    }
    for (what, run) in all_at_once(jobs) {
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
    }
    assert_consistent(&env, &BTreeSet::new());
    assert!(
        !env.root.join("repo.worktrees").exists(),
        "the worktrees folder goes with its last worktree"
    );
    assert_eq!(
        env.tmux(&["list-windows", "-a", "-F", "#{session_name}"])
            .lines()
            .filter(|s| *s != "harness")
            .count(),
        0,
        "windows left behind: {:?}",
        env.windows()
    );
}

/// The first use of a fresh ORCHESTRA_HOME by many at once (a status line, a hook, a
/// person): each creates or opens the record without "database is locked". Threads of
/// one process (SQLite locks between them as between processes) released together by a
/// barrier make the collision of two first WAL switches likely; processes (below) show
/// the same through the binary.
#[test]
fn many_open_a_fresh_record_at_once() {
    let env = Env::new();
    let mut failures = Vec::new();
    for round in 0..40 {
        let home = env.root.join(format!("threads-{round}"));
        let barrier = std::sync::Barrier::new(16);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        orchestra::state::Store::open(&home)
                            .err()
                            .map(|e| e.to_string())
                    })
                })
                .collect();
            for h in handles {
                if let Some(e) = h.join().expect("joined") {
                    failures.push(format!("round {round}: {e}"));
                }
            }
        });
    }
    for round in 0..10 {
        let home = env.root.join(format!("processes-{round}"));
        let children: Vec<_> = (0..16)
            .map(|_| {
                env.orchestra_command(&env.repo, &["list", "--json"])
                    .env("ORCHESTRA_HOME", &home)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("run orchestra")
            })
            .collect();
        for child in children {
            let r = Run::from(child.wait_with_output().expect("wait"));
            if r.code != 0 {
                failures.push(format!(
                    "process round {round}: exit {}: {}",
                    r.code,
                    r.stderr.trim()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Kills of every window of a tmux session while new dispatches add windows to it, and
/// branch deletions while other worktrees come and go, several rounds.
#[test]
fn kills_racing_dispatches_leave_every_session_whole() {
    let env = Env::new();
    env.start_server(&[]);
    let mut live: BTreeSet<String> = BTreeSet::new();
    let mut failures = Vec::new();
    for round in 0..4 {
        let new: Vec<String> = (0..8).map(|i| format!("r{round}-{i}")).collect();
        let mut jobs: Vec<Box<dyn FnOnce() -> (String, Run) + Send + '_>> = Vec::new();
        for label in &live {
            let (env, label) = (&env, label.clone());
            jobs.push(Box::new(move || {
                (format!("kill {label}"), env.orchestra(&["kill", &label]))
            }));
        }
        for label in &new {
            let env = &env;
            jobs.push(Box::new(move || {
                (format!("dispatch {label}"), dispatch(env, label))
            }));
        }
        for (what, run) in all_at_once(jobs) {
            if run.code != 0 {
                failures.push(format!(
                    "round {round}: {what}: exit {}: {}",
                    run.code,
                    run.stderr.trim()
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        live = new.into_iter().collect();
        assert_consistent(&env, &live);
    }
}

/// Two `up`s of sessions that share one tmux session name, at once: both come up, and
/// exactly one made (and so owns) the tmux session.
#[test]
fn two_ups_sharing_a_tmux_session_make_it_once() {
    let env = Env::new();
    env.start_server(&[]);
    let folder = env.root.join("plain");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = \"bash\"\n\n\
             [sessions.one]\npath = {p:?}\ntmux = \"shared\"\nagent_args = {a:?}\n\n\
             [sessions.two]\npath = {p:?}\ntmux = \"shared\"\nagent_args = {a:?}\n",
            p = folder.display().to_string(),
            // An agent that ends on the Ctrl-C `down` sends a generic agent.
            a = "-c 'exec sleep 300'",
        ),
    )
    .expect("orchestra.toml");
    for round in 0..5 {
        let runs = all_at_once(vec![
            Box::new(|| ("up one".to_string(), env.orchestra(&["up", "one"]))),
            Box::new(|| ("up two".to_string(), env.orchestra(&["up", "two"]))),
        ]);
        for (what, run) in &runs {
            assert_eq!(run.code, 0, "round {round}: {what}: {}", run.stderr);
        }
        let made: Vec<&str> = runs
            .iter()
            .filter(|(_, r)| r.stdout.contains("(created)"))
            .map(|(w, _)| w.as_str())
            .collect();
        assert_eq!(made.len(), 1, "round {round}: made by {made:?}");
        let owner = env
            .tmux(&["show-options", "-v", "-t", "=shared:", "@orchestra_owner"])
            .trim()
            .to_string();
        let ids: Vec<String> = ["one", "two"]
            .iter()
            .map(|l| {
                env.session(l)["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        let maker = if made[0] == "up one" {
            &ids[0]
        } else {
            &ids[1]
        };
        assert_eq!(&owner, maker, "round {round}: the maker owns the session");
        env.orchestra(&["down", "all"]).ok();
        assert!(
            env.list_json().is_empty(),
            "round {round}: down leaves no row"
        );
    }
}
