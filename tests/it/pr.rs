//! `orchestra pr`: a session's branch pushed with the real git to a bare repository on this
//! machine (the `origin` remote), and its pull request opened on our GitHub REST stand-in
//! (tests/fake-api/github.py): created as a draft with the commits in its body, updated
//! (not duplicated) by a second run, refused in one line with the right exit status, left
//! finishable after the push, and the token never anywhere but the Authorization header.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::harness::{
    bin, commit_file, git_in, require, stand_in_passes_its_own_tests, wait_until, which,
    write_script, Env, StandIn,
};

pub(crate) const TOKEN: &str = "ghp_s3cr3t_0rch3stra_pr_t0k3n";

/// A repo with a session `login` (two commits) and `origin` a bare repository at
/// `remote/me/app.git`, the stand-in serving `me/app` with `faults`; every git orchestra
/// runs goes through a wrapper that logs its argv.
pub(crate) struct World {
    pub(crate) env: Env,
    pub(crate) api: StandIn,
    bare: PathBuf,
    argv_log: PathBuf,
}

impl World {
    pub(crate) fn start(faults: Value) -> Option<World> {
        World::start_with(faults, json!([]))
    }

    /// [`World::start`] with pull requests the repository already has.
    fn start_with(faults: Value, pulls: Value) -> Option<World> {
        World::build(faults, pulls, None)
    }

    /// [`World::start`] with the tmux server started in the environment orchestra runs in
    /// (the stand-in's address, the token: a person who exported them before starting
    /// tmux), with ORCHESTRA_HOME and `vars` too, so what its popups run reaches the
    /// stand-in.
    pub(crate) fn start_serving(vars: &[(&str, &str)]) -> Option<World> {
        World::build(json!([]), json!([]), Some(vars))
    }

    fn build(faults: Value, pulls: Value, server: Option<&[(&str, &str)]>) -> Option<World> {
        if !require("python3", which("python3").is_some()) {
            return None;
        }
        let mut env = Env::new();
        let bare = env.root.join("remote/me/app.git");
        std::fs::create_dir_all(&bare).unwrap();
        git_in(&bare, &["init", "-q", "--bare", "-b", "main"]);
        let world = json!({
            "token": TOKEN,
            "repos": {"me/app": {"default_branch": "main", "git_dir": bare, "pulls": pulls}},
            "faults": faults,
        });
        let file = env.root.join("github-world.json");
        std::fs::write(&file, world.to_string()).unwrap();
        let api = StandIn::start_with(
            &env.root,
            "github.py",
            &[OsStr::new("--world"), file.as_os_str()],
        );
        let bin = env.root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let argv_log = env.root.join("git-argv.log");
        let git = which("git").expect("git");
        write_script(
            &bin.join("git"),
            &format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                argv_log.display(),
                git.display()
            ),
        );
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        env.env.push(("PATH".into(), path));
        env.env.push(("ORCHESTRA_GITHUB_API".into(), api.url()));
        env.env.push(("GH_TOKEN".into(), TOKEN.into()));
        env.env.push(("GITHUB_TOKEN".into(), String::new()));
        let server_env: Vec<(String, String)> = match server {
            None => Vec::new(),
            Some(vars) => [(
                "ORCHESTRA_HOME".to_string(),
                env.home.to_string_lossy().into_owned(),
            )]
            .into_iter()
            .chain(env.env.iter().cloned())
            .chain(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .collect(),
        };
        env.start_server(&server_env);
        env.dispatch_shell("login").ok();
        let wt = env.worktree_path("login");
        commit_file(
            &wt,
            "login.txt",
            "redirect fixed\n",
            "Fix the login redirect",
        );
        commit_file(&wt, "login_test.txt", "covered\n", "Test the redirect");
        Some(World {
            env,
            api,
            bare,
            argv_log,
        })
    }

    pub(crate) fn with_origin(self) -> World {
        self.env
            .git(&["remote", "add", "origin", &self.bare.to_string_lossy()]);
        self.env.git(&["push", "-q", "origin", "main"]);
        self
    }

    fn requests(&self) -> Vec<Value> {
        self.api.requests_json()
    }

