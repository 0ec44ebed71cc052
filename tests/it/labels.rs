//! Bad labels are refused before anything is made; slugify makes good ones.

use crate::harness::Env;

const BAD_LABELS: &[&str] = &[
    "../x",
    "a b",
    "x;rm -rf ~",
    "$(id)",
    "",
    "Upper",
    "ünïcode",
    "-leading-dash",
    "a/b",
    "a\nb",
];

#[test]
fn every_bad_label_is_refused_and_nothing_changes() {
    let env = Env::new();
    env.start_server(&[]);
    let long = "a".repeat(64);
    let mut labels: Vec<&str> = BAD_LABELS.to_vec();
    labels.push(&long);
    let windows_before = env.windows();
    for label in labels {
        let run = env
            .orchestra(&[
                "dispatch", "--agent", "bash", "--kind", "generic", "--", label,
            ])
            .fails_with(2);
        assert!(
            run.stderr.contains("invalid label"),
            "{label:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("slugify"),
            "the error suggests slugify: {}",
            run.stderr
        );
        let kill = env.orchestra(&["kill", "--", label]).fails_with(2);
        assert!(kill.stderr.contains("invalid label"), "{}", kill.stderr);
    }
    assert_eq!(env.branches(), ["main"]);
    assert!(!env.root.join("repo.worktrees").exists());
    assert_eq!(env.windows(), windows_before);
    assert!(env.list_json().is_empty());
}

#[test]
fn a_label_of_63_characters_is_fine() {
    let env = Env::new();
    env.start_server(&[]);
    let label = "a".repeat(63);
    env.dispatch_shell(&label).ok();
    assert!(env.branches().contains(&format!("session/{label}")));
}

#[test]
fn slugify_makes_free_labels() {
    let env = Env::new();
    env.start_server(&[]);
    let run = env.orchestra(&["slugify", "Fix", "the", "Login bug!"]).ok();
    assert_eq!(run.stdout.trim(), "fix-the-login-bug");
    // Taken by a session, then by a bare branch.
    env.dispatch_shell("fix-the-login-bug").ok();
    let run = env.orchestra(&["slugify", "Fix the login bug"]).ok();
    assert_eq!(run.stdout.trim(), "fix-the-login-bug-2");
    env.git(&["branch", "session/fix-the-login-bug-2"]);
    let run = env.orchestra(&["slugify", "Fix the login bug"]).ok();
    assert_eq!(run.stdout.trim(), "fix-the-login-bug-3");
    let run = env
        .orchestra(&[
            "slugify",
            "A very long title that goes on and on past forty characters",
        ])
        .ok();
    assert_eq!(run.stdout.trim(), "a-very-long-title-that-goes-on-and-on");
    assert!(run.stdout.trim().len() <= 40);
    env.orchestra(&["slugify", "!!! ???"]).fails_with(2);
    env.orchestra(&["slugify", "日本"]).ok();
}

#[test]
fn a_used_label_is_bad_input() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("taken").ok();
    let windows = env.windows();
    let run = env.dispatch_shell("taken").fails_with(2);
    assert!(run.stderr.contains("already used"), "{}", run.stderr);
    assert_eq!(env.windows(), windows);
    // A branch of that name made by hand counts too.
    env.git(&["branch", "session/handmade"]);
    let run = env.dispatch_shell("handmade").fails_with(2);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    assert_eq!(env.list_json().len(), 1);
}

#[test]
fn a_long_bad_label_is_measured_and_cut_in_the_message() {
    let env = Env::new();
    let label = format!("{}_{}", "a".repeat(100), "b".repeat(99));
    let run = env.orchestra(&["kill", "--", &label]).fails_with(2);
    assert!(run.stderr.contains("(200 characters)"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("\"{}…\"", "a".repeat(40))),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(&"a".repeat(41)), "{}", run.stderr);
    assert!(run.stderr.len() < 300, "{}", run.stderr);
}
