//! Review and merge: clean, conflicting, refused, answered through a real terminal and a
//! popup seen as a person sees it, squashed, and two at once.

use std::path::Path;
use std::time::Duration;

use crate::harness::{bin, git_in, wait_until, Env};

/// A session `label` whose branch commits `file` with `text`.
fn session_with_commit(env: &Env, label: &str, file: &str, text: &str) {
    env.dispatch_shell(label).ok();
    let wt = env.worktree_path(label);
    std::fs::write(wt.join(file), text).unwrap();
    git_in(&wt, &["add", "."]);
    git_in(
        &wt,
        &["commit", "-q", "-m", &format!("{label}: write {file}")],
    );
}

fn head(env: &Env) -> String {
    env.git(&["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn a_clean_merge_with_yes_merges_and_tears_down() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "feature", "feature.txt", "new feature\n");
    let window = env.session("feature")["window"]
        .as_str()
        .unwrap()
        .to_string();
    let before = head(&env);

    let review: serde_json::Value =
        serde_json::from_str(&env.orchestra(&["review", "feature", "--json"]).ok().stdout).unwrap();
    assert_eq!(review["merges_cleanly"], true);
    assert_eq!(review["commits"].as_array().unwrap().len(), 1);
    assert_eq!(review["files"][0]["path"], "feature.txt");
    assert_eq!(review["insertions"], 1);
    let text = env.orchestra(&["review", "feature"]).ok().stdout;
    assert!(
        text.contains("feature.txt") && text.contains("+new feature"),
        "{text}"
    );

    let run = env.orchestra(&["merge", "feature", "--yes"]).ok();
    assert!(
        run.stdout.contains("merged session/feature into main"),
        "{}",
        run.stdout
    );
    // A merge commit with both parents, naming the session and its commits.
    let parents = env.git(&["log", "-1", "--format=%P"]);
    assert_eq!(parents.split_whitespace().count(), 2);
    assert_eq!(parents.split_whitespace().next().unwrap(), before);
    let message = env.git(&["log", "-1", "--format=%B"]);
    assert!(
        message.contains("session/feature") && message.contains("feature: write feature.txt"),
        "{message}"
    );
    // The target's worktree follows, clean.
    assert_eq!(
        std::fs::read_to_string(env.repo.join("feature.txt")).unwrap(),
        "new feature\n"
    );
    assert_eq!(env.git(&["status", "--porcelain"]), "");
    // Torn down: window, worktree, branch; the row is history.
    assert!(!env
        .windows()
        .iter()
        .any(|w| w.starts_with(&format!("{window} "))));
    assert!(!env.worktree_path("feature").exists());
    assert_eq!(env.branches(), ["main"]);
    assert!(env.list_json().is_empty());
    let again = env.orchestra(&["merge", "feature", "--yes"]).fails_with(1);
    assert!(again.stderr.contains("already merged"), "{}", again.stderr);
    let events = env.orchestra(&["events", "feature", "--json"]).ok().stdout;
    assert!(events.contains("\"merged\""), "{events}");
}

#[test]
fn a_conflict_is_found_in_memory_and_nothing_changes() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "clash", "README.md", "the session's words\n");
    std::fs::write(env.repo.join("README.md"), "the target's words\n").unwrap();
    env.git(&["commit", "-q", "-am", "target changes the same line"]);
    let before = head(&env);
    let index_before = env.git(&["ls-files", "-s"]);

    let run = env.orchestra(&["merge", "clash", "--yes"]).fails_with(1);
    assert!(
        run.stderr.contains("conflicts") && run.stderr.contains("README.md"),
        "{}",
        run.stderr
    );
    assert_eq!(head(&env), before);
    assert_eq!(env.git(&["ls-files", "-s"]), index_before);
    assert_eq!(env.git(&["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(env.repo.join("README.md")).unwrap(),
        "the target's words\n"
    );
    // The session is intact.
    assert_eq!(env.session("clash")["status"], "running");
    assert!(env.worktree_path("clash").join("README.md").exists());
    let review: serde_json::Value =
        serde_json::from_str(&env.orchestra(&["review", "clash", "--json"]).ok().stdout).unwrap();
    assert_eq!(review["merges_cleanly"], false);
    assert_eq!(review["conflicts"][0], "README.md");
}

#[test]
fn preconditions_refuse_and_change_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    // Nothing to merge.
    env.dispatch_shell("empty").ok();
    let run = env.orchestra(&["merge", "empty", "--yes"]).fails_with(1);
    assert!(run.stderr.contains("nothing to merge"), "{}", run.stderr);

    session_with_commit(&env, "work", "work.txt", "w\n");
    let before = head(&env);
    // A dirty target.
    std::fs::write(env.repo.join("README.md"), "edited, not committed\n").unwrap();
    let run = env.orchestra(&["merge", "work", "--yes"]).fails_with(1);
    assert!(
        run.stderr.contains("uncommitted") && run.stderr.contains("README.md"),
        "{}",
        run.stderr
    );
    assert_eq!(head(&env), before);
    env.git(&["checkout", "README.md"]);
    // A dirty session: refused, or committed first with --include-uncommitted.
    std::fs::write(env.worktree_path("work").join("late.txt"), "late\n").unwrap();
    let run = env.orchestra(&["merge", "work", "--yes"]).fails_with(1);
    assert!(
        run.stderr.contains("--include-uncommitted"),
        "{}",
        run.stderr
    );
    assert_eq!(head(&env), before);
    // Without a terminal the question cannot be asked.
    let run = env
        .orchestra(&["merge", "work", "--include-uncommitted"])
        .fails_with(1);
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    assert_eq!(head(&env), before);
    assert!(env.worktree_path("work").join("late.txt").exists());
    env.orchestra(&["merge", "work", "--yes", "--include-uncommitted"])
        .ok();
    assert_eq!(
        std::fs::read_to_string(env.repo.join("late.txt")).unwrap(),
        "late\n"
    );
    // Unknown labels and targets are bad input.
    env.orchestra(&["merge", "nobody", "--yes"]).fails_with(2);
    session_with_commit(&env, "other", "o.txt", "o\n");
    env.orchestra(&["merge", "other", "--yes", "--into", "no-such-branch"])
        .fails_with(2);
}

/// Runs `orchestra ARGS` in a new window of the test's server (a real terminal), leaving
/// its exit status on screen.
fn run_in_terminal(env: &Env, args: &str) -> String {
    env.run_in_window(&format!("{} {args}; echo \"exit=$?\"; sleep 60", bin()))
}

fn screen(env: &Env, pane: &str) -> String {
    env.tmux(&["capture-pane", "-p", "-t", pane])
}

#[test]
fn the_question_is_answered_through_a_real_terminal() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "asked", "asked.txt", "a\n");
    let before = head(&env);

    let pane = run_in_terminal(&env, "merge asked");
    assert!(wait_until(Duration::from_secs(10), || screen(&env, &pane)
        .contains("Merge session/asked into main? [y/N]")));
    assert!(
        screen(&env, &pane).contains("asked.txt"),
        "the diffstat is shown first"
    );
    env.tmux(&["send-keys", "-t", &pane, "n", "Enter"]);
    assert!(
        wait_until(Duration::from_secs(10), || screen(&env, &pane)
            .contains("exit=1")),
        "{}",
        screen(&env, &pane)
    );
    assert_eq!(head(&env), before);
    assert_eq!(env.session("asked")["status"], "running");

    let pane = run_in_terminal(&env, "merge asked");
    assert!(wait_until(Duration::from_secs(10), || screen(&env, &pane)
        .contains("[y/N]")));
    env.tmux(&["send-keys", "-t", &pane, "y", "Enter"]);
    assert!(
        wait_until(Duration::from_secs(10), || screen(&env, &pane)
            .contains("exit=0")),
        "{}",
        screen(&env, &pane)
    );
    assert_ne!(head(&env), before);
    assert!(env.repo.join("asked.txt").exists());
}

