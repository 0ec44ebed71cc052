//! kill never loses work: merged branches go, unmerged ones are archived, uncommitted
//! changes refuse (or are committed with --force); windows not ours survive.

use std::time::Duration;

use crate::harness::{git_in, wait_until, Env};

#[test]
fn kill_of_a_merged_session_deletes_branch_worktree_and_window() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("merged-one").ok();
    let worktree = env.worktree_path("merged-one");
    // Work committed on the session branch and merged into main by hand.
    std::fs::write(worktree.join("feature.txt"), "done\n").unwrap();
    git_in(&worktree, &["add", "."]);
    git_in(&worktree, &["commit", "-q", "-m", "feature"]);
    env.git(&[
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge",
        "session/merged-one",
    ]);
    let window = env.session("merged-one")["window"]
        .as_str()
        .unwrap()
        .to_string();

    let run = env.orchestra(&["kill", "merged-one"]).ok();
    assert!(
        run.stdout.contains("deleted branch session/merged-one"),
        "{}",
        run.stdout
    );
    assert_eq!(env.branches(), ["main"]);
    assert!(!worktree.exists());
    assert!(!env
        .windows()
        .iter()
        .any(|w| w.starts_with(&format!("{window} "))));
    assert!(env.list_json().is_empty());
    // The label is free again.
    env.dispatch_shell("merged-one").ok();
}

#[test]
fn kill_of_an_unmerged_session_archives_its_branch() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("unmerged").ok();
    let worktree = env.worktree_path("unmerged");
    std::fs::write(worktree.join("work.txt"), "precious\n").unwrap();
    git_in(&worktree, &["add", "."]);
    git_in(&worktree, &["commit", "-q", "-m", "precious work"]);
    let tip = env.git(&["rev-parse", "session/unmerged"]);

    let run = env.orchestra(&["kill", "unmerged"]).ok();
    let archived: Vec<String> = env
        .branches()
        .into_iter()
        .filter(|b| b.starts_with("archive/unmerged-"))
        .collect();
    assert_eq!(archived.len(), 1, "{:?}", env.branches());
    assert!(
        run.stdout.contains(&archived[0]),
        "the new name is printed: {}",
        run.stdout
    );
    assert_eq!(env.git(&["rev-parse", &archived[0]]), tip);
    assert!(!env.branches().contains(&"session/unmerged".to_string()));
    assert!(!worktree.exists());
    // archive/<label>-<yyyymmdd-hhmmss>
    let stamp = archived[0].trim_start_matches("archive/unmerged-");
    assert_eq!(stamp.len(), 15, "{stamp}");
    assert!(stamp.chars().enumerate().all(|(i, c)| if i == 8 {
        c == '-'
    } else {
        c.is_ascii_digit()
    }));
}

#[test]
fn uncommitted_changes_refuse_and_force_saves_them() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("dirty").ok();
    let worktree = env.worktree_path("dirty");
    std::fs::write(worktree.join("untracked.txt"), "not yet committed\n").unwrap();
    let windows = env.windows();

    let run = env.orchestra(&["kill", "dirty"]).fails_with(1);
    assert!(run.stderr.contains("uncommitted"), "{}", run.stderr);
    assert!(run.stderr.contains("untracked.txt"), "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    // Nothing changed.
    assert!(worktree.join("untracked.txt").exists());
    assert_eq!(env.windows(), windows);
    assert!(env.branches().contains(&"session/dirty".to_string()));
    assert_eq!(env.list_json().len(), 1);

    let run = env.orchestra(&["kill", "dirty", "--force"]).ok();
    assert!(run.stdout.contains("WIP commit"), "{}", run.stdout);
    let archived = env
        .branches()
        .into_iter()
        .find(|b| b.starts_with("archive/dirty-"))
        .expect("archived");
    assert_eq!(
        env.git(&["show", &format!("{archived}:untracked.txt")]),
        "not yet committed\n"
    );
    assert!(env
        .git(&["log", "-1", "--format=%s", &archived])
        .starts_with("WIP"));
}

#[test]
fn ignored_files_are_not_uncommitted_work() {
    let env = Env::new();
    env.start_server(&[]);
    std::fs::write(env.repo.join(".gitignore"), "target/\n").unwrap();
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "ignore target"]);
    env.dispatch_shell("ignored").ok();
    let worktree = env.worktree_path("ignored");
    std::fs::create_dir_all(worktree.join("target")).unwrap();
    std::fs::write(worktree.join("target/out.o"), "binary").unwrap();
    env.orchestra(&["kill", "ignored"]).ok();
    assert!(!worktree.exists());
}

