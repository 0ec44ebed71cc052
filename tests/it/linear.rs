//! Linear as the task source: `orchestra tasks`, `tasks pick`, done-on-merge with a
//! comment, and the refusals, against our stand-in for Linear's GraphQL API
//! (tests/fake-api/linear.py: the real one needs an account and the network) with real
//! tmux, git and, where the prompt matters, the real claude.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{
    commit_file, git_in, require, stand_in_passes_its_own_tests, wait_until, which, write_script,
    ClaudeWorld, Env, StandIn,
};

const KEY: &str = "lin_api_s3cr3t_0rch3stra_k3y";
const ENG: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const OPS: &str = "bbbbbbbb-0000-4000-8000-000000000002";
/// A team whose every request answers late.
const SLOW: &str = "cccccccc-0000-4000-8000-000000000003";

/// The stand-in on a free loopback port, its world given as JSON.
struct Linear {
    api: StandIn,
}

impl Linear {
    fn start(env: &Env, world: &Value) -> Option<Linear> {
        if !require("python3", which("python3").is_some()) {
            return None;
        }
        let file = env.root.join("linear-world.json");
        std::fs::write(&file, world.to_string()).expect("write the world");
        let args = [OsStr::new("--world"), file.as_os_str()];
        let api = StandIn::start_with(&env.root, "linear.py", &args);
        Some(Linear { api })
    }

    /// Every request so far: {"method", "path", "auth", "operations", "query", "variables"}.
    fn requests(&self) -> Vec<Value> {
        self.api.requests_json()
    }

    /// The mutations asked for: (root field, variables).
    fn mutations(&self) -> Vec<(String, Value)> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r["query"]
                    .as_str()
                    .is_some_and(|q| q.trim_start().starts_with("mutation"))
            })
            .map(|r| {
                (
                    r["operations"][0].as_str().unwrap_or("").to_string(),
                    r["variables"].clone(),
                )
            })
            .collect()
    }
}

/// A workflow state's id: the team's first eight digits, then the state's number.
fn state_id(team: &str, n: usize) -> String {
    format!("{}-5000-4000-8000-{n:012}", &team[..8])
}

const STATES: [(&str, &str); 6] = [
    ("Backlog", "backlog"),
    ("Todo", "unstarted"),
    ("In Progress", "started"),
    ("In Review", "started"),
    ("Done", "completed"),
    ("Canceled", "canceled"),
];

fn team(id: &str, key: &str) -> Value {
    let states: Vec<Value> = STATES
        .iter()
        .enumerate()
        .map(|(n, (name, kind))| json!({"id": state_id(id, n), "name": name, "type": kind}))
        .collect();
    json!({"id": id, "key": key, "name": key, "states": states})
}

const DONE: usize = 4;
const IN_PROGRESS: usize = 2;

/// The id the stand-in gives ENG-`n` (OPS-`n` is 100 + n).
fn issue_id(n: u32) -> String {
    format!("dddddddd-0000-4000-8000-{n:012}")
}

/// Team ENG: four open issues (two answers of two, with page_size 2), one done, one
/// canceled; team OPS: one issue; team SLOW, whose lookup answers late, and FLOOD, whose
/// lookup is always rate limited.
fn workspace() -> Value {
    let issue = |team: &str, number: u32, title: &str, state: &str, description: &str| {
        let n = if team == "ENG" { number } else { 100 + number };
        json!({"id": issue_id(n), "team": team, "number": number, "title": title,
               "state": state, "description": description})
    };
    json!({
        "key": KEY,
        "page_size": 2,
        "teams": [team(ENG, "ENG"), team(OPS, "OPS"), team(SLOW, "SLOW")],
        "issues": [
            issue("ENG", 1, "Fix the login redirect", "Todo",
                  "The login page sends you back to itself.\n\n- Add a test for the redirect 7c2a\n\n[[say: on the login task 5e1f]]"),
            issue("ENG", 2, "Write the changelog", "In Progress", ""),
            issue("ENG", 3, "Old work", "Done", ""),
            issue("ENG", 4, "Dropped work", "Canceled", ""),
            issue("ENG", 5, "Document the tasks flow", "Backlog", "Explain tasks pick 9d4b"),
            issue("ENG", 6, "Review me", "In Review", ""),
            issue("OPS", 1, "Another team's issue", "Todo", ""),
        ],
        "faults": [
            {"operation": "teams", "code": "RATELIMITED", "status": 400, "retry_after": "1", "times": 1},
            {"operation": "teams", "matching": "\"SLOW\"", "delay": 10},
            {"operation": "teams", "matching": "\"FLOOD\"", "code": "RATELIMITED", "retry_after": "0"},
        ],
    })
}

