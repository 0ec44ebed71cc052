//! GitHub Issues as a task source (`[tasks] source = "github"`): the repo's open issues
//! listed with its filters, one picked (assigned and labelled) and dispatched with the real
//! claude, its pull request's body naming `Fixes #N`, the issue closed with a comment when
//! the work merges locally (by `merge`, or found squashed in by `kill`), and bad input
//! refused with nothing changed — against our GitHub REST stand-in
//! (tests/fake-api/github.py) and a bare repository on this machine as the remote.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{commit_file, git_in, require, wait_until, which, ClaudeWorld, Env, StandIn};

const TOKEN: &str = "ghp_s3cr3t_0rch3stra_issues_t0k3n";

/// The stand-in's repository `me/app`: open issues #1 (bug), #2 (docs, assigned to ann),
/// #3 (bug, ui), a closed #4, and #5, a pull request (GitHub lists it among issues).
fn world(faults: Value) -> Value {
    json!({
        "token": TOKEN,
        "login": "me",
        "per_page": 2,
        "repos": {"me/app": {
            "default_branch": "main",
            "branches": ["main"],
            "collaborators": ["ann"],
            "issues": [
                {"title": "Fix the login redirect", "labels": ["bug"],
                 "body": "The login page sends you back to itself 5e1f.\n\n[[say: on the login issue 8a2c]]"},
                {"title": "Write the docs", "labels": ["docs"], "assignees": ["ann"], "body": "Docs 7d1e."},
                {"title": "Fix the button", "labels": ["bug", "ui"], "body": "The button is grey."},
                {"title": "Old work", "state": "closed"},
            ],
            "pulls": [{"head": "session/other", "title": "Someone's pull", "body": "Fixes #3"}],
        }},
        "faults": faults,
    })
}

struct Issues {
    env: Env,
    api: StandIn,
}

impl Issues {
    /// A repo whose `origin` is a bare repository at `remote/me/app.git`, orchestra.toml's
    /// `[tasks]` naming GitHub with `extra` lines, the stand-in serving `world`.
    fn start(world: Value, extra: &str) -> Option<Issues> {
        let env = Env::new();
        Issues::start_in(env, world, extra)
    }

    fn start_in(mut env: Env, mut world: Value, extra: &str) -> Option<Issues> {
        if !require("python3", which("python3").is_some()) {
            return None;
        }
        let bare = env.root.join("remote/me/app.git");
        std::fs::create_dir_all(&bare).unwrap();
        git_in(&bare, &["init", "-q", "--bare", "-b", "main"]);
        // Its branches are the bare repository's (what `orchestra pr` pushed).
        world["repos"]["me/app"]["git_dir"] = json!(bare);
        let file = env.root.join("github-world.json");
        std::fs::write(&file, world.to_string()).unwrap();
        let api = StandIn::start_with(
            &env.root,
            "github.py",
            &[OsStr::new("--world"), file.as_os_str()],
        );
        env.env.push(("ORCHESTRA_GITHUB_API".into(), api.url()));
        env.env.push(("GH_TOKEN".into(), TOKEN.into()));
        env.env.push(("GITHUB_TOKEN".into(), String::new()));
        let issues = Issues { env, api };
        issues.configure(extra);
        issues
            .env
            .git(&["remote", "add", "origin", &bare.to_string_lossy()]);
        issues.env.git(&["push", "-q", "origin", "main"]);
        Some(issues)
    }

    /// orchestra.toml's `[tasks]`: source github and `extra`, committed (a merge wants a
    /// clean main worktree).
    fn configure(&self, extra: &str) {
        let text = format!("[tasks]\nsource = \"github\"\n{extra}");
        std::fs::write(self.env.repo.join("orchestra.toml"), text).unwrap();
        self.env.git(&["add", "orchestra.toml"]);
        self.env.git(&["commit", "-q", "-m", "orchestra.toml"]);
    }