    fn count(&self, method: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r["method"] == method)
            .count()
    }

    /// The tip of `branch` in the bare repository, if it has it.
    fn pushed(&self, branch: &str) -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&self.bare)
            .args([
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}"),
            ])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn pull_request(&self, label: &str) -> Value {
        self.env.session(label)["pull_request"].clone()
    }

    /// The token is nowhere it must not be: the stand-in's log, any file under the home,
    /// any argv of git orchestra ran, any process's command line, the tmux server's
    /// environment, any pane's screen, what was printed.
    pub(crate) fn assert_token_nowhere(&self, printed: &[&str]) {
        let log = std::fs::read_to_string(self.api_log()).unwrap_or_default();
        assert!(
            !log.is_empty() && !log.contains(TOKEN),
            "the stand-in logged the token"
        );
        for file in files_under(&self.env.home) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(TOKEN),
                "{} holds the token",
                file.display()
            );
        }
        let argv = std::fs::read_to_string(&self.argv_log).unwrap_or_default();
        assert!(
            argv.contains("push --set-upstream origin session/login"),
            "{argv}"
        );
        assert!(!argv.contains(TOKEN), "{argv}");
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
                assert!(
                    !cmdline.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                    "the token is on the command line of {}",
                    entry.path().display()
                );
            }
        }
        let panes = self.env.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]);
        assert!(!panes.trim().is_empty());
        for pane in panes.lines() {
            let screen = self
                .env
                .tmux(&["capture-pane", "-p", "-S", "-", "-t", pane]);
            assert!(!screen.contains(TOKEN), "the token is on {pane}:\n{screen}");
        }
        let tmux_env = self.env.tmux(&["show-environment", "-g"]);
        assert!(
            !tmux_env.contains(TOKEN),
            "the tmux environment holds the token"
        );
        for text in printed {
            assert!(!text.contains(TOKEN), "printed the token: {text}");
        }
    }

    fn api_log(&self) -> PathBuf {
        self.env.root.join("github-requests.jsonl")
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_draft_is_opened_with_the_commits_then_updated_not_duplicated() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    let first = env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        first
            .stdout
            .contains("opened draft pull request #1: https://"),
        "{}",
        first.stdout
    );
    let local = env.git(&["rev-parse", "session/login"]).trim().to_string();
    assert_eq!(
        world.pushed("session/login").as_deref(),
        Some(local.as_str())
    );
    let requests = world.requests();
    let methods: Vec<&str> = requests
        .iter()
        .filter_map(|r| r["method"].as_str())
        .collect();
    assert_eq!(methods, ["GET", "GET", "POST"], "{requests:?}");
    assert!(requests.iter().all(|r| r["auth"] == "ok"));
    assert_eq!(
        requests[1]["path"],
        "/repos/me/app/pulls?state=open&per_page=100&head=me:session/login"
    );
    let sent = &requests[2]["body"];
    assert_eq!(
        (&sent["head"], &sent["base"], &sent["draft"], &sent["title"]),
        (
            &json!("session/login"),
            &json!("main"),
            &json!(true),
            &json!("Fix the login redirect")
        )
    );
    let body = sent["body"].as_str().unwrap();
    assert!(
        body.contains("Fix the login redirect")
            && body.contains("Test the redirect")
            && body.contains("login_test.txt")
            && body.contains("2 file(s), +2 -0"),
        "{body}"
    );
    assert_eq!(world.pull_request("login")["number"], 1);

    // Again, unchanged: found and left alone; then with a new title: updated.
    let again = env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        again.stdout.contains("draft pull request #1 is up to date"),
        "{}",
        again.stdout
    );
    // A new title and, asked for, a new base (one the remote has).
    env.git(&["push", "-q", "origin", "main:release"]);
    let retitled = env
        .orchestra(&[
            "pr",
            "login",
            "--yes",
            "--title",
            "Login: no more loop",
            "--base",
            "release",
        ])
        .ok();
    assert!(
        retitled.stdout.contains("updated draft pull request #1"),
        "{}",
        retitled.stdout
    );
    assert_eq!(
        world.count("POST"),
        1,
        "a second pull request was asked for"
    );
    assert_eq!(world.count("PATCH"), 1);
    let patch = world
        .requests()
        .into_iter()
        .rfind(|r| r["method"] == "PATCH")
        .unwrap();
    assert_eq!(patch["path"], "/repos/me/app/pulls/1");
    assert_eq!(patch["body"]["title"], "Login: no more loop");
    assert_eq!(patch["body"]["base"], "release");
    world.assert_token_nowhere(&[
        &first.stdout,
        &first.stderr,
        &again.stderr,
        &retitled.stderr,
    ]);
}

