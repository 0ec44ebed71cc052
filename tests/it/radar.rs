//! The conflict radar: live sessions checked against each other and their target by
//! in-memory merges (real git, real worktrees, real tmux), shown in `conflicts`, `list`,
//! window badges, the status line, the dashboard and the menu; a notification per new
//! pair; `merge` warns; `brief --conflicts` tells the agent.

use std::path::Path;
use std::time::Duration;

use crate::harness::{git_in, wait_until, Env, Person};
use crate::plugin::{cd_person_pane, choose, wait_popup_closed};
use crate::status::{calls, count_tmux_calls};

/// Writes `text` to `file` in session `label`'s worktree (uncommitted).
fn write(env: &Env, label: &str, file: &str, text: &str) {
    std::fs::write(env.worktree_path(label).join(file), text).unwrap();
}

/// Writes and commits `file` in session `label`'s worktree.
fn commit(env: &Env, label: &str, file: &str, text: &str) {
    write(env, label, file, text);
    let wt = env.worktree_path(label);
    git_in(&wt, &["add", file]);
    git_in(&wt, &["commit", "-q", "-m", &format!("{label}: {file}")]);
}

fn conflicts(env: &Env) -> Vec<serde_json::Value> {
    let run = env.orchestra(&["conflicts", "--json"]).ok();
    serde_json::from_str(&run.stdout).expect("conflicts --json is JSON")
}

fn radar(env: &Env) -> serde_json::Value {
    let run = env.orchestra(&["radar", "--json"]).ok();
    serde_json::from_str(&run.stdout).expect("radar --json is JSON")
}

fn badge(env: &Env, label: &str) -> String {
    let window = env.session(label)["window"].as_str().unwrap().to_string();
    env.tmux(&[
        "show-options",
        "-w",
        "-v",
        "-q",
        "-t",
        &window,
        "@orchestra_conflicts",
    ])
    .trim()
    .to_string()
}

/// What the repository's refs, object store and each worktree's index hold: the radar
/// must leave all of it as it was.
fn git_state(env: &Env, labels: &[&str]) -> String {
    let mut text = env.git(&["for-each-ref"]);
    text.push_str(&env.git(&["count-objects", "-v"]));
    for label in labels {
        text.push_str(&git_in(&env.worktree_path(label), &["ls-files", "-s"]));
        text.push_str(&git_in(
            &env.worktree_path(label),
            &["status", "--porcelain", "--untracked-files=all"],
        ));
    }
    text
}

#[test]
fn two_sessions_changing_the_same_lines_are_a_pair_and_other_files_are_not() {
    let mut env = Env::new();
    env.start_server(&[]);
    for label in ["api", "auth", "docs"] {
        env.dispatch_shell(label).ok();
    }
    commit(&env, "api", "README.md", "hello from api\n");
    commit(&env, "auth", "README.md", "hello from auth\n");
    commit(&env, "docs", "guide.md", "a guide\n");

    let pairs = conflicts(&env);
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    let pair = &pairs[0];
    assert_eq!(pair["session"], "api");
    assert_eq!(pair["with"], "auth");
    assert_eq!(pair["target"], false);
    assert_eq!(pair["paths"], serde_json::json!(["README.md"]));
    assert_eq!(pair["uncommitted"], false);
    assert!(pair["since"].as_i64().unwrap() > 0);

    let text = env.orchestra(&["conflicts"]).ok().stdout;
    assert!(
        text.contains("api") && text.contains("auth") && text.contains("README.md"),
        "{text}"
    );
    assert!(!text.contains("docs"), "{text}");

    // list --json: each side names the other; docs conflicts with nothing.
    let api = env.session("api");
    assert_eq!(api["conflicts_with"][0]["with"], "auth");
    assert_eq!(api["conflicts_with"][0]["paths"][0], "README.md");
    assert_eq!(env.session("auth")["conflicts_with"][0]["with"], "api");
    assert_eq!(env.session("docs")["conflicts_with"], serde_json::json!([]));

    // The windows carry the badge; docs' none.
    assert_eq!(badge(&env, "api"), "⚠1");
    assert_eq!(badge(&env, "auth"), "⚠1");
    assert_eq!(badge(&env, "docs"), "");

    // A pass that finds what the last one did asks tmux nothing.
    let log = count_tmux_calls(&mut env);
    env.orchestra(&["radar"]).ok();
    assert_eq!(calls(&log), 0, "{:?}", std::fs::read_to_string(&log));
    env.env.clear();

    // The target moves into the same line: api now conflicts with main too.
    std::fs::write(env.repo.join("README.md"), "hello from main\n").unwrap();
    env.git(&["commit", "-q", "-am", "main changes the README"]);
    let pairs = conflicts(&env);
    assert_eq!(pairs.len(), 3, "api-auth, api-main, auth-main: {pairs:?}");
    assert!(pairs
        .iter()
        .any(|p| p["session"] == "api" && p["with"] == "main" && p["target"] == true));
    assert_eq!(badge(&env, "api"), "⚠2");
    assert_eq!(badge(&env, "docs"), "");

    // The dashboard lists them under the health table.
    let watch = env
        .orchestra(&["watch", "--count", "1", "--interval", "1"])
        .ok()
        .stdout;
    assert!(
        watch.contains("conflicts") && watch.contains("main (target)"),
        "{watch}"
    );
}