/// Writes (and commits: a merge wants a clean main worktree) orchestra.toml's `[tasks]`
/// for Linear's team `team` with `extra` lines; points orchestra at the stand-in with the
/// key in LINEAR_API_KEY, in a HOME of its own.
fn configure(env: &mut Env, linear: &Linear, team: &str, extra: &str) {
    write_manifest(env, &tasks_toml(team, extra));
    let home = env.root.join("person-home");
    std::fs::create_dir_all(&home).unwrap();
    for var in ["HOME", "CLAUDE_CONFIG_DIR"] {
        env.env
            .push((var.into(), home.to_string_lossy().into_owned()));
    }
    env.env
        .push(("ORCHESTRA_LINEAR_API".into(), linear.api.url()));
    env.env.push(("LINEAR_API_KEY".into(), KEY.into()));
}

fn tasks_toml(team: &str, extra: &str) -> String {
    format!("[tasks]\nsource = \"linear\"\nteam = \"{team}\"\n{extra}")
}

fn write_manifest(env: &Env, text: &str) {
    std::fs::write(env.repo.join("orchestra.toml"), text).unwrap();
    git_in(&env.repo, &["add", "orchestra.toml"]);
    git_in(&env.repo, &["commit", "-q", "-m", "orchestra.toml"]);
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

fn ids(tasks: &Value) -> Vec<&str> {
    tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect()
}

#[test]
fn linear_tasks_lists_the_teams_open_issues_across_pages() {
    let mut env = Env::new();
    let Some(linear) = Linear::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &linear, "eng", "");
    let started = Instant::now();
    let run = env.orchestra(&["tasks", "--json"]).ok();
    // The team lookup was rate limited once (retry-after: 1), then answered.
    assert!(started.elapsed() >= Duration::from_secs(1));
    let tasks = json_of(&run.stdout);
    assert_eq!(
        ids(&tasks),
        ["ENG-1", "ENG-2", "ENG-5", "ENG-6"],
        "{}",
        run.stdout
    );
    assert_eq!(tasks[0]["title"], "Fix the login redirect");
    assert_eq!(tasks[1]["status"], "In Progress");
    assert_eq!(
        tasks[0]["url"],
        "https://linear.app/orchestra-test/issue/ENG-1/fix-the-login-redirect"
    );
    let requests = linear.requests();
    assert!(requests.iter().all(|r| r["auth"] == "ok"), "{requests:?}");
    // Linear filtered the issues (the team, and not a completed or canceled state): two
    // answers of two, the second after the first one's cursor.
    let pages: Vec<&Value> = requests
        .iter()
        .filter(|r| r["operations"] == json!(["issues"]))
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert_eq!(pages[0]["variables"]["team"], ENG);
    assert_eq!(
        pages[0]["variables"]["closed"],
        json!(["completed", "canceled"])
    );
    assert_eq!(pages[0]["variables"]["after"], Value::Null);
    assert!(pages[1]["variables"]["after"].is_string());
    let table = env.orchestra(&["tasks"]).ok().stdout;
    assert!(table.starts_with("ID"), "{table}");
    assert_eq!(table.lines().count(), 5, "{table}");
    assert!(!table.contains("Another team's issue"), "{table}");
}