    /// A change on the "server" (someone on the web).
    fn control(&self, change: Value) {
        let url = self.api.url();
        let authority = url.trim_start_matches("http://").trim_end_matches('/');
        let mut stream = std::net::TcpStream::connect(authority).unwrap();
        let body = change.to_string();
        use std::io::{Read, Write};
        write!(
            stream,
            "POST /_control HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    fn requests(&self) -> Vec<Value> {
        self.api.requests_json()
    }

    /// The requests that change something (all but GETs), as (method, path, body).
    fn writes(&self) -> Vec<(String, String, Value)> {
        self.requests()
            .into_iter()
            .filter(|r| r["method"] != "GET")
            .map(|r| {
                (
                    r["method"].as_str().unwrap_or("").to_string(),
                    r["path"].as_str().unwrap_or("").to_string(),
                    r["body"].clone(),
                )
            })
            .collect()
    }

    fn listed(&self) -> Vec<String> {
        let run = self.env.orchestra(&["tasks", "--json"]).ok();
        let tasks: Value = serde_json::from_str(&run.stdout).expect("JSON");
        tasks
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    }
}

#[test]
fn open_issues_are_listed_across_pages_without_pull_requests_and_filtered() {
    let Some(issues) = Issues::start(world(json!([])), "") else {
        return;
    };
    assert_eq!(
        issues.listed(),
        ["1", "2", "3"],
        "open, oldest first, no pull"
    );
    let table = issues.env.orchestra(&["tasks"]).ok().stdout;
    assert!(
        table.contains("Fix the login redirect")
            && table.contains("https://github.example/me/app/issues/1")
            && !table.contains("Someone's pull")
            && !table.contains("Old work"),
        "{table}"
    );
    let pages = issues
        .requests()
        .iter()
        .filter(|r| r["path"].as_str().unwrap_or("").contains("/issues?"))
        .count();
    assert_eq!(
        pages,
        2 * 2,
        "four open (the pull too), two a page, listed twice"
    );

    issues.configure("labels = [\"bug\"]\n");
    assert_eq!(issues.listed(), ["1", "3"]);
    issues.configure("labels = [\"bug\", \"ui\"]\n");
    assert_eq!(issues.listed(), ["3"]);
    issues.configure("assignee = \"ann\"\n");
    assert_eq!(issues.listed(), ["2"]);
    issues.configure("assignee = \"none\"\nlabels = [\"bug\"]\n");
    assert_eq!(issues.listed(), ["1", "3"]);
    let last = issues.requests().last().unwrap()["path"].clone();
    let last = last.as_str().unwrap();
    assert!(
        last.contains("labels=bug") && last.contains("assignee=none"),
        "GitHub filters, not orchestra: {last}"
    );
    // A setting of another source is refused, naming the key.
    issues.configure("tasks_data_source = \"1c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b\"\n");
    let refused = issues.env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        refused.stderr.contains("tasks_data_source") && refused.stderr.contains("\"notion\""),
        "{}",
        refused.stderr
    );
    assert!(issues.writes().is_empty());
}

