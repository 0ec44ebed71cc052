//! What orchestra keeps on disk: private whatever the umask, never in a guessed shared
//! folder, and bounded (events pruned, logs rotated, no prompt text in caches).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::{git_in, ClaudeWorld, Env, Run};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// Every folder and file under `dir` (links not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if entry.file_type().expect("file type").is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

/// The folders and files under `home` that are not 0700/0600, with their modes.
fn not_private(home: &Path) -> Vec<String> {
    let mut wrong = vec![];
    for path in std::iter::once(home.to_path_buf()).chain(walk(home)) {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        let got = mode(&path);
        if got != want {
            wrong.push(format!("{} is {got:o}", path.display()));
        }
    }
    wrong
}

fn names(home: &Path) -> Vec<String> {
    walk(home)
        .iter()
        .map(|p| {
            p.strip_prefix(home)
                .expect("under home")
                .display()
                .to_string()
        })
        .collect()
}

/// The arguments that dispatch session `a`, a shell, with `prompt`.
fn dispatch_shell_with(prompt: &str) -> [&str; 8] {
    [
        "dispatch",
        "a",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--prompt",
        prompt,
    ]
}

#[test]
fn everything_under_the_home_is_private_whatever_the_umask() {
    let env = Env::new();
    env.start_server(&[]);
    let u = |args: &[&str]| env.orchestra_umask("000", args);
    u(&dispatch_shell_with("echo hello")).ok();
    u(&["refresh"]).ok();
    u(&["status-line"]).ok();
    u(&["brief", "a", "--force", "echo briefed"]).ok();
    u(&["collect"]).ok();
    // A hook's problem goes to logs/hooks.log.
    u(&["event", "--from-hook", "--session", "nosuch", "Stop"]).ok();
    // A merge takes a lock in locks/ and journals in merges/.
    env.dispatch_shell("b").ok();
    let wt = env.worktree_path("b");
    std::fs::write(wt.join("b.txt"), "b\n").unwrap();
    git_in(&wt, &["add", "."]);
    git_in(&wt, &["commit", "-q", "-m", "b"]);
    u(&["merge", "b", "--yes"]).ok();

    let made = names(&env.home);
    for wanted in [
        "state.db",
        "state.db-wal",
        "briefings",
        "cache",
        "collect",
        "logs/hooks.log",
        "locks",
    ] {
        assert!(
            made.iter().any(|n| n == wanted),
            "{wanted} was not made: {made:?}"
        );
    }
    assert_eq!(not_private(&env.home), Vec::<String>::new());
}

#[test]
fn a_claude_sessions_settings_are_private_whatever_the_umask() {
    let env = Env::new();
    let Some(world) = ClaudeWorld::start(&env, &[&env.worktree_path("c")]) else {
        return;
    };
    env.start_server(&world.env);
    let agent = shell_words::quote(&world.claude.to_string_lossy()).into_owned();
    env.orchestra_umask(
        "000",
        &["dispatch", "c", "--agent", &agent, "--prompt", "hi"],
    )
    .ok();
    let made = names(&env.home);
    assert!(
        made.iter()
            .any(|n| n.starts_with("sessions/") && n.ends_with("settings.json")),
        "{made:?}"
    );
    assert!(made.iter().any(|n| n == "agent-versions.json"), "{made:?}");
    assert_eq!(not_private(&env.home), Vec::<String>::new());
}

#[test]
fn an_old_home_that_others_can_read_is_tightened_on_first_use() {
    let env = Env::new();
    env.orchestra(&["list"]).ok();
    let loose = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    std::fs::create_dir_all(env.home.join("cache")).unwrap();
    std::fs::write(env.home.join("cache/status-x.json"), "{}").unwrap();
    std::fs::write(env.home.join("notes.txt"), "mine").unwrap();
    loose(&env.home, 0o755).unwrap();
    loose(&env.home.join("state.db"), 0o644).unwrap();
    loose(&env.home.join("cache"), 0o775).unwrap();
    loose(&env.home.join("cache/status-x.json"), 0o664).unwrap();
    loose(&env.home.join("notes.txt"), 0o644).unwrap();

    env.orchestra(&["list"]).ok();
    assert_eq!(mode(&env.home), 0o700);
    assert_eq!(mode(&env.home.join("state.db")), 0o600);
    assert_eq!(mode(&env.home.join("cache")), 0o700);
    assert_eq!(mode(&env.home.join("cache/status-x.json")), 0o600);
    // Not orchestra's: left as it was (the private home already hides it).
    assert_eq!(mode(&env.home.join("notes.txt")), 0o644);
}