#[test]
fn squash_makes_one_commit_with_one_parent() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "squashy", "one.txt", "1\n");
    let wt = env.worktree_path("squashy");
    std::fs::write(wt.join("two.txt"), "2\n").unwrap();
    git_in(&wt, &["add", "."]);
    git_in(&wt, &["commit", "-q", "-m", "second"]);
    let before = head(&env);
    let run = env
        .orchestra(&["merge", "squashy", "--yes", "--squash"])
        .ok();
    assert_eq!(env.git(&["log", "-1", "--format=%P"]).trim(), before);
    assert_eq!(
        env.git(&["rev-list", "--count", &format!("{before}..HEAD")])
            .trim(),
        "1"
    );
    assert!(env.repo.join("one.txt").exists() && env.repo.join("two.txt").exists());
    // The squashed branch's commits are not ancestors of main, but their change is all
    // there: the branch goes as merged, and the output says how that was found.
    assert_eq!(env.branches(), ["main"]);
    assert!(
        run.stdout
            .contains("deleted branch session/squashy (squashed into main"),
        "{}",
        run.stdout
    );
}

#[test]
fn two_merges_into_one_target_at_once_are_serialized() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "left", "left.txt", "l\n");
    session_with_commit(&env, "right", "right.txt", "r\n");
    let before = head(&env);
    let spawn = |label: &str| {
        env.orchestra_command(&env.repo, &["merge", label, "--yes"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("left"), spawn("right"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Two merge commits, the second on top of the first.
    let merges = env.git(&[
        "rev-list",
        "--merges",
        "--first-parent",
        &format!("{before}..HEAD"),
    ]);
    assert_eq!(merges.lines().count(), 2, "{merges}");
    assert!(env.repo.join("left.txt").exists() && env.repo.join("right.txt").exists());
    assert_eq!(env.git(&["status", "--porcelain"]), "");
}

#[test]
fn merge_in_a_popup_seen_as_a_person_sees_it() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "popped", "popped.txt", "p\n");
    // An outer tmux server whose pane is a client attached to the server under test.
    let person = crate::harness::Person::attach(&env);
    let before = head(&env);

    // display-popup returns when the popup closes: the person answers meanwhile.
    let popup = env
        .orchestra_command(&env.repo, &["merge", "popped", "--popup"])
        .spawn()
        .unwrap();
    person.wait_to_see("Merge session/popped into main? [y/N]");
    assert!(
        person.sees().contains("popped.txt"),
        "the diffstat is in the popup:\n{}",
        person.sees()
    );
    person.keys(&["y", "Enter"]);
    assert!(
        wait_until(Duration::from_secs(15), || head(&env) != before),
        "the popup's yes did not merge"
    );
    assert!(
        wait_until(Duration::from_secs(10), || !person.sees().contains("[y/N]")),
        "the popup closed"
    );
    let out = popup.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(Path::new(&env.repo.join("popped.txt")).exists());
}

#[test]
fn wrap_up_runs_in_the_worker_and_work_it_adds_is_kept() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "wrapped", "w.txt", "w\n");
    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-wrap-up-cmd",
        "echo notes > notes.txt && git add notes.txt && git commit -qm 'wrap-up notes'",
    ]);
    env.tmux(&["set-option", "-g", "@orchestra-wrap-up-timeout", "3s"]);
    let run = env.orchestra(&["merge", "wrapped", "--yes"]).ok();
    assert!(run.stdout.contains("wrap-up sent"), "{}", run.stdout);
    // The wrap-up committed after the merge: that commit is not in main, so the branch
    // is archived, never deleted.
    let archived = env
        .branches()
        .into_iter()
        .find(|b| b.starts_with("archive/wrapped-"));
    let archived = archived
        .unwrap_or_else(|| panic!("no archive branch: {:?}\n{}", env.branches(), run.stdout));
    assert_eq!(
        env.git(&["show", &format!("{archived}:notes.txt")]),
        "notes\n"
    );
    assert!(env.repo.join("w.txt").exists());
}