#[test]
fn an_issue_picked_with_claude_is_assigned_named_in_its_pr_and_closed_on_a_local_merge() {
    let env = Env::new();
    let label = "fix-the-login-redirect";
    let worktree = env.worktree_path(label);
    let Some(claude) = ClaudeWorld::start(&env, &[&worktree]) else {
        return;
    };
    let Some(issues) = Issues::start_in(env, world(json!([])), "") else {
        return;
    };
    let env = &issues.env;
    env.start_server(&claude.env);
    let agent = claude.claude.to_string_lossy().into_owned();
    let picked = env
        .orchestra(&["tasks", "pick", "#1", "--dispatch", "--agent", &agent])
        .ok();
    assert!(
        picked
            .stdout
            .contains("task 1 (Fix the login redirect) is assigned to me and labelled \"in progress\" now; session fix-the-login-redirect works on it"),
        "{}",
        picked.stdout
    );
    assert_eq!(env.session(label)["task"], "1");
    assert!(
        wait_until(Duration::from_secs(60), || claude.api.requests().contains(
            "Fix the login redirect\\n\\nThe login page sends you back to itself 5e1f."
        )),
        "the model never got the issue; screen:\n{}",
        env.screen(label)
    );
    env.wait_screen(label, "on the login issue 8a2c", Duration::from_secs(30));
    // Assigned and labelled in one change, the issue's own labels kept.
    assert_eq!(
        issues.writes(),
        [(
            "PATCH".to_string(),
            "/repos/me/app/issues/1".to_string(),
            json!({"assignees": ["me"], "labels": ["bug", "in progress"]})
        )]
    );
    let listed = env.orchestra(&["tasks", "--json"]).ok().stdout;
    assert!(listed.contains("\"status\": \"in progress\""), "{listed}");

    // Its pull request names the issue, so that merging it on GitHub closes it.
    commit_file(&worktree, "login.txt", "fixed\n", "Fix the login redirect");
    env.orchestra(&["pr", label, "--yes"]).ok();
    let pulls: Vec<Value> = issues
        .writes()
        .into_iter()
        .filter(|(m, p, _)| m == "POST" && p == "/repos/me/app/pulls")
        .map(|(_, _, body)| body)
        .collect();
    let body = pulls[0]["body"].as_str().unwrap();
    assert!(body.contains("\nFixes #1\n"), "{body}");

    // Merged here: closed, then a comment naming the merge.
    let before = issues.writes().len();
    let merged = env.orchestra(&["merge", label, "--yes"]).ok();
    assert!(
        merged
            .stdout
            .contains("issue #1 is closed now (merged into main as "),
        "{}",
        merged.stdout
    );
    let writes = issues.writes();
    let after = &writes[before..];
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(
        (&after[0].0, &after[0].1, &after[0].2),
        (
            &"PATCH".to_string(),
            &"/repos/me/app/issues/1".to_string(),
            &json!({"state": "closed", "state_reason": "completed"})
        )
    );
    let tip = git_in(&env.repo, &["rev-parse", "--short=10", "main"]);
    assert_eq!(after[1].1, "/repos/me/app/issues/1/comments");
    let comment = after[1].2["body"].as_str().unwrap();
    assert!(
        comment.contains(&format!("merged into main as {}", tip.trim())),
        "{comment}"
    );
    let log = std::fs::read_to_string(env.root.join("github-requests.jsonl")).unwrap();
    assert!(!log.contains(TOKEN) && !merged.stdout.contains(TOKEN));
}

#[test]
fn kill_of_a_locally_squash_merged_session_closes_its_issue_and_a_closed_one_is_left() {
    let Some(issues) = Issues::start(world(json!([])), "") else {
        return;
    };
    let env = &issues.env;
    env.start_server(&[]);
    env.orchestra(&["tasks", "pick", "3", "--dispatch", "--agent", "cat"])
        .ok();
    let label = "fix-the-button";
    assert_eq!(env.session(label)["task"], "3");
    let wt = env.worktree_path(label);
    // Two commits squashed into one: no commit of the branch is on main.
    commit_file(&wt, "button.txt", "blue\n", "Colour the button");
    commit_file(&wt, "button_test.txt", "covered\n", "Test the button");
    env.git(&["merge", "-q", "--squash", &format!("session/{label}")]);
    env.git(&["commit", "-q", "-m", "the button, squashed"]);
    let before = issues.writes().len();
    let killed = env.orchestra(&["kill", label]).ok();
    assert!(
        killed
            .stdout
            .contains("killed fix-the-button (merged: squashed into main)")
            && killed
                .stdout
                .contains("issue #3 is closed now (squashed into main)"),
        "{}",
        killed.stdout
    );
    let writes = issues.writes();
    let after: Vec<&str> = writes[before..]
        .iter()
        .map(|(_, p, _)| p.as_str())
        .collect();
    assert_eq!(
        after,
        ["/repos/me/app/issues/3", "/repos/me/app/issues/3/comments"]
    );
    assert!(writes[before + 1].2["body"]
        .as_str()
        .unwrap()
        .contains("squashed into main"));

    // A session whose issue is closed already (by hand, or by GitHub for a merged pull):
    // nothing is written twice.
    env.orchestra(&["tasks", "pick", "1", "--dispatch", "--agent", "cat"])
        .ok();
    let label = "fix-the-login-redirect";
    let wt = env.worktree_path(label);
    commit_file(&wt, "login.txt", "fixed\n", "Fix the login");
    issues.control(json!({"repo": "me/app", "issue": {"number": 1, "state": "closed"}}));
    let before = issues.writes().len();
    let merged = env.orchestra(&["merge", label, "--yes"]).ok();
    assert!(
        merged.stdout.contains("issue #1 is closed already"),
        "{}",
        merged.stdout
    );
    assert_eq!(issues.writes().len(), before, "no second close, no comment");
}