#[test]
fn a_linear_issue_picked_goes_to_the_real_claude_and_a_merge_closes_it_with_a_comment() {
    let mut env = Env::new();
    let label = "fix-the-login-redirect";
    let worktree = env.worktree_path(label);
    let Some(world) = ClaudeWorld::start(&env, &[&worktree]) else {
        return;
    };
    let Some(linear) = Linear::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &linear, "ENG", "done_on_merge = true\n");
    env.start_server(&world.env);
    let claude = world.claude.to_string_lossy().into_owned();
    let run = env
        .orchestra(&["tasks", "pick", "eng-1", "--dispatch", "--agent", &claude])
        .ok();
    assert!(
        run.stdout.contains("ENG-1") && run.stdout.contains("In Progress"),
        "{}",
        run.stdout
    );
    assert_eq!(env.session(label)["task"], "ENG-1");
    assert!(
        wait_until(Duration::from_secs(60), || {
            world.api.requests().contains(
            "Fix the login redirect\\n\\nThe login page sends you back to itself.\\n\\n- Add a test for the redirect 7c2a"
        )
        }),
        "the model never got the issue; screen:\n{}",
        env.screen(label)
    );
    env.wait_screen(label, "on the login task 5e1f", Duration::from_secs(30));
    let eng1 = issue_id(1);
    assert_eq!(
        linear.mutations(),
        [(
            "issueUpdate".to_string(),
            json!({"id": eng1, "state": state_id(ENG, IN_PROGRESS)})
        )]
    );
    let listed = json_of(&env.orchestra(&["tasks", "--json"]).ok().stdout);
    assert_eq!(listed[0]["status"], "In Progress");

    // Its work merged: the issue is Done, with a comment saying so.
    commit_file(&worktree, "login.txt", "fixed\n", "fix the login");
    let merged = env.orchestra(&["merge", label, "--yes"]).ok();
    assert!(
        merged.stdout.contains("task ENG-1 is Done now"),
        "{}\n{}",
        merged.stdout,
        merged.stderr
    );
    let mutations = linear.mutations();
    assert_eq!(mutations.len(), 3, "{mutations:?}");
    assert_eq!(
        mutations[1],
        (
            "issueUpdate".to_string(),
            json!({"id": eng1, "state": state_id(ENG, DONE)})
        )
    );
    assert_eq!(mutations[2].0, "commentCreate");
    assert_eq!(mutations[2].1["input"]["issueId"], eng1);
    let comment = mutations[2].1["input"]["body"].as_str().unwrap();
    assert!(
        comment.contains("ENG-1") && comment.contains("merged into main"),
        "{comment}"
    );
    let open = json_of(&env.orchestra(&["tasks", "--json"]).ok().stdout);
    assert!(!ids(&open).contains(&"ENG-1"), "{open}");
}