#[test]
fn ready_opens_one_for_review_and_without_a_terminal_a_review_is_refused() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    let refused = env.orchestra(&["pr", "login"]).fails_with(2);
    assert!(refused.stderr.contains("pass --yes"), "{}", refused.stderr);
    assert!(world.requests().is_empty() && world.pushed("session/login").is_none());
    let run = env.orchestra(&["pr", "login", "--yes", "--ready"]).ok();
    assert!(
        run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );
    let post = world
        .requests()
        .into_iter()
        .find(|r| r["method"] == "POST")
        .unwrap();
    assert_eq!(post["body"]["draft"], false);
}

#[test]
fn a_refused_token_is_the_persons_to_fix_and_nothing_is_pushed() {
    let Some(mut world) = World::start(json!([])) else {
        return;
    };
    world = world.with_origin();
    world.env.env.push(("GH_TOKEN".into(), "ghp_wrong".into()));
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert!(
        run.stderr.contains("401") && run.stderr.contains("GH_TOKEN"),
        "{}",
        run.stderr
    );
    assert_eq!(world.pushed("session/login"), None);
    assert_eq!(world.requests().len(), 1);
    assert!(world.pull_request("login").is_null());
}

#[test]
fn a_rate_limit_after_the_push_says_so_and_a_second_run_finishes() {
    let faults = json!([{"method": "POST", "path": "/pulls", "status": 403, "retry_after": "60", "times": 1}]);
    let Some(world) = World::start(faults) else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    let run = env.orchestra(&["pr", "login", "--yes"]).fails_with(1);
    assert!(
        run.stderr.contains("rate limiting")
            && run.stderr.contains("60s")
            && run.stderr.contains("session/login is pushed")
            && run.stderr.contains("`orchestra pr login` again"),
        "{}",
        run.stderr
    );
    assert!(world.pushed("session/login").is_some());
    assert!(world.pull_request("login").is_null());
    let finished = env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        finished.stdout.contains("opened draft pull request #1"),
        "{}",
        finished.stdout
    );
    assert_eq!(world.count("POST"), 2);
    assert_eq!(world.pull_request("login")["number"], 1);
    world.assert_token_nowhere(&[&run.stderr, &finished.stderr]);
}

#[test]
fn a_failing_service_is_exit_1_in_one_line() {
    let faults = json!([{"method": "GET", "path": "/pulls", "status": 502, "times": 1}]);
    let Some(world) = World::start(faults) else {
        return;
    };
    let world = world.with_origin();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(1);
    assert!(
        run.stderr.contains("GitHub failed (502") && run.stderr.contains("is pushed"),
        "{}",
        run.stderr
    );
    assert_eq!(world.count("POST"), 0);
}

#[test]
fn a_token_github_forbids_the_pull_request_is_the_persons_to_fix_in_one_line() {
    // A plain 403, no retry-after, no rate limit named: the token lacks the permission.
    let faults = json!([{"method": "POST", "path": "/pulls", "status": 403, "times": 1,
        "answer": {"message": "Resource not accessible by personal access token",
                   "documentation_url": "https://docs.github.com/rest", "status": "403"}}]);
    let Some(world) = World::start(faults) else {
        return;
    };
    let world = world.with_origin();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("forbids")
            && run.stderr.contains("403 Resource not accessible")
            && run.stderr.contains("pull requests: write")
            && run.stderr.contains("is pushed"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("rate limit"), "{}", run.stderr);
    assert!(world.pull_request("login").is_null());
}

#[test]
fn an_answer_later_than_the_deadline_says_so_and_a_second_run_finds_what_it_made() {
    // The create arrives and is made, but its answer comes after the 30 s deadline.
    let faults = json!([{"method": "POST", "path": "/pulls", "delay": 33, "times": 1}]);
    let Some(world) = World::start(faults) else {
        return;
    };
    let world = world.with_origin();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(1);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("did not answer within 30s") && run.stderr.contains("is pushed"),
        "{}",
        run.stderr
    );
    assert!(world.pull_request("login").is_null());
    // The stand-in logs the create again once it has made it.
    assert!(
        wait_until(std::time::Duration::from_secs(20), || world.count("POST")
            == 2),
        "{:?}",
        world.requests()
    );
    let again = world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        again.stdout.contains("pull request #1") && !again.stdout.contains("opened"),
        "{}",
        again.stdout
    );
    assert_eq!(world.pull_request("login")["number"], 1);
}