/// orchestra with no HOME, no ORCHESTRA_HOME and no XDG_STATE_HOME.
fn without_home(env: &Env, args: &[&str]) -> Run {
    let mut cmd = env.orchestra_command(&env.repo, args);
    cmd.env_remove("HOME")
        .env_remove("ORCHESTRA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("ORCHESTRA_PROJECTS_DIR");
    Run::from(cmd.output().expect("run orchestra"))
}

#[test]
fn without_home_orchestra_refuses_to_guess_a_shared_folder() {
    let env = Env::new();
    let guessed = Path::new("/tmp/.local/state/orchestra");
    let existed = guessed.exists();
    for args in [&["list"][..], &["status-line"], &["slugify", "x"]] {
        let run = without_home(&env, args).fails_with(2);
        assert!(run.stderr.contains("HOME is not set"), "{}", run.stderr);
    }
    assert_eq!(guessed.exists(), existed, "nothing made in /tmp");
    // A hook still never fails the agent, and says nothing on stdout.
    let run = without_home(&env, &["event", "--from-hook", "--session", "x", "Stop"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    // What needs no home still works (a package build may have none).
    let run = without_home(&env, &["completions", "bash"]).ok();
    assert!(run.stdout.contains("orchestra"));

    // launch --new: the projects folder is not guessed either.
    let projects = Path::new("/tmp/projects/shop");
    let existed = projects.exists();
    let mut cmd = env.orchestra_command(&env.repo, &["launch", "--new", "shop", "--agent", "bash"]);
    cmd.env_remove("HOME").env_remove("ORCHESTRA_PROJECTS_DIR");
    let run = Run::from(cmd.output().expect("run orchestra")).fails_with(2);
    assert!(run.stderr.contains("HOME is not set"), "{}", run.stderr);
    assert_eq!(projects.exists(), existed);
}

/// `events --json` of this repo: the kinds, oldest first.
fn event_kinds(env: &Env) -> Vec<String> {
    let run = env.orchestra(&["events", "--json"]).ok();
    let events: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).expect("JSON");
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn events_older_than_the_retention_are_pruned_on_a_write() {
    let mut env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("a").ok();
    let id = env.session("a")["id"].as_str().unwrap().to_string();
    assert!(event_kinds(&env).contains(&"dispatched".to_string()));
    std::thread::sleep(Duration::from_millis(3100));

    // The default (30 days) keeps them.
    env.orchestra(&["event", "--session", &id, "busy"]).ok();
    assert!(event_kinds(&env).contains(&"dispatched".to_string()));

    env.env
        .push(("ORCHESTRA_EVENTS_RETENTION".into(), "1s".into()));
    // Reading prunes nothing; the next write does.
    assert!(event_kinds(&env).contains(&"dispatched".to_string()));
    env.orchestra(&["event", "--session", &id, "idle"]).ok();
    let kinds = event_kinds(&env);
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k == "state"),
        "only the events of the last seconds are left: {kinds:?}"
    );

    env.env.pop();
    env.env
        .push(("ORCHESTRA_EVENTS_RETENTION".into(), "soon".into()));
    let run = env.orchestra(&["list"]).fails_with(2);
    assert!(
        run.stderr.contains("ORCHESTRA_EVENTS_RETENTION"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_log_past_a_mebibyte_is_rotated_keeping_one() {
    let env = Env::new();
    let log = env.home.join("logs/hooks.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let old = "x".repeat(1024 * 1024 + 10);
    std::fs::write(&log, &old).unwrap();
    std::fs::write(env.home.join("logs/hooks.log.1"), "older").unwrap();
    let hook = || {
        env.orchestra(&["event", "--from-hook", "--session", "nosuch", "Stop"])
            .ok()
    };
    hook();
    assert_eq!(
        std::fs::read_to_string(env.home.join("logs/hooks.log.1")).unwrap(),
        old
    );
    let fresh = std::fs::read_to_string(&log).unwrap();
    assert!(fresh.contains("unknown session id"), "{fresh}");
    assert!(fresh.len() < 1024, "{}", fresh.len());
    // Under the limit: appended to, not rotated.
    hook();
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
}

#[test]
fn the_status_cache_holds_no_prompt_text() {
    let env = Env::new();
    env.start_server(&[]);
    let secret = "token-3f9c1e-do-not-keep";
    env.orchestra(&dispatch_shell_with(&format!("# {secret}")))
        .ok();
    env.orchestra(&["refresh"]).ok();
    env.orchestra(&["status-line"]).ok();
    let cache = env.home.join("cache");
    let files = walk(&cache);
    assert!(
        files
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "json")),
        "a cache was written: {files:?}"
    );
    for file in files.iter().filter(|p| p.is_file()) {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        assert!(
            !text.contains(secret),
            "{} holds the prompt",
            file.display()
        );
    }
}

#[test]
fn usage_lines_never_show_the_socket_from_the_environment_as_required() {
    let env = Env::new();
    // The harness sets ORCHESTRA_TMUX_SOCKET for every run.
    for args in [&["dispatch"][..], &["kill"], &["list", "--no-such-flag"]] {
        let run = env.orchestra(args);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("Usage:"), "{}", run.stderr);
        assert!(!run.stderr.contains("--socket"), "{}", run.stderr);
    }
    // The variable still picks the server.
    env.start_server(&[]);
    env.dispatch_shell("a").ok();
    assert!(env.windows().iter().any(|w| w.contains(" a ")));
}
