//! Bad labels are refused before anything is made; slugify makes good ones.

use crate::harness::{shell_dispatch, Env};

/// The refusal of a bad label: the label quoted (its first 40 characters and its length
/// when longer), the rule, and the way to a good one.
fn invalid_label(label: &str) -> String {
    let count = label.chars().count();
    let shown = if count <= 40 {
        format!("{label:?}")
    } else {
        let start: String = label.chars().take(40).collect();
        format!("{:?} ({count} characters)", format!("{start}…"))
    };
    format!(
        "orchestra: invalid label {shown}: use 1 to 63 characters of a-z, 0-9 and '-', \
         starting with a letter or digit (try `orchestra slugify <title>`)"
    )
}

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
        // The one line says what is wrong and suggests slugify.
        env.cli(&[
            "dispatch", "--agent", "bash", "--kind", "generic", "--", label,
        ])
        .status(2)
        .stderr_line(invalid_label(label))
        .run();
        env.cli(&["kill", "--", label])
            .status(2)
            .stderr_line(invalid_label(label))
            .run();
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
    env.cli(&["slugify", "!!! ???"])
        .status(2)
        .stderr_line("orchestra: the title \"!!! ???\" has no letter or digit to make a label from")
        .run();
    env.orchestra(&["slugify", "日本"]).ok();
}

#[test]
fn a_used_label_is_bad_input() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("taken").ok();
    let windows = env.windows();
    let id = env.session("taken")["id"].as_str().unwrap().to_string();
    let dispatch = |label| env.cli(&shell_dispatch(label)).status(2);
    dispatch("taken")
        .stderr_line(format!(
            "orchestra: label \"taken\" is already used by session {id} (running) in this repo: \
             pick another (`orchestra slugify <title>` finds a free one)"
        ))
        .run();
    assert_eq!(env.windows(), windows);
    // A branch of that name made by hand counts too.
    env.git(&["branch", "session/handmade"]);
    dispatch("handmade")
        .stderr_line(
            "orchestra: branch session/handmade already exists: pick another label \
             (`orchestra slugify <title>` finds a free one)",
        )
        .run();
    assert_eq!(env.list_json().len(), 1);
}

#[test]
fn a_long_bad_label_is_measured_and_cut_in_the_message() {
    let env = Env::new();
    let label = format!("{}_{}", "a".repeat(100), "b".repeat(99));
    let run = env
        .cli(&["kill", "--", &label])
        .status(2)
        .stderr_line(invalid_label(&label))
        .run();
    assert!(run.stderr.contains("(200 characters)"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("\"{}…\"", "a".repeat(40))),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(&"a".repeat(41)), "{}", run.stderr);
    assert!(run.stderr.len() < 300, "{}", run.stderr);
}