#[test]
fn windows_the_tool_did_not_create_survive_a_kill() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("mine").ok();
    // A user's window with the same name in the same tmux session.
    env.tmux(&[
        "new-window",
        "-d",
        "-t",
        "orchestra-repo:",
        "-n",
        "mine",
        "sleep 300",
    ]);
    let window = env.session("mine")["window"].as_str().unwrap().to_string();
    env.orchestra(&["kill", "mine"]).ok();
    let windows = env.windows();
    assert!(windows.iter().any(|w| w.ends_with(" mine ")), "{windows:?}");
    assert!(!windows.iter().any(|w| w.starts_with(&format!("{window} "))));

    // After a tmux restart window ids are reused: the recorded id now names a user window.
    env.dispatch_shell("recycled").ok();
    let recorded = env.session("recycled")["window"]
        .as_str()
        .unwrap()
        .to_string();
    env.stop_server();
    env.start_server(&[]);
    while !env
        .windows()
        .iter()
        .any(|w| w.starts_with(&format!("{recorded} ")))
    {
        env.tmux(&["new-window", "-d", "-t", "harness:", "sleep 300"]);
    }
    env.orchestra(&["kill", "recycled"]).ok();
    assert!(
        env.windows()
            .iter()
            .any(|w| w.starts_with(&format!("{recorded} "))),
        "the user's window {recorded} was closed: {:?}",
        env.windows()
    );
}

#[test]
fn kill_of_an_unknown_label_is_bad_input() {
    let env = Env::new();
    let run = env.orchestra(&["kill", "nobody"]).fails_with(2);
    assert!(run.stderr.contains("no session labelled"), "{}", run.stderr);
}

/// The archive branches whose names start with `archive/<stem>-`.
fn archives(env: &Env, stem: &str) -> Vec<String> {
    env.branches()
        .into_iter()
        .filter(|b| b.starts_with(&format!("archive/{stem}-")))
        .collect()
}

#[test]
fn kill_force_keeps_the_commits_of_an_agent_stopped_mid_rebase() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("rebasing").ok();
    let worktree = env.worktree_path("rebasing");
    for n in 1..=2 {
        std::fs::write(worktree.join(format!("step{n}.txt")), format!("{n}\n")).unwrap();
        git_in(&worktree, &["add", "."]);
        git_in(&worktree, &["commit", "-q", "-m", &format!("step {n}")]);
    }
    std::fs::write(env.repo.join("upstream.txt"), "moved on\n").unwrap();
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "main moves on"]);
    // The agent rebases onto main and stops after the first commit (its check fails):
    // HEAD is detached on a rewritten commit that no branch has.
    let stopped = std::process::Command::new("git")
        .arg("-C")
        .arg(&worktree)
        .args(["rebase", "--exec", "false", "main"])
        .output()
        .unwrap();
    assert!(
        !stopped.status.success(),
        "the rebase stops at the failing exec"
    );
    let rewritten = git_in(&worktree, &["rev-parse", "HEAD"]).trim().to_string();
    assert!(env
        .git(&["branch", "--contains", &rewritten])
        .trim()
        .is_empty());
    std::fs::write(worktree.join("half-done.txt"), "uncommitted\n").unwrap();

    let run = env.orchestra(&["kill", "rebasing", "--force"]).ok();
    let kept = archives(&env, "rebasing-detached");
    assert_eq!(kept.len(), 1, "{:?}\n{}", env.branches(), run.stdout);
    assert!(run.stdout.contains(&kept[0]), "says where: {}", run.stdout);
    // The WIP commit sits on the rewritten commit; both are on the new branch.
    let log = env.git(&["log", "--format=%H %s", &kept[0]]);
    assert!(log.contains(&rewritten), "{log}");
    assert!(log.lines().next().unwrap().contains("WIP"), "{log}");
    assert_eq!(
        env.git(&["show", &format!("{}:half-done.txt", kept[0])]),
        "uncommitted\n"
    );
    // The branch itself is archived as before, and the worktree is gone.
    let archived = archives(&env, "rebasing")
        .into_iter()
        .filter(|b| !b.contains("-detached-"))
        .collect::<Vec<_>>();
    assert_eq!(archived.len(), 1, "{:?}", env.branches());
    assert!(!worktree.exists());
}

