//! A pull request's state read back by the background refresh (`orchestra pr
//! --background`) from our GitHub stand-in, with the real tmux, git and a bare remote: a
//! failing check reaching the window's mark, `list`, `list --json`, the status line and
//! one notification; a quiet second poll costing no rate-limit point; a merge on the
//! "server" turning the session merged, so `kill` deletes its branch without archiving.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{commit_file, wait_until};
use crate::pr::World;

/// The test's hand on the stand-in's world (`POST /_control`: never logged).
fn control(world: &World, change: Value) {
    let url = world.api.url();
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let body = change.to_string();
    write!(
        stream,
        "POST /_control HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// One background read now, as the status line starts it, with what it did.
fn poll(world: &World) -> Value {
    let run = world.env.orchestra(&["pr", "--background", "--json"]).ok();
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// The rate-limit points the stand-in charged (a 304 costs none).
fn points(world: &World) -> u64 {
    world
        .api
        .requests_json()
        .iter()
        .map(|r| r["cost"].as_u64().unwrap_or(0))
        .sum()
}

fn notes(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_failing_check_reaches_the_mark_list_status_line_and_one_notification() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let mut world = world.with_origin();
    world.env.without_bus();
    let noted = world.env.notes_to_file();
    let opened = world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(opened.stdout.contains("#1"), "{}", opened.stdout);
    control(
        &world,
        json!({"repo": "me/app", "branch": "session/login", "check_runs": [
            {"name": "unit tests", "status": "completed", "conclusion": "success"},
            {"name": "lint", "status": "completed", "conclusion": "failure",
             "output": {"title": "1 error", "summary": "unused import"}}]}),
    );

    let first = poll(&world);
    assert_eq!(first["changed"], json!(["login"]), "{first}");
    let pull = world.env.session("login")["pull_request"].clone();
    assert_eq!(
        (
            pull["state"].as_str(),
            pull["checks"].as_str(),
            pull["failing_check"].as_str(),
            pull["comments"].as_u64()
        ),
        (Some("draft"), Some("failing"), Some("lint"), Some(0)),
        "{pull}"
    );
    assert_eq!(pull["head_sha"].as_str().map(str::len), Some(40), "{pull}");
    let list = world.env.orchestra(&["list"]).ok().stdout;
    assert!(list.contains("#1 draft ✗lint"), "{list}");
    let health = world.env.orchestra(&["health"]).ok().stdout;
    assert!(health.contains("#1 draft ✗lint"), "{health}");
    let health_json: Value =
        serde_json::from_str(&world.env.orchestra(&["health", "--json"]).ok().stdout).unwrap();
    assert_eq!(
        health_json[0]["pull_request"], "#1 draft ✗lint",
        "{health_json}"
    );
    let frame = world.env.orchestra(&["watch", "--count", "1"]).ok().stdout;
    assert!(frame.contains("#1 draft ✗lint"), "{frame}");
    let window = world.env.session("login")["window"]
        .as_str()
        .unwrap()
        .to_string();
    let mark = world
        .env
        .tmux(&["show-options", "-wqv", "-t", &window, "@orchestra_pr"]);
    assert_eq!(mark.trim(), "#1✗");
    let line = world.env.orchestra(&["status-line"]).ok().stdout;
    assert!(line.contains("✗ci1"), "{line}");
    assert!(
        wait_until(Duration::from_secs(10), || notes(&noted)
            .iter()
            .any(|n| n.contains("lint failed on #1"))),
        "no notification: {:?}",
        notes(&noted)
    );

    // Nothing changed on the server: every request is a 304, no point is spent, and the
    // failing check is not told again.
    let spent = points(&world);
    let quiet = poll(&world);
    assert_eq!(quiet["requests"], quiet["not_modified"], "{quiet}");
    assert!(quiet["requests"].as_u64() >= Some(1), "{quiet}");
    assert_eq!(points(&world), spent, "a quiet poll cost points");
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(notes(&noted).len(), 1, "{:?}", notes(&noted));

    // A review asking for changes: told once, shown in the list.
    control(
        &world,
        json!({"repo": "me/app", "number": 1, "reviews": [{"user": "ann", "state": "CHANGES_REQUESTED"}]}),
    );
    poll(&world);
    let list = world.env.orchestra(&["list"]).ok().stdout;
    assert!(list.contains("changes requested"), "{list}");
    assert!(
        wait_until(Duration::from_secs(10), || notes(&noted)
            .iter()
            .any(|n| n.contains("changes requested on #1"))),
        "{:?}",
        notes(&noted)
    );
    world.assert_token_nowhere(&[&list, &line, &frame]);
}

#[test]
fn a_pull_request_merged_on_the_server_makes_kill_delete_the_branch_unarchived() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    env.orchestra(&["pr", "login", "--yes"]).ok();
    // A session waiting for login's branch: released once login's work is merged.
    let mut waiting = crate::harness::shell_dispatch("ui").to_vec();
    waiting.extend(["--after", "login:branch:session/login"]);
    env.orchestra(&waiting).ok();
    assert_eq!(env.session("ui")["status"], "blocked");
    // Another session changing the same file: the radar pairs them while login is open.
    env.dispatch_shell("other").ok();
    commit_file(
        &env.worktree_path("other"),
        "login.txt",
        "another redirect\n",
        "Another login change",
    );
    let pairs = env.orchestra(&["conflicts", "--json"]).ok().stdout;
    assert!(
        pairs.contains("\"with\": \"other\"") || pairs.contains("\"with\": \"login\""),
        "{pairs}"
    );
    poll(&world);
    // Squash-merged on GitHub; the local main has not fetched it.
    control(
        &world,
        json!({"repo": "me/app", "pull": {"number": 1, "merged": true}}),
    );
    let read = poll(&world);
    assert_eq!(read["changed"], json!(["login"]), "{read}");
    let row = env.session("login");
    assert_eq!(row["merged"].as_str(), Some("merged in #1"), "{row}");
    let list = env.orchestra(&["list"]).ok().stdout;
    assert!(list.contains("merged in #1"), "{list}");
    // The radar drops it: nothing of login's is left to merge.
    let pairs: Value =
        serde_json::from_str(&env.orchestra(&["conflicts", "--json"]).ok().stdout).unwrap();
    assert_eq!(pairs, json!([]), "{pairs}");
    let killed = env.orchestra(&["kill", "login"]).ok();
    assert!(killed.stdout.contains("merged in #1"), "{}", killed.stdout);
    let branches = env.git(&["branch", "--list", "archive/*", "session/login"]);
    assert!(branches.trim().is_empty(), "{branches}");
    assert!(!env.worktree_path("login").exists());
    assert!(
        !killed.stdout.contains("stays blocked"),
        "{}",
        killed.stdout
    );
    env.orchestra(&["refresh"]).ok();
    assert!(
        wait_until(Duration::from_secs(20), || env.session("ui")["status"]
            == "running"),
        "{}",
        env.session("ui")
    );
}

#[test]
fn a_commit_after_the_merged_head_is_work_the_forge_never_saw_so_kill_archives_it() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    env.orchestra(&["pr", "login", "--yes"]).ok();
    poll(&world);
    control(
        &world,
        json!({"repo": "me/app", "pull": {"number": 1, "merged": true}}),
    );
    poll(&world);
    let merged_head = env.session("login")["pull_request"]["head_sha"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        merged_head,
        env.git(&["rev-parse", "session/login"]).trim(),
        "the merged head is the branch's tip"
    );
    // Committed after the merge: the branch's tip is no longer what was merged.
    commit_file(
        &env.worktree_path("login"),
        "later.txt",
        "after the merge\n",
        "A change after the merge",
    );
    let row = env.session("login");
    assert!(row["merged"].is_null(), "{row}");
    let killed = env.orchestra(&["kill", "login"]).ok();
    assert!(!killed.stdout.contains("merged in #1"), "{}", killed.stdout);
    let archived: Vec<String> = env
        .branches()
        .into_iter()
        .filter(|b| b.starts_with("archive/login-"))
        .collect();
    assert_eq!(archived.len(), 1, "{archived:?}");
    assert_eq!(
        env.git(&["show", &format!("{}:later.txt", archived[0])]),
        "after the merge\n"
    );
}

#[test]
fn the_status_line_starts_the_background_read_on_its_interval() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    env.orchestra(&["pr", "login", "--yes"]).ok();
    let lists = || {
        world
            .api
            .requests_json()
            .iter()
            .filter(|r| {
                r["method"] == "GET"
                    && r["path"].as_str().is_some_and(|p| {
                        p.starts_with("/repos/me/app/pulls?") && p.contains("sort=updated")
                    })
            })
            .count()
    };
    assert_eq!(lists(), 0);
    // Off: the status line starts no read.
    env.tmux(&["set-option", "-g", "@orchestra-pr-interval", "off"]);
    for _ in 0..3 {
        env.orchestra(&["status-line"]).ok();
        std::thread::sleep(Duration::from_millis(700));
    }
    assert_eq!(lists(), 0, "a read started with the interval off");
    // Every second: the first status line starts one, a later one the next.
    env.tmux(&["set-option", "-g", "@orchestra-pr-interval", "1"]);
    for wanted in [1, 2] {
        assert!(
            wait_until(Duration::from_secs(20), || {
                env.orchestra(&["status-line"]).ok();
                lists() >= wanted
            }),
            "no list request {wanted}: {:?}",
            world.api.requests_json()
        );
    }
}