#[test]
fn an_uncommitted_overlap_is_flagged_without_touching_git_and_clears_when_reverted() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("left").ok();
    env.dispatch_shell("right").ok();
    commit(&env, "left", "README.md", "left's words\n");
    commit(&env, "left", "new.rs", "fn left() {}\n");
    // Neither committed nor staged: a tracked file changed, and a new untracked file.
    write(&env, "right", "README.md", "right's words\n");
    write(&env, "right", "new.rs", "fn right() {}\n");
    let before = git_state(&env, &["left", "right"]);

    let pairs = conflicts(&env);
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(pairs[0]["session"], "left");
    assert_eq!(pairs[0]["with"], "right");
    assert_eq!(pairs[0]["uncommitted"], true);
    assert_eq!(
        pairs[0]["paths"],
        serde_json::json!(["README.md", "new.rs"])
    );
    assert_eq!(badge(&env, "right"), "⚠1");
    // In memory only: no ref, object, index entry or file changed.
    assert_eq!(git_state(&env, &["left", "right"]), before);

    // Reverted: the pair clears, and so do the badges.
    git_in(&env.worktree_path("right"), &["checkout", "README.md"]);
    std::fs::remove_file(env.worktree_path("right").join("new.rs")).unwrap();
    assert_eq!(conflicts(&env), Vec::<serde_json::Value>::new());
    assert_eq!(badge(&env, "left"), "");
    assert_eq!(badge(&env, "right"), "");
    assert_eq!(
        env.session("right")["conflicts_with"],
        serde_json::json!([])
    );
}

#[test]
fn an_unchanged_pair_is_never_checked_twice_and_a_moved_branch_only_against_the_rest() {
    let env = Env::new();
    env.start_server(&[]);
    for label in ["one", "two", "three"] {
        env.dispatch_shell(label).ok();
        commit(&env, label, &format!("{label}.txt"), "work\n");
    }
    // Three pairs of sessions, three sessions with their target; none changes a path
    // another does, so none takes a merge.
    let pass = radar(&env);
    let repo = &pass["repos"][0];
    assert_eq!(repo["sessions"], 3);
    assert_eq!(repo["read"], 3);
    assert_eq!(repo["pairs"], 6);
    assert_eq!(repo["checked"], 6);
    assert_eq!(repo["merged"], 0);
    // Nothing moved: nothing checked.
    assert_eq!(radar(&env)["repos"][0]["checked"], 0);
    // One branch moves: it against the two others and its target.
    commit(&env, "two", "two.txt", "more work\n");
    assert_eq!(radar(&env)["repos"][0]["checked"], 3);
    // Uncommitted work moves the same way; a path in common takes a merge.
    write(&env, "three", "one.txt", "three's take on one.txt\n");
    let pass = radar(&env);
    assert_eq!(pass["repos"][0]["checked"], 3);
    assert_eq!(pass["repos"][0]["merged"], 1);
    assert_eq!(pass["repos"][0]["conflicts"][0]["paths"][0], "one.txt");
    assert_eq!(radar(&env)["repos"][0]["checked"], 0);
    // A killed session leaves the radar.
    env.orchestra(&["kill", "two"]).ok();
    let pass = radar(&env);
    assert_eq!(pass["repos"][0]["sessions"], 2);
    assert_eq!(pass["repos"][0]["pairs"], 3);
}

