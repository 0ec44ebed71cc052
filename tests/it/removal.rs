//! A worktree goes only with its work kept, and only when it is the session's: the work in
//! its submodules (whose repositories git keeps under the worktree's own admin folder,
//! deleted with it) refuses a kill and is kept by --force, a merge's teardown and
//! `doctor --fix`; a folder at the worktree's path that is not its registered worktree
//! (another repository, another branch) is never committed into or removed.

use std::path::{Path, PathBuf};

use crate::harness::{commit_file, git_in, Env};

/// git with file:// submodules allowed (git refuses local submodule URLs by default).
fn git_sub(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "protocol.file.allow=always"];
    all.extend_from_slice(args);
    git_in(dir, &all)
}

/// A repository `lib-origin` beside the repo, with one commit, added to the repo as the
/// submodule `lib` and committed on main. The main worktree has it initialised (its copy
/// of lib's repository is `.git/modules/lib`).
fn lib_submodule(env: &Env) -> PathBuf {
    let lib = env.root.join("lib-origin");
    std::fs::create_dir_all(&lib).unwrap();
    git_in(&lib, &["init", "-q", "-b", "main"]);
    commit_file(&lib, "lib.txt", "v1\n", "lib v1");
    git_sub(
        &env.repo,
        &["submodule", "add", "-q", &lib.to_string_lossy(), "lib"],
    );
    git_in(&env.repo, &["commit", "-q", "-m", "lib as a submodule"]);
    lib
}

/// Initialises `lib` in `worktree` as a person or agent would, and checks that its
/// repository lies under the worktree's admin folder, the one the removal deletes.
fn init_lib(env: &Env, worktree: &Path) -> PathBuf {
    git_sub(worktree, &["submodule", "update", "--init", "-q"]);
    let sub = worktree.join("lib");
    let git_dir = git_in(&sub, &["rev-parse", "--absolute-git-dir"]);
    assert!(
        Path::new(git_dir.trim()).starts_with(env.repo.join(".git/worktrees")),
        "lib's repository is {git_dir}"
    );
    sub
}

