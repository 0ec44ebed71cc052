//! doctor: checks, and reconciling the record with tmux and git.

use crate::harness::Env;

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