fn background_pass(env: &Env) -> serde_json::Value {
    let run = env.orchestra(&["radar", "--background", "--json"]).ok();
    serde_json::from_str::<serde_json::Value>(&run.stdout).expect("JSON")["repos"][0].clone()
}

#[test]
fn the_background_pass_reads_only_worktrees_that_may_have_changed() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("busy").ok();
    env.dispatch_shell("still").ok();
    commit(&env, "busy", "README.md", "busy's words\n");
    // The status line's refresh sees each window's output (to the second): the shells
    // printed their prompts more than a second before the first read.
    std::thread::sleep(Duration::from_millis(2100));
    env.orchestra(&["refresh"]).ok();
    assert_eq!(background_pass(&env)["read"], 2, "nothing remembered yet");
    env.orchestra(&["refresh"]).ok();
    let quiet = background_pass(&env);
    assert_eq!(quiet["read"], 0, "{quiet}");
    assert_eq!(quiet["checked"], 0, "{quiet}");

    // Output in busy's window: its worktree is read again, and what it changed is seen.
    write(&env, "busy", "notes.txt", "busy's notes\n");
    write(&env, "still", "notes.txt", "still's notes\n");
    let pane = env.session("busy")["pane"].as_str().unwrap().to_string();
    env.tmux(&["send-keys", "-t", &pane, "echo working", "Enter"]);
    std::thread::sleep(Duration::from_millis(1100));
    env.orchestra(&["refresh"]).ok();
    let pass = background_pass(&env);
    assert_eq!(pass["read"], 1, "{pass}");
    // still's change came without a sign: its last read stands (for up to a minute),
    // so the pair is not seen yet in the background…
    assert_eq!(pass["conflicts"], serde_json::json!([]), "{pass}");
    // …but a person asking reads everything.
    let pairs = conflicts(&env);
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(pairs[0]["paths"][0], "notes.txt");
    // A branch that moves is read again whatever its window shows; a quiet worktree's
    // known changes are read again when a merge needs its tree: still's notes, changed
    // once more without a sign to what busy has, no longer conflict.
    std::thread::sleep(Duration::from_millis(2100));
    env.orchestra(&["refresh"]).ok();
    write(&env, "still", "notes.txt", "busy's notes\n");
    commit(&env, "busy", "other.txt", "committed\n");
    let pass = background_pass(&env);
    assert_eq!(pass["read"], 1, "{pass}");
    assert_eq!(pass["merged"], 1, "{pass}");
    assert_eq!(pass["conflicts"], serde_json::json!([]), "{pass}");
    assert_eq!(conflicts(&env), Vec::<serde_json::Value>::new());
}