#[test]
fn without_a_token_the_background_read_is_silent() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let mut world = world.with_origin();
    world.env.orchestra(&["pr", "login", "--yes"]).ok();
    let before = world.api.requests_json().len();
    world.env.env.retain(|(k, _)| k != "GH_TOKEN");
    world.env.env.push(("GH_TOKEN".into(), String::new()));
    // No gh to ask either: PATH keeps only the git wrapper and the system's tools.
    let read = world.env.orchestra(&["pr", "--background", "--json"]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(read.stderr.is_empty(), "{}", read.stderr);
    assert_eq!(world.api.requests_json().len(), before);
    let line = world.env.orchestra(&["status-line"]).ok().stdout;
    assert!(!line.contains("ci"), "{line}");
}

#[test]
fn ready_on_an_open_draft_marks_it_ready_through_graphql() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    let draft = env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        draft.stdout.contains("draft pull request #1"),
        "{}",
        draft.stdout
    );
    let ready = env.orchestra(&["pr", "login", "--yes", "--ready"]).ok();
    assert!(
        ready.stdout.contains("pull request #1") && !ready.stdout.contains("draft"),
        "{}",
        ready.stdout
    );
    let asked: Vec<Value> = world
        .api
        .requests_json()
        .into_iter()
        .filter(|r| r["path"] == "/graphql")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["body"]["variables"]["id"], "PR_1");
    assert_eq!(asked[0]["auth"], "ok");
    poll(&world);
    let pull = env.session("login")["pull_request"].clone();
    assert_eq!(pull["state"].as_str(), Some("open"), "{pull}");
}