#[test]
fn plain_kill_of_a_clean_detached_head_keeps_its_commit() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("checkout").ok();
    let worktree = env.worktree_path("checkout");
    let base = env.git(&["rev-parse", "HEAD"]).trim().to_string();
    git_in(&worktree, &["checkout", "-q", &base]);
    std::fs::write(worktree.join("detached.txt"), "only here\n").unwrap();
    git_in(&worktree, &["add", "."]);
    git_in(&worktree, &["commit", "-q", "-m", "on a detached HEAD"]);
    let commit = git_in(&worktree, &["rev-parse", "HEAD"]).trim().to_string();

    let run = env.orchestra(&["kill", "checkout"]).ok();
    let kept = archives(&env, "checkout-detached");
    assert_eq!(kept.len(), 1, "{:?}\n{}", env.branches(), run.stdout);
    assert!(run.stdout.contains(&kept[0]), "says where: {}", run.stdout);
    assert_eq!(env.git(&["rev-parse", &kept[0]]).trim(), commit);
    // The session branch held nothing new: deleted, as for any merged branch.
    assert!(!env.branches().contains(&"session/checkout".to_string()));
    assert!(!worktree.exists());

    // A detached HEAD on a commit a branch has: nothing to keep, no archive.
    env.dispatch_shell("looking").ok();
    let worktree = env.worktree_path("looking");
    git_in(&worktree, &["checkout", "-q", &base]);
    let run = env.orchestra(&["kill", "looking"]).ok();
    assert!(archives(&env, "looking").is_empty(), "{}", run.stdout);
}

/// Session `label` with two commits of its own (`LABEL-a.txt`, then `LABEL-b.txt`), and main moved on
/// meanwhile by a commit elsewhere, so that no merge of the branch is a fast-forward.
fn session_with_two_commits(env: &Env, label: &str) -> std::path::PathBuf {
    env.dispatch_shell(label).ok();
    let worktree = env.worktree_path(label);
    for (file, text) in [("a.txt", "first\n"), ("b.txt", "second\n")] {
        let file = format!("{label}-{file}");
        std::fs::write(worktree.join(&file), text).unwrap();
        git_in(&worktree, &["add", "."]);
        git_in(&worktree, &["commit", "-q", "-m", &file]);
    }
    std::fs::write(
        env.repo.join(format!("{label}-elsewhere.txt")),
        "main moved\n",
    )
    .unwrap();
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "main moves on"]);
    worktree
}

fn squash_into_main(env: &Env, label: &str) {
    env.git(&["merge", "-q", "--squash", &format!("session/{label}")]);
    env.git(&["commit", "-q", "-m", &format!("{label}, squashed")]);
}