fn notes(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_new_pair_is_notified_once_until_it_clears_and_comes_back() {
    let mut env = Env::new();
    env.start_server(&[]);
    // The bus out of reach: orchestra falls back to the notification command.
    env.without_bus();
    let out = env.notes_to_file();
    env.dispatch_shell("api").ok();
    env.dispatch_shell("auth").ok();
    commit(&env, "api", "README.md", "api\n");
    write(&env, "auth", "README.md", "auth\n");

    env.orchestra(&["radar"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || notes(&out).len() == 1),
        "no notification: {:?}",
        notes(&out)
    );
    let note = &notes(&out)[0];
    assert!(
        note.contains("api and auth conflict")
            && note.contains("api and auth both change README.md in repo"),
        "{note}"
    );
    // The same pair again, by the radar or by `conflicts`: no second note.
    env.orchestra(&["radar"]).ok();
    env.orchestra(&["conflicts"]).ok();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(notes(&out).len(), 1, "{:?}", notes(&out));

    // Cleared, then back: a new note.
    git_in(&env.worktree_path("auth"), &["checkout", "README.md"]);
    env.orchestra(&["radar"]).ok();
    write(&env, "auth", "README.md", "auth again\n");
    env.orchestra(&["radar"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || notes(&out).len() == 2),
        "{:?}",
        notes(&out)
    );
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(notes(&out).len(), 2, "{:?}", notes(&out));
}

#[test]
fn merge_warns_before_the_question_which_sessions_it_will_conflict_with() {
    let env = Env::new();
    env.start_server(&[]);
    for label in ["first", "second", "dirty", "apart"] {
        env.dispatch_shell(label).ok();
    }
    commit(&env, "first", "README.md", "first's README\n");
    commit(&env, "second", "README.md", "second's README\n");
    write(
        &env,
        "dirty",
        "README.md",
        "dirty's README, not committed\n",
    );
    commit(&env, "apart", "apart.txt", "elsewhere\n");

    let run = env.orchestra(&["merge", "first", "--yes"]).ok();
    let warned: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("after this merge"))
        .collect();
    assert_eq!(warned.len(), 2, "{}", run.stderr);
    assert!(
        warned
            .iter()
            .any(|l| l.contains("main will conflict with session second in README.md")),
        "{}",
        run.stderr
    );
    assert!(
        warned.iter().any(|l| l.contains("session dirty")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("apart"), "{}", run.stderr);
    assert!(run.stdout.contains("merged session/first into main"));
    // And after it, the radar says the same.
    let pairs = conflicts(&env);
    let mut with_main: Vec<&str> = pairs
        .iter()
        .filter(|p| p["with"] == "main")
        .map(|p| p["session"].as_str().unwrap())
        .collect();
    with_main.sort();
    assert_eq!(with_main, ["dirty", "second"], "{pairs:?}");
}

#[test]
fn brief_conflicts_tells_the_agent_the_files_and_the_other_session_only_when_asked() {
    let env = Env::new();
    env.start_server(&[]);
    // An agent that prints what it is told.
    for label in ["api", "auth", "calm"] {
        env.orchestra(&["dispatch", label, "--agent", "cat", "--kind", "generic"])
            .ok();
    }
    commit(&env, "api", "login.rs", "fn login() { api }\n");
    commit(&env, "auth", "login.rs", "fn login() { auth }\n");
    commit(&env, "calm", "calm.txt", "nothing shared\n");
    let screen = |label: &str| {
        let pane = env.session(label)["pane"].as_str().unwrap().to_string();
        env.tmux(&["capture-pane", "-p", "-J", "-t", &pane])
    };
    // Found, but nobody is told without asking.
    assert_eq!(conflicts(&env).len(), 1);
    assert!(!screen("auth").contains("conflict"));

    let run = env.orchestra(&["brief", "auth", "--conflicts"]).ok();
    assert!(
        run.stdout.contains("briefed auth about its conflicts"),
        "{}",
        run.stdout
    );
    assert!(
        wait_until(Duration::from_secs(10), || {
            let s = screen("auth");
            s.contains("session api (branch session/api)") && s.contains("login.rs")
        }),
        "{}",
        screen("auth")
    );
    assert!(!screen("api").contains("conflict radar"));

    // Nothing to tell: refused, nothing sent.
    let run = env
        .orchestra(&["brief", "calm", "--conflicts"])
        .fails_with(1);
    assert!(run.stderr.contains("nothing was sent"), "{}", run.stderr);
    assert!(!screen("calm").contains("conflict radar"));
    // A text with --conflicts is bad input.
    env.orchestra(&["brief", "auth", "hello", "--conflicts"])
        .fails_with(2);
    env.orchestra(&["brief", "nobody", "--conflicts"])
        .fails_with(2);
}

#[test]
fn conflicts_outside_a_repo_is_bad_input_and_changes_nothing() {
    let env = Env::new();
    let outside = env.root.join("not-a-repo");
    std::fs::create_dir_all(&outside).unwrap();
    let run = env.orchestra_in(&outside, &["conflicts"]).fails_with(2);
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
    env.orchestra_in(&outside, &["conflicts", "--json"])
        .fails_with(2);
    env.orchestra(&["conflicts", "--repo", outside.to_str().unwrap()])
        .fails_with(2);
    assert!(!env.home.join("state.db").exists());
}

#[test]
fn the_status_line_finds_collisions_in_the_background_and_windows_and_menu_show_them() {
    let env = Env::new();
    env.start_server(&[]);
    env.tmux(&["set-option", "-g", "status-interval", "1"]);
    env.tmux(&["set-option", "-g", "status-right", "#{orchestra_status}"]);
    env.orchestra(&["tmux", "init"]).ok();
    env.dispatch_shell("api").ok();
    env.dispatch_shell("auth").ok();
    commit(&env, "api", "README.md", "api\n");
    commit(&env, "auth", "README.md", "auth\n");
    assert!(!env.home.join("cache/radar.json").exists());

    // The first status line has nothing to show yet; it starts a pass detached.
    let first = env.orchestra(&["status-line"]).ok().stdout;
    assert!(!first.contains('⚠'), "{first}");
    assert!(
        wait_until(Duration::from_secs(20), || env
            .orchestra(&["status-line"])
            .stdout
            .contains("⚠1")),
        "the status line never showed the pair: {}",
        env.orchestra(&["status-line"]).stdout
    );
    assert_eq!(badge(&env, "api"), "⚠1");

    // A person sees the badge on the window and the pairs in the menu's popup.
    cd_person_pane(&env, &env.repo);
    let person = Person::attach(&env);
    person.wait_to_see("⚠1");
    choose(&person, "Conflicts", "c");
    person.wait_to_see("SESSION");
    person.wait_to_see("README.md");
    person.keys(&["Enter"]);
    wait_popup_closed(&person, "SESSION");

    // Off: the status line shows no pair and starts no pass.
    env.tmux(&["set-option", "-g", "@orchestra-radar", "off"]);
    assert!(
        wait_until(Duration::from_secs(10), || !env
            .orchestra(&["status-line"])
            .stdout
            .contains('⚠')),
        "still shown with the radar off"
    );
    // A pass started before may still be finishing.
    std::thread::sleep(Duration::from_millis(2000));
    std::fs::remove_file(env.home.join("cache/radar.json")).unwrap();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1100));
        env.orchestra(&["status-line"]).ok();
    }
    std::thread::sleep(Duration::from_millis(1000));
    assert!(!env.home.join("cache/radar.json").exists());
}