#[test]
fn brief_ci_types_the_failing_checks_log_tail_into_the_pane() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    // No failing check yet: one line, exit 2, nothing typed.
    let none = env.orchestra(&["brief", "login", "--ci"]);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert_eq!(none.stderr.trim().lines().count(), 1, "{}", none.stderr);
    env.orchestra(&["pr", "login", "--yes"]).ok();
    let log: String = (0..200)
        .map(|i| format!("step {i:03} ok\n"))
        .chain(["\u{1b}[31merror: unused import in src/login.rs\u{1b}[0m\n".to_string()])
        .collect();
    control(
        &world,
        json!({"repo": "me/app", "branch": "session/login", "check_runs": [
            {"name": "lint", "status": "completed", "conclusion": "failure", "log": log}]}),
    );
    poll(&world);
    // What reaches the pane is kept by `cat` in the session's shell.
    let pane = env.session("login")["pane"].as_str().unwrap().to_string();
    let received = env.root.join("received.txt");
    env.tmux(&[
        "send-keys",
        "-t",
        &pane,
        &format!("cat > '{}'", received.display()),
        "Enter",
    ]);
    assert!(wait_until(Duration::from_secs(10), || received.exists()));
    let sent = env.orchestra(&["brief", "login", "--ci", "--force"]).ok();
    assert!(sent.stdout.contains("briefed login"), "{}", sent.stdout);
    let screen = || std::fs::read_to_string(&received).unwrap_or_default();
    assert!(
        wait_until(Duration::from_secs(10), || screen()
            .contains("error: unused import in src/login.rs")),
        "{}",
        screen()
    );
    let shown = screen();
    // Inert: the log's escapes arrive as text, never as escapes.
    assert!(
        !shown.contains('\u{1b}') && shown.contains("\\e[31m"),
        "{shown}"
    );
    assert!(shown.contains("The CI check lint failed"), "{shown}");
    assert!(shown.contains("step 199 ok"), "{shown}");
    // Bounded: the log's first lines stay out.
    assert!(!shown.contains("step 000 ok"), "{shown}");
    // The log's address was asked without the token (the stand-in refuses one there).
    let logs: Vec<Value> = world
        .api
        .requests_json()
        .into_iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with("/logs")))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
}