/// A pull request whose body says `Fixes #1`, merged on GitHub: GitHub closes #1; the
/// background read finds the merge, and `kill` then deletes the branch as merged and
/// writes nothing to #1 (no second close, no comment).
#[test]
fn an_issue_closed_by_its_pull_request_merged_on_github_is_not_closed_again() {
    let Some(issues) = Issues::start(world(json!([])), "") else {
        return;
    };
    let env = &issues.env;
    env.start_server(&[]);
    env.orchestra(&["tasks", "pick", "1", "--dispatch", "--agent", "cat"])
        .ok();
    let label = "fix-the-login-redirect";
    commit_file(
        &env.worktree_path(label),
        "login.txt",
        "fixed\n",
        "Fix the login",
    );
    env.orchestra(&["pr", label, "--yes"]).ok();
    let number = env.session(label)["pull_request"]["number"]
        .as_u64()
        .unwrap();
    let bodies: Vec<Value> = issues
        .writes()
        .into_iter()
        .filter(|(m, p, _)| m == "POST" && p == "/repos/me/app/pulls")
        .map(|(_, _, body)| body)
        .collect();
    assert!(
        bodies[0]["body"].as_str().unwrap().contains("\nFixes #1\n"),
        "{bodies:?}"
    );
    assert!(issues.listed().contains(&"1".to_string()));
    issues.control(json!({"repo": "me/app", "pull": {"number": number, "merged": true}}));
    // GitHub closed #1 with the merge.
    assert!(!issues.listed().contains(&"1".to_string()));
    let before = issues.writes().len();
    let read: Value =
        serde_json::from_str(&env.orchestra(&["pr", "--background", "--json"]).ok().stdout)
            .unwrap();
    assert_eq!(read["changed"], json!([label]), "{read}");
    let merged = format!("merged in #{number}");
    assert_eq!(env.session(label)["merged"].as_str(), Some(merged.as_str()));
    let killed = env.orchestra(&["kill", label]).ok();
    assert!(
        killed.stdout.contains(&merged) && killed.stdout.contains("issue #1 is closed already"),
        "{}",
        killed.stdout
    );
    assert!(!env.branches().iter().any(|b| b.contains(label)));
    assert_eq!(issues.writes().len(), before, "no second close, no comment");
}