#[test]
fn init_adds_the_conflict_badge_once_to_formats_an_older_init_wrote() {
    let env = Env::new();
    env.start_server(&[]);
    let older = "#I:#W#{?@orchestra_state, #{@orchestra_state},}";
    env.tmux(&["set-option", "-gw", "window-status-format", older]);
    env.orchestra(&["tmux", "init"]).ok();
    env.orchestra(&["tmux", "init"]).ok();
    let format = env.tmux(&["show-options", "-gwv", "window-status-format"]);
    assert_eq!(format.matches("@orchestra_state").count(), 2, "{format}");
    assert_eq!(
        format.matches("@orchestra_conflicts").count(),
        2,
        "{format}"
    );
    assert!(format.starts_with(older), "{format}");
}

#[test]
fn a_session_squashed_into_its_target_leaves_the_radar() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("api").ok();
    env.dispatch_shell("auth").ok();
    commit(&env, "api", "README.md", "hello from api\n");
    commit(&env, "auth", "README.md", "hello from auth\n");
    assert_eq!(conflicts(&env).len(), 1);

    env.git(&["merge", "-q", "--squash", "session/api"]);
    env.git(&["commit", "-q", "-m", "api, squashed"]);
    // api's work is main's now: auth conflicts with main, and with api no more.
    let pairs = conflicts(&env);
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(pairs[0]["session"], "auth");
    assert_eq!(pairs[0]["with"], "main");
    assert_eq!(env.session("api")["conflicts_with"], serde_json::json!([]));
    assert_eq!(badge(&env, "api"), "");
}