/// Whether anything connected to `listener` (non-blocking: a connection waits in its
/// backlog until accepted).
fn connected(listener: &std::net::TcpListener) -> bool {
    listener.accept().is_ok()
}

#[test]
fn a_repos_github_api_gets_no_token_until_the_person_allows_it() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let mut world = world.with_origin();
    // The person's environment names the stand-in: no allowing needed.
    let opened = world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(opened.stdout.contains("#1"), "{}", opened.stdout);
    world
        .env
        .env
        .push(("ORCHESTRA_GITHUB_API".into(), String::new()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let hostile = format!("http://{}", listener.local_addr().unwrap());
    let manifest = world.env.repo.join("orchestra.toml");
    std::fs::write(&manifest, format!("[github]\napi = \"{hostile}\"\n")).unwrap();
    let kept = world.env.session("login")["pull_request"].clone();
    let sent = world.api.requests_json().len();

    let refused = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert_eq!(
        refused.stderr.trim().lines().count(),
        1,
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("github.api")
            && refused.stderr.contains(&hostile)
            && refused.stderr.contains("orchestra allow"),
        "{}",
        refused.stderr
    );
    // The background read the status line starts: silent, nothing sent, nothing kept.
    let read = world.env.orchestra(&["pr", "--background", "--json"]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(read.stderr.is_empty(), "{}", read.stderr);
    let pass: Value = serde_json::from_str(&read.stdout).unwrap();
    assert_eq!(
        (pass["repos"].as_u64(), pass["requests"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(pass["skipped"].to_string().contains("github.api"), "{pass}");
    world.env.orchestra(&["status-line"]).ok();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !connected(&listener),
        "the hostile address was connected to"
    );
    assert_eq!(world.env.session("login")["pull_request"], kept);
    assert_eq!(world.api.requests_json().len(), sent);

    // Allowed, the address it names receives the token.
    std::fs::write(
        &manifest,
        format!("[github]\napi = \"{}\"\n", world.api.url()),
    )
    .unwrap();
    world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert_eq!(world.api.requests_json().len(), sent);
    let allowed = world.env.orchestra(&["allow"]).ok();
    assert!(
        allowed.stdout.contains("github.api: http://")
            && allowed.stdout.contains("(receives your GitHub token)"),
        "{}",
        allowed.stdout
    );
    let shown = world.env.orchestra(&["allow", "--show"]).ok();
    assert!(
        shown.stdout.contains("API addresses allowed"),
        "{}",
        shown.stdout
    );
    world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(world.api.requests_json().len() > sent);
    let sent = world.api.requests_json().len();
    let read = poll(&world);
    assert!(read.is_object(), "{read}");
    assert!(world.api.requests_json().len() > sent);

    // An address changed after the allow is not allowed.
    std::fs::write(&manifest, format!("[github]\napi = \"{hostile}\"\n")).unwrap();
    world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    let read = world.env.orchestra(&["pr", "--background", "--json"]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(
        !connected(&listener),
        "the changed address was connected to"
    );
}