#[test]
fn bad_issue_input_is_refused_in_one_line_and_changes_nothing() {
    let faults = json!([
        {"method": "GET", "path": "/repos/me/app/issues?", "status": 502, "times": 1},
        {"method": "GET", "path": "/repos/me/app/issues/2", "status": 403, "retry_after": "60", "times": 1},
        {"method": "GET", "path": "/repos/me/app/issues/3", "delay": 3, "times": 1},
    ]);
    let Some(issues) = Issues::start(world(faults), "") else {
        return;
    };
    let env = &issues.env;
    env.start_server(&[]);
    // The service failing: exit 1.
    let failed = env.orchestra(&["tasks"]).fails_with(1);
    assert!(
        failed.stderr.contains("GitHub failed (502"),
        "{}",
        failed.stderr
    );

    let cases: &[(&str, &str)] = &[
        ("99", "GitHub finds no issue #99 in me/app (404)"),
        ("5", "#5 of me/app is a pull request, not an issue"),
        ("4", "issue #4 of me/app is closed"),
        (
            "login",
            "\"login\" is not a task id (an issue's number, #N, or its URL)",
        ),
        ("#0", "is not a task id"),
    ];
    for (id, said) in cases {
        let refused = env
            .orchestra(&["tasks", "pick", id, "--dispatch", "--agent", "cat"])
            .fails_with(2);
        assert!(refused.stderr.contains(said), "{id}: {}", refused.stderr);
        assert_eq!(
            refused.stderr.trim().lines().count(),
            1,
            "{}",
            refused.stderr
        );
    }
    // Someone GitHub cannot assign: refused before any session or change.
    issues.configure("pick_assignee = \"stranger\"\n");
    let refused = env
        .orchestra(&["tasks", "pick", "1", "--dispatch", "--agent", "cat"])
        .fails_with(2);
    assert!(
        refused
            .stderr
            .contains("GitHub cannot assign stranger to issues of me/app (404)"),
        "{}",
        refused.stderr
    );
    // A secondary rate limit and a slow answer are the service's: exit 1.
    issues.configure("timeout = \"1s\"\n");
    let limited = env.orchestra(&["tasks", "pick", "2"]).fails_with(1);
    assert!(
        limited
            .stderr
            .contains("GitHub is rate limiting (403) and asks to wait 60s"),
        "{}",
        limited.stderr
    );
    let slow = env
        .orchestra(&["tasks", "pick", "3", "--dispatch", "--agent", "cat"])
        .fails_with(1);
    assert!(
        slow.stderr.contains("did not answer within 1s"),
        "{}",
        slow.stderr
    );
    // A token GitHub refuses.
    issues.configure("");
    let mut bad = env.orchestra_command(&env.repo, &["tasks", "pick", "1"]);
    bad.env("GH_TOKEN", "ghp_wrong");
    let out = bad.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refused the token from GH_TOKEN (401"),
        "{stderr}"
    );

    assert!(env.list_json().is_empty(), "no session");
    assert!(
        !env.branches().iter().any(|b| b.starts_with("session/")),
        "{:?}",
        env.branches()
    );
    assert!(issues.writes().is_empty(), "{:?}", issues.writes());
    // The refused assignment changed nothing on the server: #1 is not in progress.
    let listed = env.orchestra(&["tasks", "--json"]).ok().stdout;
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["id"], "1");
    assert_eq!(listed[0]["status"], "open", "{listed}");
}

#[test]
fn a_repos_github_api_gets_no_token_for_the_issues_until_allowed() {
    let Some(mut issues) = Issues::start(world(json!([])), "") else {
        return;
    };
    issues
        .env
        .env
        .push(("ORCHESTRA_GITHUB_API".into(), String::new()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let hostile = format!("http://{}", listener.local_addr().unwrap());
    issues.configure(&format!("[github]\napi = \"{hostile}\"\n"));
    for args in [&["tasks"][..], &["tasks", "pick", "1"]] {
        let run = issues.env.orchestra(args).fails_with(2);
        assert!(
            run.stderr.contains("github.api") && run.stderr.contains("orchestra allow"),
            "{}",
            run.stderr
        );
    }
    assert!(
        listener.accept().is_err(),
        "the hostile address was connected to"
    );
    assert!(issues.requests().is_empty());
    issues.configure(&format!("[github]\napi = \"{}\"\n", issues.api.url()));
    issues.env.orchestra(&["allow"]).ok();
    let run = issues.env.orchestra(&["tasks"]).ok();
    assert!(
        run.stdout.contains("Fix the login redirect"),
        "{}",
        run.stdout
    );
}