#[test]
fn a_protected_branch_refused_by_the_remote_is_one_line_and_nothing_is_made() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    write_script(
        &world.bare.join("hooks/pre-receive"),
        "#!/bin/sh\necho 'session/* is protected: push to a fork' >&2\nexit 1\n",
    );
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(1);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("was rejected")
            && run.stderr.contains("session/login")
            && run.stderr.contains("pre-receive hook declined"),
        "{}",
        run.stderr
    );
    assert_eq!(world.pushed("session/login"), None);
    assert_eq!(world.count("POST"), 0);
    assert_eq!(world.requests().len(), 1, "only the repository was read");
    assert!(world.pull_request("login").is_null());
}

#[test]
fn a_rejected_push_is_exit_1_in_one_line_and_nothing_is_sent() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    // The remote's branch holds a commit the session's lacks.
    let other = world.env.root.join("other");
    git_in(
        &world.env.root,
        &["clone", "-q", &world.bare.to_string_lossy(), "other"],
    );
    git_in(&other, &["checkout", "-q", "-b", "session/login"]);
    commit_file(&other, "theirs.txt", "theirs\n", "Someone else's commit");
    git_in(&other, &["push", "-q", "origin", "session/login"]);
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(1);
    assert!(
        run.stderr.contains("was rejected") && run.stderr.contains("session/login"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("hint:"), "{}", run.stderr);
    assert_eq!(world.count("POST"), 0);
    assert_eq!(world.requests().len(), 1, "only the repository was read");
}

#[test]
fn one_opened_meanwhile_is_updated_not_duplicated() {
    // Opened on the web already, but the first look finds none (a stale list): the create
    // is told one exists, and that one is found and updated.
    let faults =
        json!([{"method": "GET", "path": "/pulls", "status": 200, "answer": [], "times": 1}]);
    let pulls =
        json!([{"head": "session/login", "base": "main", "title": "by hand", "draft": true}]);
    let Some(world) = World::start_with(faults, pulls) else {
        return;
    };
    let world = world.with_origin();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        run.stdout.contains("updated draft pull request #1"),
        "{}",
        run.stdout
    );
    let methods: Vec<String> = world
        .requests()
        .iter()
        .filter_map(|r| r["method"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        methods,
        ["GET", "GET", "POST", "GET", "PATCH"],
        "{methods:?}"
    );
    assert_eq!(world.pull_request("login")["number"], 1);
}

#[test]
fn without_a_token_nothing_is_pushed_and_gh_gives_one() {
    let Some(mut world) = World::start(json!([])) else {
        return;
    };
    world = world.with_origin();
    world.env.env.push(("GH_TOKEN".into(), String::new()));
    // No gh on this PATH: the wrapper folder first, then only the system's folders.
    let gh = world.env.root.join("bin/gh");
    let run = world.env.orchestra(&["pr", "login", "--yes"]);
    if which("gh").is_none() {
        let run = run.fails_with(2);
        assert!(
            run.stderr.contains("no GitHub token") && run.stderr.contains("GH_TOKEN"),
            "{}",
            run.stderr
        );
        assert!(world.requests().is_empty());
        assert_eq!(world.pushed("session/login"), None);
    }
    // gh signed in: its token is used, and given to nobody else.
    write_script(
        &gh,
        &format!("#!/bin/sh\n[ \"$*\" = 'auth token' ] && echo {TOKEN}\n"),
    );
    let run = world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        run.stdout.contains("opened draft pull request #1"),
        "{}",
        run.stdout
    );
    world.assert_token_nowhere(&[&run.stdout, &run.stderr]);
}