/// A commit in the submodule (on its detached HEAD, as after `submodule update`) and an
/// edit and a new file left uncommitted there. Returns the commit.
fn work_in_lib(sub: &Path) -> String {
    commit_file(sub, "lib.txt", "v2, only here\n", "lib v2 in the session");
    std::fs::write(sub.join("lib.txt"), "v3, not committed\n").unwrap();
    std::fs::write(sub.join("new.txt"), "new in lib\n").unwrap();
    git_in(sub, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The archive branches of the repository at `dir` (a worktree or a git dir).
fn archives_in(git_dir: &Path) -> Vec<String> {
    let mut flag = std::ffi::OsString::from("--git-dir=");
    flag.push(git_dir);
    let out = std::process::Command::new("git")
        .arg(flag)
        .args(["branch", "--list", "archive/*", "--format=%(refname:short)"])
        .output()
        .expect("git branch");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn git_dir_cmd(git_dir: &Path, args: &[&str]) -> String {
    let mut flag = std::ffi::OsString::from("--git-dir=");
    flag.push(git_dir);
    let out = std::process::Command::new("git")
        .arg(flag)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn kill_refuses_a_submodule_with_work_and_force_keeps_it_in_the_main_copy() {
    let env = Env::new();
    env.start_server(&[]);
    lib_submodule(&env);
    let main_copy = env.repo.join(".git/modules/lib");

    // An initialised submodule nobody touched holds nothing to keep: no refusal.
    env.dispatch_shell("untouched").ok();
    init_lib(&env, &env.worktree_path("untouched"));
    env.orchestra(&["kill", "untouched"]).ok();
    assert!(
        archives_in(&main_copy).is_empty(),
        "{:?}",
        archives_in(&main_copy)
    );

    env.dispatch_shell("sub").ok();
    let worktree = env.worktree_path("sub");
    let sub = init_lib(&env, &worktree);
    let commit = work_in_lib(&sub);
    let windows = env.windows();

    let refused = env.orchestra(&["kill", "sub"]).fails_with(1);
    for word in ["submodule", "lib (", "lib.txt", "1 commit(s)", "--force"] {
        assert!(refused.stderr.contains(word), "{word}: {}", refused.stderr);
    }
    // Nothing changed.
    assert_eq!(env.windows(), windows);
    assert!(env.branches().contains(&"session/sub".to_string()));
    assert_eq!(env.list_json().len(), 1);
    assert_eq!(git_in(&sub, &["rev-parse", "HEAD"]).trim(), commit);
    assert_eq!(
        std::fs::read_to_string(sub.join("lib.txt")).unwrap(),
        "v3, not committed\n"
    );

    let run = env.orchestra(&["kill", "sub", "--force"]).ok();
    assert!(!worktree.exists());
    let kept = archives_in(&main_copy);
    assert_eq!(kept.len(), 1, "{kept:?}\n{}", run.stdout);
    assert!(kept[0].starts_with("archive/sub-"), "{kept:?}");
    assert!(
        run.stdout.contains(&kept[0]) && run.stdout.contains(&main_copy.display().to_string()),
        "says where: {}",
        run.stdout
    );
    assert!(run.stdout.contains("submodule lib"), "{}", run.stdout);
    // The WIP commit holds the edits, on top of the session's commit in lib.
    let log = git_dir_cmd(&main_copy, &["log", "--format=%H %s", &kept[0]]);
    let mut lines = log.lines();
    assert!(lines.next().unwrap().contains("WIP"), "{log}");
    assert!(lines.next().unwrap().starts_with(&commit), "{log}");
    assert_eq!(
        git_dir_cmd(&main_copy, &["show", &format!("{}:lib.txt", kept[0])]),
        "v3, not committed\n"
    );
    assert_eq!(
        git_dir_cmd(&main_copy, &["show", &format!("{}:new.txt", kept[0])]),
        "new in lib\n"
    );
}

#[test]
fn a_merge_refuses_submodule_work_and_its_teardown_keeps_it_in_the_superproject() {
    let env = Env::new();
    env.start_server(&[]);
    lib_submodule(&env);
    // The main worktree has no copy of lib's repository: the superproject keeps it.
    git_in(&env.repo, &["submodule", "deinit", "-q", "-f", "lib"]);
    std::fs::remove_dir_all(env.repo.join(".git/modules/lib")).unwrap();

    env.dispatch_shell("bump").ok();
    let worktree = env.worktree_path("bump");
    let sub = init_lib(&env, &worktree);
    // The agent works in lib and records its commit in the superproject, pushing nothing.
    commit_file(&sub, "lib.txt", "v2, only here\n", "lib v2 in the session");
    let commit = git_in(&sub, &["rev-parse", "HEAD"]).trim().to_string();
    git_in(&worktree, &["add", "lib"]);
    git_in(&worktree, &["commit", "-q", "-m", "use lib v2"]);
    let before = env.git(&["rev-parse", "main"]);

    let refused = env.orchestra(&["merge", "bump", "--yes"]).fails_with(1);
    assert!(
        refused.stderr.contains("submodule") && refused.stderr.contains("--include-uncommitted"),
        "{}",
        refused.stderr
    );
    assert_eq!(env.git(&["rev-parse", "main"]), before);
    assert!(worktree.exists());

    let run = env
        .orchestra(&["merge", "bump", "--yes", "--include-uncommitted"])
        .ok();
    assert!(!worktree.exists());
    let kept: Vec<String> = env
        .branches()
        .into_iter()
        .filter(|b| b.starts_with("archive/bump-submodule-lib-"))
        .collect();
    assert_eq!(kept.len(), 1, "{:?}\n{}", env.branches(), run.stdout);
    assert!(run.stdout.contains(&kept[0]), "says where: {}", run.stdout);
    assert_eq!(env.git(&["rev-parse", &kept[0]]).trim(), commit);
    // main records lib's commit, and the commit still exists.
    let recorded = env.git(&["rev-parse", "main:lib"]);
    assert_eq!(recorded.trim(), commit);
}

#[test]
fn doctor_fix_keeps_the_submodule_work_of_a_worktree_without_a_row() {
    let env = Env::new();
    env.start_server(&[]);
    lib_submodule(&env);
    // A dispatch killed once its worktree is made, before its row.
    let worktree = env.worktree_path("orphan");
    let mut step = 1;
    loop {
        let out = env
            .orchestra_command(&env.repo, &crate::harness::shell_dispatch("orphan"))
            .env("ORCHESTRA_FAULT_AT", format!("dispatch:{step}"))
            .output()
            .expect("dispatch");
        assert!(!out.status.success(), "dispatch ran to its end first");
        if worktree.exists() && env.list_json().is_empty() {
            break;
        }
        env.orchestra(&["doctor", "--fix"]);
        step += 1;
        assert!(step < 20, "no step leaves a worktree without a row");
    }
    let sub = init_lib(&env, &worktree);
    let commit = work_in_lib(&sub);

    let fixed = env.orchestra(&["doctor", "--fix"]);
    assert!(!worktree.exists(), "{}{}", fixed.stdout, fixed.stderr);
    let main_copy = env.repo.join(".git/modules/lib");
    let kept = archives_in(&main_copy);
    assert_eq!(kept.len(), 1, "{kept:?}\n{}", fixed.stdout);
    assert!(
        fixed.stdout.contains(&kept[0]),
        "says where: {}",
        fixed.stdout
    );
    let log = git_dir_cmd(&main_copy, &["log", "--format=%H %s", &kept[0]]);
    assert!(log.lines().nth(1).unwrap().starts_with(&commit), "{log}");
    assert_eq!(
        git_dir_cmd(&main_copy, &["show", &format!("{}:new.txt", kept[0])]),
        "new in lib\n"
    );
}

/// The commits of the repository at `dir`, newest first.
fn commits_of(dir: &Path) -> String {
    git_in(dir, &["log", "--all", "--format=%H %s"])
}

#[test]
fn a_foreign_repository_at_the_worktree_path_is_never_committed_into_or_removed() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("victim").ok();
    commit_file(
        &env.worktree_path("victim"),
        "mine.txt",
        "the session's\n",
        "the session's work",
    );
    let worktree = env.worktree_path("victim");
    // The worktree removed by hand; someone's own repository now sits at that path, with
    // work of its own not committed.
    std::fs::remove_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&worktree).unwrap();
    git_in(&worktree, &["init", "-q", "-b", "main"]);
    commit_file(&worktree, "theirs.txt", "theirs\n", "their first commit");
    std::fs::write(worktree.join("draft.txt"), "their draft\n").unwrap();
    let theirs = commits_of(&worktree);
    let session_tip = env.git(&["rev-parse", "session/victim"]);

    for args in [
        &["kill", "victim"][..],
        &["kill", "victim", "--force"],
        &["merge", "victim", "--yes", "--include-uncommitted"],
    ] {
        let refused = env.orchestra(args).fails_with(1);
        assert!(
            refused.stderr.contains(&format!(
                "the folder {} is not the worktree of session victim: it belongs to another repository",
                worktree.display()
            )) && refused.stderr.contains("Nothing was committed or removed"),
            "{args:?}: {}",
            refused.stderr
        );
        assert_eq!(commits_of(&worktree), theirs, "{args:?} committed there");
        assert_eq!(
            std::fs::read_to_string(worktree.join("draft.txt")).unwrap(),
            "their draft\n"
        );
        assert_eq!(env.git(&["rev-parse", "session/victim"]), session_tip);
        assert_eq!(env.list_json().len(), 1);
    }

    // doctor says so, and --fix leaves it alone.
    let fixed = env.orchestra(&["doctor", "--fix"]);
    assert!(
        fixed.stdout.contains(&format!(
            "session victim ({}): the folder {} is not its worktree: it belongs to another repository",
            env.repo.display(),
            worktree.display()
        )),
        "{}{}",
        fixed.stdout,
        fixed.stderr
    );
    assert_eq!(commits_of(&worktree), theirs);
    assert!(worktree.join("draft.txt").exists());

    // Its window gone, a restart would start the agent in that folder: refused too.
    let window = env.session("victim")["window"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux(&["kill-window", "-t", &window]);
    let windows = env.windows();
    let refused = env.orchestra(&["restart", "victim"]).fails_with(1);
    assert!(
        refused
            .stderr
            .contains("is not the worktree of session victim"),
        "{}",
        refused.stderr
    );
    assert_eq!(env.windows(), windows, "a window was opened");
    assert_eq!(commits_of(&worktree), theirs);

    // Moved away, the session's worktree is gone: the kill settles the rest, its
    // branch's commits kept.
    std::fs::rename(&worktree, env.root.join("theirs")).unwrap();
    let run = env.orchestra(&["kill", "victim"]).ok();
    assert!(env.list_json().is_empty());
    let archived: Vec<String> = env
        .branches()
        .into_iter()
        .filter(|b| b.starts_with("archive/victim-"))
        .collect();
    assert_eq!(archived.len(), 1, "{:?}\n{}", env.branches(), run.stdout);
    assert_eq!(env.git(&["rev-parse", &archived[0]]), session_tip);
    assert_eq!(commits_of(&env.root.join("theirs")), theirs);
}

#[test]
fn a_worktree_of_another_branch_at_the_path_is_left_alone() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("moved").ok();
    let worktree = env.worktree_path("moved");
    // Removed by hand, and the person's own worktree of their own branch made there.
    std::fs::remove_dir_all(&worktree).unwrap();
    env.git(&["worktree", "prune"]);
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "person",
        &worktree.to_string_lossy(),
    ]);
    std::fs::write(worktree.join("draft.txt"), "the person's draft\n").unwrap();
    let tip = env.git(&["rev-parse", "person"]);

    let refused = env.orchestra(&["kill", "moved", "--force"]).fails_with(1);
    assert!(
        refused.stderr.contains("has person checked out")
            && refused.stderr.contains("check out session/moved there"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        env.git(&["rev-parse", "person"]),
        tip,
        "committed on person"
    );
    assert!(worktree.join("draft.txt").exists());
    assert_eq!(env.list_json().len(), 1);
}

#[test]
fn a_submodule_pointing_at_another_repository_is_never_committed_into() {
    let env = Env::new();
    env.start_server(&[]);
    lib_submodule(&env);
    // The person's other project, with work of its own not committed.
    let other = env.root.join("project2");
    std::fs::create_dir_all(&other).unwrap();
    git_in(&other, &["init", "-q", "-b", "main"]);
    commit_file(&other, "theirs.txt", "theirs\n", "their commit");
    std::fs::write(other.join("draft.txt"), "their draft\n").unwrap();
    let theirs = commits_of(&other);

    // An agent points its submodule's `.git` at that repository and edits there.
    env.dispatch_shell("hijack").ok();
    let worktree = env.worktree_path("hijack");
    let sub = init_lib(&env, &worktree);
    std::fs::write(
        sub.join(".git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .unwrap();
    std::fs::write(sub.join("edit.txt"), "edited\n").unwrap();
    let windows = env.windows();
    for args in [&["kill", "hijack"][..], &["kill", "hijack", "--force"]] {
        let refused = env.orchestra(args).fails_with(1);
        assert!(
            refused.stderr.contains(&format!(
                "submodule lib has its repository at {}, outside this repository",
                other.join(".git").display()
            )),
            "{args:?}: {}",
            refused.stderr
        );
        assert_eq!(commits_of(&other), theirs, "{args:?} committed there");
        assert!(worktree.exists());
        assert_eq!(env.windows(), windows, "{args:?} closed the window");
        assert_eq!(env.list_json().len(), 1);
    }

    // A submodule folder replaced by a link to it: the link goes, not what it points at.
    std::fs::remove_dir_all(&sub).unwrap();
    std::os::unix::fs::symlink(&other, &sub).unwrap();
    env.orchestra(&["kill", "hijack", "--force"]).ok();
    assert!(!worktree.exists());
    assert_eq!(commits_of(&other), theirs);
    assert_eq!(
        std::fs::read_to_string(other.join("draft.txt")).unwrap(),
        "their draft\n"
    );
}
