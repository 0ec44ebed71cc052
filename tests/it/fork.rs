//! `orchestra fork`: a claude session forked with its uncommitted work carried as one
//! commit on the new branch (the source's worktree untouched) and its conversation copied
//! (the fork hears the earlier turn, the source never hears the fork's); the bad inputs;
//! a fork killed at every step.

use std::path::Path;
use std::time::Duration;

use crate::faults::{all_commits, at_every_step_then, Before};
use crate::harness::{commit_file, git_in, wait_until, AgentCli, AgentWorld, Env};

const SLOW: Duration = Duration::from_secs(60);

/// What `git status` and the index say of a worktree, byte for byte.
fn status_of(dir: &Path) -> String {
    let porcelain = git_in(dir, &["status", "--porcelain=v2", "--untracked-files=all"]);
    let long = git_in(dir, &["status"]);
    let staged = git_in(dir, &["diff", "--cached"]);
    let unstaged = git_in(dir, &["diff"]);
    format!("{porcelain}\n--\n{long}\n--\n{staged}\n--\n{unstaged}")
}

/// Leaves uncommitted work of every kind in `dir`: a staged change, an unstaged one, an
/// untracked file, and an ignored one (not carried).
fn leave_work(dir: &Path) {
    std::fs::write(dir.join("staged.txt"), "staged change\n").unwrap();
    git_in(dir, &["add", "staged.txt"]);
    std::fs::write(dir.join("tracked.txt"), "unstaged change\n").unwrap();
    std::fs::write(dir.join("untracked.txt"), "untracked\n").unwrap();
    std::fs::write(dir.join("build.log"), "ignored\n").unwrap();
}

fn committed_base(env: &Env) {
    commit_file(&env.repo, "tracked.txt", "first\n", "a tracked file");
    commit_file(&env.repo, "staged.txt", "before\n", "another");
    commit_file(&env.repo, ".gitignore", "*.log\n", "ignore logs");
}