#[test]
fn a_squash_merged_session_is_listed_merged_and_kill_deletes_it_without_archiving() {
    let env = Env::new();
    env.start_server(&[]);
    let worktree = session_with_two_commits(&env, "squashed");
    env.dispatch_shell("ui").ok();
    env.orchestra(&["deps", "add", "ui", "squashed", "branch:session/squashed"])
        .ok();
    assert!(env.session("squashed").get("merged").is_none());
    squash_into_main(&env, "squashed");

    assert_eq!(env.session("squashed")["merged"], "squashed into main");
    // A session with no commit of its own is not said merged (kill deletes its branch,
    // as before).
    assert!(env.session("ui").get("merged").is_none());
    let table = env.orchestra(&["list"]).ok().stdout;
    assert!(table.contains("merged (squashed into main)"), "{table}");

    let run = env.orchestra(&["kill", "squashed"]).ok();
    assert!(
        run.stdout
            .contains("deleted branch session/squashed (squashed into main"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("killed squashed (merged: squashed into main)"),
        "{}",
        run.stdout
    );
    assert!(
        archives(&env, "squashed").is_empty(),
        "{:?}",
        env.branches()
    );
    assert!(!env.branches().contains(&"session/squashed".to_string()));
    assert!(!worktree.exists());
    // It counts as merged: the edge naming it shows it so, and is satisfied.
    let graph = env.orchestra(&["deps", "graph", "--json"]).ok().stdout;
    assert!(graph.contains("squashed (merged)"), "{graph}");
    assert!(!run.stdout.contains("stays blocked"), "{}", run.stdout);
}

#[test]
fn a_rebase_merged_session_is_killed_as_merged() {
    let env = Env::new();
    env.start_server(&[]);
    let worktree = session_with_two_commits(&env, "rebased");
    env.git(&["cherry-pick", "session/rebased~1", "session/rebased"]);
    assert_eq!(env.session("rebased")["merged"], "rebased onto main");

    let run = env.orchestra(&["kill", "rebased"]).ok();
    assert!(
        run.stdout
            .contains("deleted branch session/rebased (rebased onto main"),
        "{}",
        run.stdout
    );
    assert!(archives(&env, "rebased").is_empty(), "{:?}", env.branches());
    assert_eq!(env.branches(), ["main"]);
    assert!(!worktree.exists());
}

#[test]
fn work_a_squash_did_not_take_is_archived_by_kill() {
    let env = Env::new();
    env.start_server(&[]);
    // One more commit after the squash.
    let worktree = session_with_two_commits(&env, "later");
    squash_into_main(&env, "later");
    std::fs::write(worktree.join("c.txt"), "after the squash\n").unwrap();
    git_in(&worktree, &["add", "."]);
    git_in(&worktree, &["commit", "-q", "-m", "after"]);
    // A squash of only part of the branch.
    session_with_two_commits(&env, "part");
    env.git(&["cherry-pick", "session/part~1"]);
    // Squashed in, then reverted on main.
    session_with_two_commits(&env, "reverted");
    squash_into_main(&env, "reverted");
    env.git(&["revert", "--no-edit", "HEAD"]);

    for label in ["later", "part", "reverted"] {
        assert!(env.session(label).get("merged").is_none(), "{label}");
        let tip = env.git(&["rev-parse", &format!("session/{label}")]);
        let run = env.orchestra(&["kill", label]).ok();
        let kept = archives(&env, label);
        assert_eq!(
            kept.len(),
            1,
            "{label}: {:?}\n{}",
            env.branches(),
            run.stdout
        );
        assert_eq!(env.git(&["rev-parse", &kept[0]]), tip, "{label}");
        assert!(run.stdout.contains("has unmerged work"), "{}", run.stdout);
    }
}

#[test]
fn uncommitted_work_after_a_squash_refuses_and_force_archives_it() {
    let env = Env::new();
    env.start_server(&[]);
    let worktree = session_with_two_commits(&env, "dirty-squash");
    squash_into_main(&env, "dirty-squash");
    std::fs::write(worktree.join("untracked.txt"), "not yet committed\n").unwrap();
    assert!(env.session("dirty-squash").get("merged").is_none());

    let run = env.orchestra(&["kill", "dirty-squash"]).fails_with(1);
    assert!(run.stderr.contains("uncommitted"), "{}", run.stderr);
    assert!(worktree.join("untracked.txt").exists());
    assert!(env.branches().contains(&"session/dirty-squash".to_string()));

    env.orchestra(&["kill", "dirty-squash", "--force"]).ok();
    let kept = archives(&env, "dirty-squash");
    assert_eq!(kept.len(), 1, "{:?}", env.branches());
    assert_eq!(
        env.git(&["show", &format!("{}:untracked.txt", kept[0])]),
        "not yet committed\n"
    );
}

/// A dependent blocked on a squash-merged upstream is released by it, not stranded: the
/// file it waits for is found where the upstream merged, and a `branch:` edge on the
/// upstream's own branch is satisfied once that branch is deleted as merged.
#[test]
fn a_dependent_of_a_squash_merged_session_is_released_by_its_kill() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("api").ok();
    let mut waiting = crate::harness::shell_dispatch("ui").to_vec();
    waiting.extend([
        "--after",
        "api:result.txt",
        "--after",
        "api:branch:session/api",
    ]);
    env.orchestra(&waiting).ok();
    assert_eq!(env.session("ui")["status"], "blocked");

    let worktree = env.worktree_path("api");
    std::fs::write(worktree.join("result.txt"), "made by api\n").unwrap();
    git_in(&worktree, &["add", "."]);
    git_in(&worktree, &["commit", "-q", "-m", "result"]);
    std::fs::write(env.repo.join("elsewhere.txt"), "main moved\n").unwrap();
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "main moves on"]);
    squash_into_main(&env, "api");
    assert_eq!(env.session("ui")["status"], "blocked");

    let run = env.orchestra(&["kill", "api"]).ok();
    assert!(!run.stdout.contains("stays blocked"), "{}", run.stdout);
    assert!(!env.branches().contains(&"session/api".to_string()));
    env.orchestra(&["refresh"]).ok();
    assert!(
        wait_until(Duration::from_secs(20), || env.session("ui")["status"]
            == "running"),
        "{}",
        env.session("ui")
    );
}