#[test]
fn a_remote_with_no_github_address_needs_the_api_configured() {
    let Some(mut world) = World::start(json!([])) else {
        return;
    };
    world = world.with_origin();
    let url = world.api.url();
    world
        .env
        .env
        .push(("ORCHESTRA_GITHUB_API".into(), String::new()));
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert!(
        run.stderr.contains("not on a GitHub host") && run.stderr.contains("[github]"),
        "{}",
        run.stderr
    );
    assert!(world.requests().is_empty());
    assert_eq!(world.pushed("session/login"), None);
    // The repo's orchestra.toml names it: the token goes there once the person allowed it.
    std::fs::write(
        world.env.repo.join("orchestra.toml"),
        format!("[github]\napi = \"{url}\"\n"),
    )
    .unwrap();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert!(
        run.stderr.contains("github.api") && run.stderr.contains("orchestra allow"),
        "{}",
        run.stderr
    );
    assert!(world.requests().is_empty());
    world.env.orchestra(&["allow"]).ok();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).ok();
    assert!(
        run.stdout.contains("opened draft pull request #1"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_repository_github_does_not_show_is_the_persons_to_fix() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    std::fs::write(
        world.env.repo.join("orchestra.toml"),
        "[github]\nrepo = \"me/elsewhere\"\n",
    )
    .unwrap();
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert!(
        run.stderr.contains("no repository me/elsewhere") && run.stderr.contains("404"),
        "{}",
        run.stderr
    );
    assert_eq!(world.pushed("session/login"), None);
}

#[test]
fn a_missing_base_is_the_persons_to_fix() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    let run = world
        .env
        .orchestra(&["pr", "login", "--yes", "--base", "nowhere"])
        .fails_with(2);
    assert!(
        run.stderr.contains("no such base branch") && run.stderr.contains("--base"),
        "{}",
        run.stderr
    );
}

#[test]
fn without_a_remote_nothing_changes() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let run = world.env.orchestra(&["pr", "login", "--yes"]).fails_with(2);
    assert!(
        run.stderr.contains("no remote") && run.stderr.contains("git remote add"),
        "{}",
        run.stderr
    );
    assert!(world.requests().is_empty());
    assert_eq!(world.pushed("session/login"), None);
    assert!(world.pull_request("login").is_null());
}

/// `orchestra pr login` on a real terminal (a tmux window) with `editor` as $EDITOR: its
/// exit status and what it printed.
fn pr_on_a_terminal(world: &World, editor: &str) -> (i32, String) {
    let root = &world.env.root;
    write_script(&root.join("editor.sh"), &format!("#!/bin/sh\n{editor}\n"));
    let out = root.join("pr-terminal.out");
    let rc = root.join("pr-terminal.rc");
    let _ = std::fs::remove_file(&rc);
    let mut script = String::from("#!/bin/sh\n");
    for (key, value) in &world.env.env {
        script.push_str(&format!("export {key}='{value}'\n"));
    }
    script.push_str(&format!(
        "export EDITOR='{}' VISUAL=''\n'{}' pr login > '{}' 2>&1\necho $? > '{}'\n",
        root.join("editor.sh").display(),
        bin(),
        out.display(),
        rc.display()
    ));
    write_script(&root.join("pr-terminal.sh"), &script);
    world
        .env
        .run_in_window(&root.join("pr-terminal.sh").to_string_lossy());
    assert!(
        wait_until(std::time::Duration::from_secs(30), || rc.exists()
            && std::fs::read_to_string(&rc).is_ok_and(|t| t.ends_with('\n'))),
        "pr on the terminal did not finish"
    );
    let code = std::fs::read_to_string(&rc)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (code, std::fs::read_to_string(&out).unwrap_or_default())
}

#[test]
fn on_a_terminal_the_person_edits_the_draft_first_or_gives_it_up() {
    let Some(world) = World::start(json!([])) else {
        return;
    };
    let world = world.with_origin();
    // Emptied: nothing pushed, nothing sent but the repository's read.
    let (code, printed) = pr_on_a_terminal(&world, r#": > "$1""#);
    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("nothing was pushed or sent"), "{printed}");
    assert_eq!(world.pushed("session/login"), None);
    assert_eq!(world.count("POST"), 0);
    // The title line rewritten, the drafted body kept: that is what is sent.
    let (code, printed) = pr_on_a_terminal(
        &world,
        r#"grep -q '## Commits' "$1" || exit 3; sed -i '1s/.*/Login: edited by hand/' "$1""#,
    );
    assert_eq!(code, 0, "{printed}");
    let post = world
        .requests()
        .into_iter()
        .find(|r| r["method"] == "POST")
        .unwrap();
    assert_eq!(post["body"]["title"], "Login: edited by hand");
    assert!(post["body"]["body"]
        .as_str()
        .unwrap()
        .contains("Test the redirect"));
    // The draft file went with the edit.
    assert!(files_under(&world.env.home)
        .iter()
        .all(|f| !f.ends_with("PULL_REQUEST_EDITMSG.md")));
}

#[test]
fn the_github_stand_in_passes_its_own_tests() {
    stand_in_passes_its_own_tests("test_github.py");
}