#[test]
fn a_forked_claude_carries_the_work_and_hears_the_earlier_turn_alone() {
    let Some(mut c) = AgentWorld::start(
        AgentCli::claude(""),
        |env| vec![env.worktree_path("orig"), env.worktree_path("orig-b")],
        None,
    ) else {
        return;
    };
    // orchestra finds the conversation's log where claude wrote it, as in a person's shell.
    c.share("HOME");
    committed_base(&c.env);
    c.dispatch("orig", "[[say: the word is MARIGOLD-42]]");
    c.wait_screen("orig", "MARIGOLD-42");
    c.reaches("orig", "idle", SLOW);
    let orig = c.env.worktree_path("orig");
    leave_work(&orig);
    let head = git_in(&orig, &["rev-parse", "HEAD"]);
    // claude writes its conversation's log a moment after the turn shows; a person forks
    // later than that.
    let conversation = c.env.session("orig")["conversation"]
        .as_str()
        .unwrap()
        .to_string();
    let log = c.home.join(".claude/projects").join(
        orig.to_string_lossy()
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
            .collect::<String>(),
    );
    let log = log.join(format!("{conversation}.jsonl"));
    assert!(
        wait_until(SLOW, || std::fs::read_to_string(&log)
            .is_ok_and(|t| t.contains("MARIGOLD-42"))),
        "no log {}",
        log.display()
    );
    let before = status_of(&orig);

    let run = c
        .env
        .orchestra(&[
            "fork",
            "orig",
            "orig-b",
            "--prompt",
            "[[say: forked FORK-7]]",
        ])
        .ok();
    assert!(
        run.stdout.contains("forked orig into orig-b"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("conversation goes on"),
        "{}{}\n{}",
        run.stdout,
        run.stderr,
        String::from_utf8_lossy(
            &std::process::Command::new("find")
                .arg(&c.home)
                .arg("-name")
                .arg("*.jsonl")
                .output()
                .unwrap()
                .stdout
        ),
    );
    // The source's worktree and index are as they were.
    assert_eq!(status_of(&orig), before);
    assert_eq!(git_in(&orig, &["rev-parse", "HEAD"]), head);
    // The new branch: one commit on the source's HEAD holding every uncommitted change
    // but the ignored file.
    let tip = c.env.git(&["rev-parse", "session/orig-b"]);
    assert_eq!(c.env.git(&["rev-parse", "session/orig-b^"]), head);
    assert_ne!(tip, head);
    let show = |path: &str| c.env.git(&["show", &format!("session/orig-b:{path}")]);
    assert_eq!(show("staged.txt"), "staged change\n");
    assert_eq!(show("tracked.txt"), "unstaged change\n");
    assert_eq!(show("untracked.txt"), "untracked\n");
    let files = c.env.git(&["ls-tree", "--name-only", "session/orig-b"]);
    assert!(!files.contains("build.log"), "{files}");
    let forked = c.env.worktree_path("orig-b");
    assert_eq!(
        std::fs::read_to_string(forked.join("untracked.txt")).unwrap(),
        "untracked\n"
    );
    assert!(!forked.join("build.log").exists());
    // Its own branch only: the source's branch did not move.
    assert_eq!(c.env.git(&["rev-parse", "session/orig"]), head);

    // The fork's first request carries the earlier turn.
    c.wait_screen("orig-b", "forked FORK-7");
    let heard = wait_until(Duration::from_secs(30), || {
        c.api.requests_json().iter().any(|r| {
            let text = r.to_string();
            text.contains("FORK-7") && text.contains("MARIGOLD-42")
        })
    });
    assert!(heard, "{}", c.api.requests());
    // Its own conversation id, both in one group named after the source.
    let (a, b) = (c.env.session("orig"), c.env.session("orig-b"));
    assert_ne!(a["conversation"], b["conversation"], "{a}\n{b}");
    assert_eq!(a["group"], "orig", "{a}");
    assert_eq!(b["group"], "orig", "{b}");

    // The source goes on without hearing the fork.
    c.reaches("orig-b", "idle", SLOW);
    let count = c.api.requests_json().len();
    c.brief("orig", "[[say: still ORIG-9]]");
    c.wait_screen("orig", "still ORIG-9");
    let sent = wait_until(Duration::from_secs(30), || {
        c.api.heard_since(count, "ORIG-9")
    });
    assert!(sent, "{}", c.api.requests());
    let since: Vec<String> = c
        .api
        .requests_json()
        .iter()
        .skip(count)
        .map(ToString::to_string)
        .filter(|t| t.contains("ORIG-9"))
        .collect();
    assert!(since.iter().all(|t| t.contains("MARIGOLD-42")), "{since:?}");
    assert!(since.iter().all(|t| !t.contains("FORK-7")), "{since:?}");
}

#[track_caller]
fn refused(env: &Env, args: &[&str], says: &str) {
    let branches = env.branches();
    let windows = env.windows().len();
    let rows = env.list_json().len();
    let run = env.orchestra(args).fails_with(2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    assert_eq!(env.branches(), branches, "{args:?}");
    assert_eq!(env.windows().len(), windows, "{args:?}");
    assert_eq!(env.list_json().len(), rows, "{args:?}");
    assert!(!env.worktree_path("new").exists(), "{args:?}");
}

#[test]
fn a_bad_fork_is_refused_and_makes_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("orig").ok();
    env.orchestra(&[
        "dispatch",
        "grp",
        "--count",
        "2",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
    ])
    .ok();
    refused(
        &env,
        &["fork", "nobody", "new"],
        "no session labelled \"nobody\"",
    );
    refused(
        &env,
        &["fork", "orig", "orig"],
        "already the label of session",
    );
    refused(
        &env,
        &["fork", "orig", "grp-1"],
        "already the label of session",
    );
    refused(
        &env,
        &["fork", "orig", "grp"],
        "group \"grp\" already exists",
    );
    refused(&env, &["fork", "orig", "Bad_Label"], "label");
    // A merge of the source cut off (its journal stands) or a git merge in its worktree.
    let id = env.session("orig")["id"].as_str().unwrap().to_string();
    let journals = env.home.join("merges");
    std::fs::create_dir_all(&journals).unwrap();
    let journal = journals.join(format!("{id}.json"));
    std::fs::write(&journal, "{}").unwrap();
    refused(&env, &["fork", "orig", "new"], "merge in progress");
    std::fs::remove_file(&journal).unwrap();
    let orig = env.worktree_path("orig");
    let git_dir = git_in(&orig, &["rev-parse", "--absolute-git-dir"]);
    let merge_head = Path::new(git_dir.trim()).join("MERGE_HEAD");
    std::fs::write(&merge_head, git_in(&orig, &["rev-parse", "HEAD"])).unwrap();
    refused(&env, &["fork", "orig", "new"], "git merge in progress");
    std::fs::remove_file(&merge_head).unwrap();
    // Then it forks; a non-claude session starts fresh, saying so, and a fork of a group
    // member joins that group.
    let run = env.orchestra(&["fork", "orig", "new"]).ok();
    assert!(
        run.stdout.contains("starts a fresh conversation"),
        "{}",
        run.stdout
    );
    assert_eq!(env.session("new")["group"], "orig");
    env.orchestra(&["fork", "grp-1", "grp-3"]).ok();
    assert_eq!(env.session("grp-3")["group"], "grp");
}

#[test]
fn a_fork_killed_at_every_step_leaves_nothing_after_doctor_fix() {
    let args = ["fork", "orig", "copy"];
    let points = at_every_step_then(
        "dispatch",
        &args,
        |env| {
            env.dispatch_shell("orig").ok();
            let orig = env.worktree_path("orig");
            std::fs::write(orig.join("work.txt"), "uncommitted\n").unwrap();
            Before {
                commits: all_commits(env),
                uncommitted: Some((orig.join("work.txt"), "uncommitted\n".into())),
            }
        },
        |env, context| {
            let rows = env.list_json();
            assert_eq!(rows.len(), 1, "{context}: {rows:?}");
            assert_eq!(rows[0]["label"], "orig", "{context}");
            assert!(rows[0]["group"].is_null(), "{context}: {}", rows[0]);
            assert_eq!(env.branches(), ["main", "session/orig"], "{context}");
            assert!(!env.worktree_path("copy").exists(), "{context}");
        },
    );
    assert!(points >= 5, "a fork has only {points} kill points");
}