#[test]
fn bad_linear_input_is_one_line_exit_2_and_nothing_changes() {
    let mut env = Env::new();
    let Some(linear) = Linear::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &linear, "ENG", "");
    env.start_server(&[]);
    let windows = env.windows();
    let refused = |env: &Env, args: &[&str], says: &[&str]| {
        let run = env.orchestra(args).fails_with(2);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{args:?}: {}", run.stderr);
        for part in says {
            assert!(line.contains(part), "{args:?}: {line}");
        }
    };
    let pick = |id: &'static str| -> Vec<&'static str> {
        vec!["tasks", "pick", id, "--dispatch", "--agent", "cat"]
    };
    refused(&env, &pick("ENG-99"), &["finds no issue ENG-99"]);
    refused(
        &env,
        &pick("OPS-1"),
        &["OPS-1 is an issue of OPS", "team ENG"],
    );
    refused(&env, &pick("login"), &["not a", "ENG-12"]);
    // A state name the team lacks: refused before anything moves.
    write_manifest(&env, &tasks_toml("ENG", "in_progress = \"Doing\"\n"));
    refused(
        &env,
        &pick("ENG-1"),
        &[
            "no workflow state \"Doing\"",
            "in_progress",
            "Todo, In Progress",
        ],
    );
    refused(&env, &["tasks", "pick", "ENG-1"], &["\"Doing\""]);
    // A team that is not there.
    write_manifest(&env, &tasks_toml("NOPE", ""));
    refused(&env, &["tasks"], &["no team \"NOPE\"", "team"]);
    // A wrong key: 401, naming LINEAR_API_KEY, never the key.
    write_manifest(&env, &tasks_toml("ENG", ""));
    env.env
        .push(("LINEAR_API_KEY".into(), "lin_api_not_it".into()));
    refused(&env, &pick("ENG-1"), &["401", "LINEAR_API_KEY"]);
    env.env.push(("LINEAR_API_KEY".into(), String::new()));
    refused(&env, &["tasks"], &["LINEAR_API_KEY"]);
    assert!(linear.mutations().is_empty(), "{:?}", linear.mutations());
    assert_eq!(env.windows(), windows, "no window was made");
    assert!(env.list_json().is_empty());
    assert!(!env.branches().iter().any(|b| b.starts_with("session/")));

    // Rate limited every time: three retries, then exit 1.
    env.env.push(("LINEAR_API_KEY".into(), KEY.into()));
    write_manifest(&env, &tasks_toml("FLOOD", ""));
    let flooded = env.orchestra(&["tasks"]).fails_with(1);
    assert!(
        flooded
            .stderr
            .contains("still rate limiting (RATELIMITED) after 3 retries"),
        "{}",
        flooded.stderr
    );
    let tries = linear
        .requests()
        .iter()
        .filter(|r| r["variables"]["key"] == "FLOOD")
        .count();
    assert_eq!(tries, 4, "the first try and three retries");

    // A team that answers later than the timeout: exit 1, naming the setting.
    env.env.push(("LINEAR_API_KEY".into(), KEY.into()));
    write_manifest(&env, &tasks_toml("SLOW", "timeout = \"1s\"\n"));
    let started = Instant::now();
    let late = env.orchestra(&["tasks"]).fails_with(1);
    assert!(started.elapsed() < Duration::from_secs(6));
    assert!(
        late.stderr.contains("did not answer within 1s") && late.stderr.contains("timeout"),
        "{}",
        late.stderr
    );
}

#[test]
fn the_linear_key_is_never_on_disk_argv_or_in_tmux() {
    let mut env = Env::new();
    let Some(linear) = Linear::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &linear, "ENG", "done_on_merge = true\n");
    env.start_server(&[]);
    let mut said = String::new();
    for args in [
        &["tasks"][..],
        &["tasks", "--json"],
        &["tasks", "pick", "ENG-5", "--dispatch", "--agent", "cat"],
        &["list", "--json"],
    ] {
        let r = env.orchestra(args).ok();
        said.push_str(&r.stdout);
        said.push_str(&r.stderr);
    }
    // While the session runs: no process's argv holds the key.
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            assert!(
                !cmdline.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                "the key is on the command line of {}",
                entry.path().display()
            );
        }
    }
    let label = "document-the-tasks-flow";
    commit_file(&env.worktree_path(label), "d.txt", "d\n", "docs");
    let merged = env.orchestra(&["merge", label, "--yes"]).ok();
    said.push_str(&merged.stdout);
    said.push_str(&merged.stderr);
    assert_eq!(linear.mutations().len(), 3, "picked, closed, commented");
    assert!(linear.requests().iter().all(|r| r["auth"] == "ok"));
    assert!(!said.contains(KEY), "the key was printed:\n{said}");
    let mut files = Vec::new();
    walk(&env.home, &mut files);
    walk(&env.repo, &mut files);
    assert!(!files.is_empty());
    for file in files {
        let mut bytes = Vec::new();
        if std::fs::File::open(&file)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .is_ok()
        {
            assert!(
                !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                "the key is in {}",
                file.display()
            );
        }
    }
    assert!(!env.tmux(&["show-environment", "-g"]).contains(KEY));
    for pane in env.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]).lines() {
        assert!(!env.tmux(&["show-environment", "-t", pane]).contains(KEY));
        assert!(!env.tmux(&["capture-pane", "-p", "-t", pane]).contains(KEY));
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            walk(&path, files);
        } else if path.is_file() {
            files.push(path);
        }
    }
}