#[test]
fn a_merge_killed_before_its_teardown_is_finished_by_doctor() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "killed", "k.txt", "k\n");
    let window = env.session("killed")["window"]
        .as_str()
        .unwrap()
        .to_string();
    // A wrap-up that never finishes holds the merge after the ref moved.
    env.tmux(&["set-option", "-g", "@orchestra-wrap-up-cmd", "sleep 600"]);
    let before = head(&env);
    let mut child = env
        .orchestra_command(&env.repo, &["merge", "killed", "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(15), || head(&env) != before));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    // The target is fully merged; the teardown is not done.
    assert!(env.repo.join("k.txt").exists());
    let run = env.orchestra(&["doctor"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("teardown did not finish"),
        "{}",
        run.stdout
    );
    let run = env.orchestra(&["doctor", "--fix"]);
    assert!(run.stdout.contains("teardown finished"), "{}", run.stdout);
    assert!(!env.worktree_path("killed").exists());
    assert!(!env
        .windows()
        .iter()
        .any(|w| w.starts_with(&format!("{window} "))));
    assert_eq!(env.branches(), ["main"]);
    assert!(env.list_json().is_empty());
}

#[test]
fn merge_teardown_keeps_the_commits_of_a_detached_worktree() {
    let env = Env::new();
    env.start_server(&[]);
    session_with_commit(&env, "wandered", "done.txt", "merged work\n");
    let wt = env.worktree_path("wandered");
    git_in(&wt, &["checkout", "-q", "--detach"]);
    std::fs::write(wt.join("later.txt"), "after the branch\n").unwrap();
    git_in(&wt, &["add", "."]);
    git_in(&wt, &["commit", "-q", "-m", "only on the detached HEAD"]);
    let extra = git_in(&wt, &["rev-parse", "HEAD"]).trim().to_string();

    let run = env.orchestra(&["merge", "wandered", "--yes"]).ok();
    assert!(
        run.stderr.contains("not on session/wandered"),
        "warned before: {}",
        run.stderr
    );
    // The branch merged and went; the detached commit is kept, and the output says where.
    assert!(env.repo.join("done.txt").exists());
    assert!(!env.repo.join("later.txt").exists());
    let kept: Vec<String> = env
        .branches()
        .into_iter()
        .filter(|b| b.starts_with("archive/wandered-detached-"))
        .collect();
    assert_eq!(kept.len(), 1, "{:?}\n{}", env.branches(), run.stdout);
    assert!(run.stdout.contains(&kept[0]), "{}", run.stdout);
    assert_eq!(env.git(&["rev-parse", &kept[0]]).trim(), extra);
    assert!(!wt.exists());
    assert!(!env.branches().contains(&"session/wandered".to_string()));
}

/// A diff larger than a review shows (a 20 MiB text file on the branch; the review shows
/// 16 MiB of each text): what fits is shown, the cut is said with the command that shows
/// the rest, and the review succeeds.
#[test]
fn a_review_of_a_diff_too_big_to_show_shows_what_fits_and_says_so() {
    let env = Env::new();
    env.start_server(&[]);
    let line = format!("{}\n", "generated data ".repeat(6));
    let big = line.repeat(20 * 1024 * 1024 / line.len() + 1);
    session_with_commit(&env, "huge", "huge.txt", &big);
    let run = env.orchestra(&["review", "huge"]).ok();
    assert!(
        run.stdout.contains("1 commit(s), 1 file(s)"),
        "{}",
        &run.stdout[..run.stdout.len().min(500)]
    );
    assert!(run.stdout.contains("+generated data"), "the diff is shown");
    let tail = &run.stdout[run.stdout.len().saturating_sub(500)..];
    assert!(
        tail.contains("[cut: only the first 16 MiB are shown; `git diff ")
            && tail.contains("` in the repository shows the rest]"),
        "{tail}"
    );
    assert!(
        run.stdout.len() < 17 * 1024 * 1024,
        "{} bytes shown",
        run.stdout.len()
    );
    // Cut at a line's end: every diff line shown is whole.
    let last_added = run
        .stdout
        .lines()
        .rfind(|l| l.starts_with('+'))
        .expect("an added line");
    assert_eq!(format!("{}\n", &last_added[1..]), line);
}