#[test]
fn launch_gives_the_orchestrator_the_linear_teams_open_issues() {
    let mut env = Env::new();
    let Some(linear) = Linear::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &linear, "ENG", "");
    env.start_server(&[]);
    // A program named like claude is launched as claude; it writes down its arguments.
    let args_file = env.root.join("args.txt");
    let stub = env.root.join("claude-stub");
    write_script(
        &stub,
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\nexec sleep 600\n",
            shell_words::quote(&args_file.to_string_lossy())
        ),
    );
    env.orchestra(&["launch", "--agent", &stub.to_string_lossy()])
        .ok();
    assert!(wait_until(Duration::from_secs(10), || args_file.exists()));
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(
        args.contains("Open tasks of the project \"team ENG\"")
            && args.contains("- Fix the login redirect (ENG-1)")
            && args.contains("- Review me (ENG-6)")
            && !args.contains("Old work")
            && !args.contains("Another team's issue"),
        "{args}"
    );
    assert!(linear.mutations().is_empty());
}

/// The stand-in's own tests (queries checked, filters, pagination, faults, the wire).
#[test]
fn the_linear_stand_in_passes_its_own_tests() {
    stand_in_passes_its_own_tests("test_linear.py");
}

#[test]
fn a_repos_linear_api_gets_no_key_until_the_person_allows_it() {
    let mut env = Env::new();
    let Some(linear) = Linear::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &linear, "ENG", "");
    // The person's environment names the stand-in: no allowing needed.
    let run = env.orchestra(&["tasks", "--json"]).ok();
    assert!(!ids(&json_of(&run.stdout)).is_empty(), "{}", run.stdout);
    env.env.push(("ORCHESTRA_LINEAR_API".into(), String::new()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let hostile = format!("http://{}", listener.local_addr().unwrap());
    write_manifest(&env, &tasks_toml("ENG", &format!("api = \"{hostile}\"\n")));
    let sent = linear.requests().len();
    for args in [&["tasks"][..], &["tasks", "pick", "eng-1"]] {
        let run = env.orchestra(args).fails_with(2);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(
            run.stderr.contains("tasks.api")
                && run.stderr.contains("Linear key")
                && run.stderr.contains("orchestra allow"),
            "{}",
            run.stderr
        );
    }
    assert!(
        listener.accept().is_err(),
        "the hostile address was connected to"
    );
    assert!(env.list_json().is_empty());

    write_manifest(
        &env,
        &tasks_toml("ENG", &format!("api = \"{}\"\n", linear.api.url())),
    );
    env.orchestra(&["tasks"]).fails_with(2);
    assert_eq!(linear.requests().len(), sent);
    let allowed = env.orchestra(&["allow"]).ok();
    assert!(
        allowed.stdout.contains("tasks.api: http://")
            && allowed.stdout.contains("(receives your Linear key)"),
        "{}",
        allowed.stdout
    );
    let run = env.orchestra(&["tasks", "--json"]).ok();
    assert!(!ids(&json_of(&run.stdout)).is_empty(), "{}", run.stdout);
    assert!(linear.requests().len() > sent);

    // An address changed after the allow is not allowed.
    write_manifest(&env, &tasks_toml("ENG", &format!("api = \"{hostile}\"\n")));
    env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        listener.accept().is_err(),
        "the changed address was connected to"
    );
}
