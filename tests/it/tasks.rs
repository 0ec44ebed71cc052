//! Task pick-up from Notion: `orchestra tasks`, `tasks pick`, done-on-merge, launch's first
//! message and the Tasks… menu, against our Notion stand-in (tests/fake-api/notion.py: the
//! real API needs an account and the network) with real tmux, git and, where the prompt
//! matters, the real claude.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{
    commit_file, git_in, require, stand_in_passes_its_own_tests, wait_until, which, write_script,
    ClaudeWorld, Env, Person, StandIn,
};

const TOKEN: &str = "ntn_s3cr3t_0rch3stra_t0k3n";
const PROJECTS: &str = "11111111-1111-1111-1111-111111111111";
const TASKS: &str = "22222222-2222-2222-2222-222222222222";
/// A tasks data source every request to which answers late.
const SLOW_TASKS: &str = "33333333-3333-3333-3333-333333333333";
/// One whose schema answers 429 (Retry-After: 1) once, then works.
const BUSY_TASKS: &str = "44444444-4444-4444-4444-444444444444";
/// One that answers 429 every time.
const FLOODED_TASKS: &str = "55555555-5555-5555-5555-555555555555";
const PROJECT: &str = "aaaaaaaa-0000-0000-0000-000000000001";
const OTHER_PROJECT: &str = "aaaaaaaa-0000-0000-0000-000000000002";
const LOGIN: &str = "bbbbbbbb-0000-0000-0000-000000000001";
const CHANGELOG: &str = "bbbbbbbb-0000-0000-0000-000000000002";
const OLD: &str = "bbbbbbbb-0000-0000-0000-000000000003";
const ELSEWHERE: &str = "bbbbbbbb-0000-0000-0000-000000000004";
const DOCS: &str = "bbbbbbbb-0000-0000-0000-000000000005";
/// A task whose close on merge fails (its second PATCH answers 500).
const FLAKY: &str = "bbbbbbbb-0000-0000-0000-000000000006";

/// The Notion stand-in on a free loopback port, its world given as JSON.
struct Notion {
    api: StandIn,
}

impl Notion {
    fn start(env: &Env, world: &Value) -> Option<Notion> {
        if !require("python3", which("python3").is_some()) {
            return None;
        }
        let file = env.root.join("notion-world.json");
        std::fs::write(&file, world.to_string()).expect("write the world");
        let args = [OsStr::new("--world"), file.as_os_str()];
        let api = StandIn::start_with(&env.root, "notion.py", &args);
        Some(Notion { api })
    }

    fn url(&self) -> String {
        self.api.url()
    }

    /// Every request so far: {"method", "path", "auth", "version", "body"}.
    fn requests(&self) -> Vec<Value> {
        self.api.requests_json()
    }

    fn patches(&self) -> Vec<(String, Value)> {
        self.requests()
            .into_iter()
            .filter(|r| r["method"] == "PATCH")
            .map(|r| {
                (
                    r["path"].as_str().unwrap_or("").to_string(),
                    r["body"].clone(),
                )
            })
            .collect()
    }
}

fn task(id: &str, title: &str, status: &str, project: &str, blocks: Value) -> Value {
    json!({"id": id, "data_source": TASKS, "title": title, "status": status,
           "relation": [project], "blocks": blocks})
}

/// Projects (the test repo's folder is named "repo", the default project title) and
/// tasks: three open ones of "repo" (two answers of two), one done, one of another project.
fn workspace() -> Value {
    let status = json!({"type": "status", "status": {"options": [
        {"name": "Not started"}, {"name": "In progress"}, {"name": "Done"}]}});
    let tasks_schema = json!({"properties": {
        "Task name": {"type": "title"},
        "Status": status,
        "Assignee": {"type": "relation", "relation": {"data_source_id": "99999999999999999999999999999999"}},
        "Project": {"type": "relation", "relation": {"data_source_id": PROJECTS}},
    }});
    json!({
        "token": TOKEN,
        "page_size": 2,
        "data_sources": {
            PROJECTS: {"properties": {"Project name": {"type": "title"}}},
            TASKS: tasks_schema,
            SLOW_TASKS: tasks_schema,
            BUSY_TASKS: tasks_schema,
            FLOODED_TASKS: tasks_schema,
        },
        "pages": [
            {"id": PROJECT, "data_source": PROJECTS, "title": "repo"},
            {"id": OTHER_PROJECT, "data_source": PROJECTS, "title": "elsewhere"},
            task(LOGIN, "Fix the login redirect", "Not started", PROJECT, json!([
                {"type": "paragraph", "text": "The login page sends you back to itself. [[say: on the login task 5e1f]]"},
                {"type": "bulleted_list_item", "text": "Add a test for the redirect",
                 "children": [{"type": "paragraph", "text": "nested detail 7c2a"}]},
            ])),
            task(CHANGELOG, "Write the changelog", "In progress", PROJECT, json!([])),
            task(OLD, "Old work", "Done", PROJECT, json!([])),
            task(ELSEWHERE, "Another project's task", "Not started", OTHER_PROJECT, json!([])),
            task(DOCS, "Document the tasks flow", "Not started", PROJECT, json!([
                {"type": "paragraph", "text": "Explain tasks pick in the docs 9d4b"}])),
            task(FLAKY, "Close me on merge", "Not started", OTHER_PROJECT, json!([])),
        ],
        "faults": [
            {"path": format!("/v1/data_sources/{SLOW_TASKS}"), "delay": 10},
            {"method": "GET", "path": format!("/v1/data_sources/{BUSY_TASKS}"), "status": 429, "retry_after": "1", "times": 1},
            {"path": format!("/v1/data_sources/{FLOODED_TASKS}"), "status": 429, "retry_after": "0"},
            {"method": "PATCH", "path": format!("/v1/pages/{FLAKY}"), "status": 500, "after": 1},
        ],
    })
}

/// Writes (and commits: a merge wants a clean main worktree) orchestra.toml with `[tasks]`
/// naming `tasks` and `extra` lines; points orchestra at the stand-in with the token in
/// NOTION_TOKEN, in a HOME of its own (no Claude config of the machine's is read).
fn configure(env: &mut Env, notion: &Notion, tasks: &str, extra: &str) {
    write_manifest(
        env,
        &tasks_toml(tasks, &format!("source = \"notion\"\n{extra}")),
    );
    private_home(env);
    env.env.push(("NOTION_API_URL".into(), notion.url()));
    env.env.push(("NOTION_TOKEN".into(), TOKEN.into()));
}

fn write_manifest(env: &Env, text: &str) {
    std::fs::write(env.repo.join("orchestra.toml"), text).unwrap();
    git_in(&env.repo, &["add", "orchestra.toml"]);
    git_in(&env.repo, &["commit", "-q", "-m", "orchestra.toml"]);
}

/// A HOME (and Claude config folder) of the test's own, empty.
fn private_home(env: &mut Env) -> PathBuf {
    let home = env.root.join("person-home");
    std::fs::create_dir_all(&home).unwrap();
    for var in ["HOME", "CLAUDE_CONFIG_DIR"] {
        env.env
            .push((var.into(), home.to_string_lossy().into_owned()));
    }
    home
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

#[test]
fn tasks_lists_the_projects_open_tasks_across_pages_filtered_by_notion() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "");
    let run = env.orchestra(&["tasks", "--json"]).ok();
    let tasks = json_of(&run.stdout);
    let ids: Vec<&str> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [LOGIN, CHANGELOG, DOCS], "{}", run.stdout);
    assert_eq!(tasks[0]["title"], "Fix the login redirect");
    assert_eq!(tasks[1]["status"], "In progress");
    assert!(tasks[0]["url"]
        .as_str()
        .unwrap()
        .ends_with(&LOGIN.replace('-', "")));

    let requests = notion.requests();
    assert!(requests
        .iter()
        .all(|r| r["version"] == "2025-09-03" && r["auth"] == "ok"));
    // The project was found by its title (the repo folder's name) in the projects.
    assert!(requests.iter().any(
        |r| r["path"] == format!("/v1/data_sources/{PROJECTS}/query")
            && r["body"]["filter"]
                == json!({"property": "Project name", "title": {"equals": "repo"}})
    ));
    // Notion filtered the tasks: the project's relation, and not done; two answers of two.
    let queries: Vec<&Value> = requests
        .iter()
        .filter(|r| r["path"] == format!("/v1/data_sources/{TASKS}/query"))
        .collect();
    assert_eq!(queries.len(), 2, "{queries:?}");
    assert_eq!(
        queries[0]["body"]["filter"],
        json!({"and": [
            {"property": "Project", "relation": {"contains": PROJECT}},
            {"property": "Status", "status": {"does_not_equal": "Done"}},
        ]})
    );
    assert_eq!(queries[0]["body"].get("start_cursor"), None);
    assert_eq!(queries[1]["body"]["start_cursor"], DOCS);

    // The table: a line per task.
    let table = env.orchestra(&["tasks"]).ok().stdout;
    assert!(table.starts_with("ID"), "{table}");
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(table.contains("Document the tasks flow"), "{table}");

    // The project named by its page id instead: no title lookup.
    write_manifest(
        &env,
        &tasks_toml(
            TASKS,
            &format!("project = \"{}\"\n", OTHER_PROJECT.replace('-', "")),
        ),
    );
    let before = notion.requests().len();
    let other = json_of(&env.orchestra(&["tasks", "--json"]).ok().stdout);
    assert_eq!(other[0]["id"], ELSEWHERE, "{other}");
    assert!(notion.requests()[before..]
        .iter()
        .all(|r| r["path"] != format!("/v1/data_sources/{PROJECTS}/query")));
}

#[test]
fn pick_moves_the_task_to_in_progress_with_one_patch() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "in_progress = \"In progress\"\n");
    env.start_server(&[]);
    let run = env.orchestra(&["tasks", "pick", LOGIN]).ok();
    assert!(
        run.stdout.contains("Fix the login redirect") && run.stdout.contains("In progress"),
        "{}",
        run.stdout
    );
    assert_eq!(
        notion.patches(),
        [(
            format!("/v1/pages/{LOGIN}"),
            json!({"properties": {"Status": {"status": {"name": "In progress"}}}})
        )]
    );
    let tasks = json_of(&env.orchestra(&["tasks", "--json"]).ok().stdout);
    assert_eq!(tasks[0]["status"], "In progress");
    // No --dispatch: no session.
    assert!(env.list_json().is_empty());

    // An id that is no task of the tasks data source, or none at all: exit 2, no PATCH.
    let project = env.orchestra(&["tasks", "pick", PROJECT]).fails_with(2);
    assert!(
        project.stderr.contains("is not a task of"),
        "{}",
        project.stderr
    );
    let missing = env
        .orchestra(&["tasks", "pick", "cccccccc-0000-0000-0000-000000000000"])
        .fails_with(2);
    assert!(missing.stderr.contains("404"), "{}", missing.stderr);
    let word = env.orchestra(&["tasks", "pick", "login"]).fails_with(2);
    assert!(word.stderr.contains("not a task id"), "{}", word.stderr);
    assert_eq!(notion.patches().len(), 1);
}

#[test]
fn pick_dispatch_starts_a_session_on_the_task_and_a_merge_closes_it() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "done_on_merge = true\n");
    env.start_server(&[]);
    // `cat` shows what it was given: the task's title and content, typed in.
    let run = env
        .orchestra(&["tasks", "pick", LOGIN, "--dispatch", "--agent", "cat"])
        .ok();
    let label = "fix-the-login-redirect";
    assert!(
        run.stdout.contains(&format!("dispatched {label}")),
        "{}",
        run.stdout
    );
    let session = env.session(label);
    assert_eq!(session["task"], LOGIN);
    let pane = session["pane"].as_str().unwrap().to_string();
    assert!(
        wait_until(Duration::from_secs(10), || {
            let screen = env.tmux(&["capture-pane", "-p", "-J", "-t", &pane]);
            screen.contains("Fix the login redirect")
                && screen.contains("The login page sends you back to itself")
                && screen.contains("- Add a test for the redirect")
                && screen.contains("nested detail 7c2a")
        }),
        "{}",
        env.tmux(&["capture-pane", "-p", "-t", &pane])
    );
    assert_eq!(
        notion.patches(),
        [(
            format!("/v1/pages/{LOGIN}"),
            json!({"properties": {"Status": {"status": {"name": "In progress"}}}})
        )]
    );
    // --label names the session; a label taken is refused before the tracker hears of it.
    let taken = env
        .orchestra(&[
            "tasks",
            "pick",
            DOCS,
            "--dispatch",
            "--agent",
            "cat",
            "--label",
            label,
        ])
        .fails_with(2);
    assert!(taken.stderr.contains("already used"), "{}", taken.stderr);
    assert_eq!(notion.patches().len(), 1);

    // Its work merged: the task is Done.
    let wt = env.worktree_path(label);
    commit_file(&wt, "login.txt", "fixed\n", "fix the login");
    let merged = env.orchestra(&["merge", label, "--yes"]).ok();
    assert!(
        merged.stdout.contains(&format!("task {LOGIN} is Done now")),
        "{}",
        merged.stdout
    );
    assert_eq!(
        notion.patches().last().unwrap(),
        &(
            format!("/v1/pages/{LOGIN}"),
            json!({"properties": {"Status": {"status": {"name": "Done"}}}})
        )
    );

    // A close that fails is reported and the merge stands.
    write_manifest(
        &env,
        &tasks_toml(TASKS, "project = \"elsewhere\"\ndone_on_merge = true\n"),
    );
    pick_to_cat(&env, FLAKY, "flaky");
    let wt = env.worktree_path("flaky");
    commit_file(&wt, "flaky.txt", "x\n", "flaky");
    let merged = env.orchestra(&["merge", "flaky", "--yes"]).ok();
    assert!(
        merged.stderr.contains("flaky is merged, but its task") && merged.stderr.contains("500"),
        "{}",
        merged.stderr
    );
    assert!(env
        .git(&["log", "-1", "--format=%s", "main"])
        .contains("flaky"));
    assert!(!env.branches().iter().any(|b| b == "session/flaky"));
}

#[test]
fn pick_dispatch_gives_the_real_claude_the_task_as_its_prompt() {
    let mut env = Env::new();
    let label = "document-the-tasks-flow";
    let worktree = env.worktree_path(label);
    let Some(world) = ClaudeWorld::start(&env, &[&worktree]) else {
        return;
    };
    let Some(notion) = Notion::start(&env, &world_with_marker()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "");
    env.start_server(&world.env);
    let claude = world.claude.to_string_lossy().into_owned();
    env.orchestra(&["tasks", "pick", DOCS, "--dispatch", "--agent", &claude])
        .ok();
    let session = env.session(label);
    assert_eq!(session["task"], DOCS);
    assert!(
        wait_until(Duration::from_secs(60), || world.api.requests().contains(
            "Document the tasks flow\\n\\nExplain tasks pick in the docs 9d4b"
        )),
        "the model never got the task; screen:\n{}",
        env.screen(label)
    );
    env.wait_screen(label, "documenting 41c8", Duration::from_secs(30));
    assert_eq!(notion.patches().len(), 1);
}

/// [`workspace`] with the docs task scripting the model's answer.
fn world_with_marker() -> Value {
    let mut w = workspace();
    for page in w["pages"].as_array_mut().unwrap() {
        if page["id"] == DOCS {
            page["blocks"] = json!([
                {"type": "paragraph", "text": "Explain tasks pick in the docs 9d4b"},
                {"type": "paragraph", "text": "[[say: documenting 41c8]]"}]);
        }
    }
    w
}

#[test]
fn launch_names_the_open_tasks_in_the_orchestrators_first_message() {
    let mut env = Env::new();
    let Some(world) = ClaudeWorld::start(&env, &[&env.repo]) else {
        return;
    };
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "");
    env.start_server(&world.env);
    let agent = format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    );
    env.orchestra(&["launch", "--agent", &agent]).ok();
    assert!(
        wait_until(Duration::from_secs(60), || {
            let sent = world.api.requests();
            sent.contains("Open tasks of the project")
                && sent.contains(&format!("Fix the login redirect ({LOGIN})"))
                && sent.contains(&format!("Document the tasks flow ({DOCS})"))
                && sent.contains("orchestra tasks pick <id> --dispatch")
        }),
        "the orchestrator's first message did not name the tasks:\n{}",
        world.api.requests()
    );
    assert!(
        !world.api.requests().contains("Old work"),
        "a done task was listed"
    );
    // Its instructions say how to pick one.
    assert!(world
        .api
        .requests()
        .contains("orchestra tasks pick ID --dispatch"));
}

#[test]
fn launch_puts_the_tasks_on_the_command_line_and_starts_without_them_when_notion_fails() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "");
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
    let agent = stub.to_string_lossy().into_owned();
    env.orchestra(&["launch", "--agent", &agent]).ok();
    assert!(wait_until(Duration::from_secs(10), || args_file.exists()));
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(args.contains("--append-system-prompt"), "{args}");
    assert!(
        args.contains(&format!("- Fix the login redirect ({LOGIN})"))
            && args.contains(&format!("- Write the changelog ({CHANGELOG})"))
            && !args.contains("Old work"),
        "{args}"
    );

    // Notion refuses: a note, and the orchestrator starts without the list.
    std::fs::remove_file(&args_file).unwrap();
    env.env.push(("NOTION_TOKEN".into(), "ntn_not_it".into()));
    let run = env.orchestra(&["launch", "--agent", &agent]).ok();
    assert!(
        run.stderr.contains("could not be read") && run.stderr.contains("401"),
        "{}",
        run.stderr
    );
    assert!(wait_until(Duration::from_secs(10), || args_file.exists()));
    assert!(!std::fs::read_to_string(&args_file)
        .unwrap()
        .contains("Open tasks"));

    // An agent with no first message: a note, and no request for nothing.
    let before = notion.requests().len();
    let generic = env.orchestra(&["launch", "--agent", "bash"]).ok();
    assert!(
        generic.stderr.contains("takes no first message"),
        "{}",
        generic.stderr
    );
    assert_eq!(notion.requests().len(), before);
}

#[test]
fn without_a_task_source_nothing_asks_notion_anything() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    // The stand-in and a token are there; only the settings are blank.
    private_home(&mut env);
    env.env.push(("NOTION_API_URL".into(), notion.url()));
    env.env.push(("NOTION_TOKEN".into(), TOKEN.into()));
    write_manifest(&env, "[tasks]\nsource = \"notion\"\nproject = \"repo\"\n");
    env.start_server(&[]);
    let started = Instant::now();
    let launched = env.orchestra(&["launch", "--agent", "bash"]).ok();
    assert!(launched.stderr.is_empty(), "{}", launched.stderr);
    assert!(started.elapsed() < Duration::from_secs(5));
    env.dispatch_shell("plain").ok();
    env.orchestra(&["list", "--json"]).ok();
    let wt = env.worktree_path("plain");
    commit_file(&wt, "p.txt", "p\n", "p");
    env.orchestra(&["merge", "plain", "--yes"]).ok();
    let refused = env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        refused.stderr.contains("no task source"),
        "{}",
        refused.stderr
    );
    env.orchestra(&["tasks", "pick", LOGIN]).fails_with(2);
    assert!(notion.requests().is_empty(), "{:?}", notion.requests());
}

#[test]
fn the_token_from_claudes_config_is_used_and_never_printed_or_written() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    write_manifest(&env, &tasks_toml(TASKS, "done_on_merge = true\n"));
    let home = private_home(&mut env);
    env.env.push(("NOTION_API_URL".into(), notion.url()));
    // Claude Code's config: this project's Notion MCP server with the token in its headers.
    let claude_config = |token: &str| {
        let headers =
            json!({"Authorization": format!("Bearer {token}"), "Notion-Version": "2022-06-28"});
        json!({
            "mcpServers": {"github": {"command": "gh-mcp"}},
            "projects": {env.repo.to_string_lossy(): {"mcpServers": {"notionApi": {
                "command": "npx", "args": ["-y", "@notionhq/notion-mcp-server"],
                "env": {"OPENAPI_MCP_HEADERS": headers.to_string()}}}}},
        })
        .to_string()
    };
    std::fs::write(home.join(".claude.json"), claude_config(TOKEN)).unwrap();
    env.start_server(&[]);

    let mut said = String::new();
    let mut run = |args: &[&str]| {
        let r = env.orchestra(args);
        said.push_str(&r.stdout);
        said.push_str(&r.stderr);
        r
    };
    run(&["tasks"]).ok();
    run(&["tasks", "--json"]).ok();
    run(&["tasks", "pick", LOGIN, "--dispatch", "--agent", "cat"]).ok();
    run(&["list", "--json"]).ok();
    run(&["launch", "--agent", "bash"]).ok();
    let wt = env.worktree_path("fix-the-login-redirect");
    commit_file(&wt, "l.txt", "l\n", "l");
    run(&["merge", "fix-the-login-redirect", "--yes"]).ok();
    assert!(notion.requests().iter().all(|r| r["auth"] == "ok"));
    assert_eq!(notion.patches().len(), 2, "picked, then closed");

    // A wrong token: the refusal names where it came from, not what it is.
    std::fs::write(home.join(".claude.json"), claude_config("ntn_wrong_one")).unwrap();
    let refused = run(&["tasks"]).fails_with(2);
    assert!(
        refused.stderr.contains("401")
            && refused.stderr.contains("~/.claude.json")
            && refused.stderr.contains("notionApi"),
        "{}",
        refused.stderr
    );

    assert!(!said.contains(TOKEN), "the token was printed:\n{said}");
    let mut files = Vec::new();
    walk(&env.home, &mut files);
    assert!(!files.is_empty());
    for file in files {
        let mut bytes = Vec::new();
        if std::fs::File::open(&file)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .is_ok()
        {
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "the token is in {}",
                file.display()
            );
        }
    }
    // Nor in what tmux keeps: the windows' environment and screens.
    let env_text = env.tmux(&["show-environment", "-g"]);
    assert!(!env_text.contains(TOKEN));
    for pane in env.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]).lines() {
        assert!(!env
            .tmux(&["capture-pane", "-p", "-t", pane])
            .contains(TOKEN));
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
fn refusals_name_what_to_fix_and_rate_limits_are_waited_for() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "");

    // 429 with Retry-After: 1, once: waited for, then it works.
    write_manifest(&env, &tasks_toml(BUSY_TASKS, ""));
    let started = Instant::now();
    let busy = env.orchestra(&["tasks", "--json"]).ok();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        json_of(&busy.stdout).as_array().unwrap().len(),
        0,
        "no page in that source"
    );
    let schema_reads = notion
        .requests()
        .iter()
        .filter(|r| r["path"] == format!("/v1/data_sources/{BUSY_TASKS}"))
        .count();
    assert_eq!(schema_reads, 2, "one 429, one retry");

    // 429 every time: a bounded number of retries, then exit 1.
    write_manifest(&env, &tasks_toml(FLOODED_TASKS, ""));
    let flooded = env.orchestra(&["tasks"]).fails_with(1);
    assert!(
        flooded.stderr.contains("rate limiting (429)"),
        "{}",
        flooded.stderr
    );
    let tries = notion
        .requests()
        .iter()
        .filter(|r| r["path"] == format!("/v1/data_sources/{FLOODED_TASKS}"))
        .count();
    assert_eq!(tries, 4, "the first try and three retries");

    // An answer later than the timeout: exit 1 at the timeout, naming the setting.
    write_manifest(&env, &tasks_toml(SLOW_TASKS, "timeout = \"1s\"\n"));
    let started = Instant::now();
    let slow = env.orchestra(&["tasks"]).fails_with(1);
    // Well before the stand-in's 10 s answer, whatever the machine's load.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(
        slow.stderr.contains("did not answer within 1s") && slow.stderr.contains("timeout"),
        "{}",
        slow.stderr
    );

    // An unknown data source: 404, naming the setting.
    write_manifest(&env, &tasks_toml("66666666666666666666666666666666", ""));
    let missing = env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        missing.stderr.contains("404") && missing.stderr.contains("tasks_data_source"),
        "{}",
        missing.stderr
    );

    // A status name the property does not have.
    write_manifest(&env, &tasks_toml(TASKS, "in_progress = \"Doing\"\n"));
    let option = env.orchestra(&["tasks", "pick", LOGIN]).fails_with(2);
    assert!(
        option.stderr.contains("no option \"Doing\"") && option.stderr.contains("in_progress"),
        "{}",
        option.stderr
    );
    assert!(notion.patches().is_empty());

    // A project that is not there.
    write_manifest(&env, &tasks_toml(TASKS, "project = \"nowhere\"\n"));
    let project = env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        project.stderr.contains("no project titled \"nowhere\""),
        "{}",
        project.stderr
    );

    // A wrong token: 401, naming NOTION_TOKEN.
    write_manifest(&env, &tasks_toml(TASKS, ""));
    env.env.push(("NOTION_TOKEN".into(), "ntn_not_it".into()));
    let unauthorized = env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        unauthorized.stderr.contains("401") && unauthorized.stderr.contains("NOTION_TOKEN"),
        "{}",
        unauthorized.stderr
    );
    // No token anywhere.
    env.env.push(("NOTION_TOKEN".into(), String::new()));
    let none = env.orchestra(&["tasks"]).fails_with(2);
    assert!(none.stderr.contains("no Notion token"), "{}", none.stderr);
}

/// `tasks pick <task> --dispatch` to a session `label` running `cat` (which shows what it
/// was given).
fn pick_to_cat(env: &Env, task: &str, label: &str) {
    env.orchestra(&[
        "tasks",
        "pick",
        task,
        "--dispatch",
        "--agent",
        "cat",
        "--label",
        label,
    ])
    .ok();
}

/// `[tasks]` naming the projects and `tasks` data sources, then `extra` lines.
fn tasks_toml(tasks: &str, extra: &str) -> String {
    format!(
        "[tasks]\nprojects_data_source = \"{PROJECTS}\"\ntasks_data_source = \"{tasks}\"\n{extra}"
    )
}

#[test]
fn a_bad_tasks_table_is_refused_with_its_place_and_nothing_is_made() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "status_prop = \"State\"\n");
    env.start_server(&[]);
    let windows = env.windows();
    for args in [
        &["tasks"][..],
        &["tasks", "pick", LOGIN, "--dispatch", "--agent", "cat"],
        &["launch", "--agent", "bash"],
    ] {
        let run = env.orchestra(args).fails_with(2);
        assert!(
            run.stderr.contains("orchestra.toml:5:1") && run.stderr.contains("unknown field"),
            "{args:?}: {}",
            run.stderr
        );
    }
    let dispatch = env.dispatch_shell("plain").fails_with(2);
    assert!(
        dispatch.stderr.contains("orchestra.toml:5:1"),
        "{}",
        dispatch.stderr
    );
    write_manifest(&env, &tasks_toml("not-an-id", ""));
    let run = env.orchestra(&["tasks"]).fails_with(2);
    assert!(run.stderr.contains("orchestra.toml:3:1"), "{}", run.stderr);
    assert_eq!(env.windows(), windows, "no window was made");
    assert!(env.list_json().is_empty());
    assert!(!env.branches().iter().any(|b| b.starts_with("session/")));
    assert!(notion.requests().is_empty());
}

#[test]
fn the_menu_offers_tasks_only_with_a_source_and_dispatches_the_one_chosen() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    let mut server_env = vec![
        ("ORCHESTRA_AGENT".to_string(), "cat".to_string()),
        (
            "ORCHESTRA_HOME".to_string(),
            env.home.to_string_lossy().into_owned(),
        ),
        ("NOTION_API_URL".to_string(), notion.url()),
        ("NOTION_TOKEN".to_string(), TOKEN.to_string()),
    ];
    let home = private_home(&mut env);
    server_env.push(("HOME".into(), home.to_string_lossy().into_owned()));
    env.start_server(&server_env);
    crate::plugin::cd_person_pane(&env, &env.repo);
    crate::plugin::load_plugin(&env);
    let person = Person::attach(&env);

    // No [tasks]: no Tasks… entry.
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Next waiting");
    assert!(!person.sees().contains("Tasks"), "{}", person.sees());
    // q closes a menu (an Escape would join the next prefix key as one Meta key).
    person.keys(&["q"]);
    assert!(wait_until(Duration::from_secs(10), || !person
        .sees()
        .contains("Next waiting")));
    assert!(notion.requests().is_empty());

    configure(&mut env, &notion, TASKS, "");
    crate::plugin::choose(&person, "Tasks…", "t");
    person.wait_to_see("Fix the login redirect");
    person.wait_to_see("Document the tasks flow");
    person.keys(&["1"]);
    assert!(
        wait_until(Duration::from_secs(30), || env
            .list_json()
            .iter()
            .any(|s| s["task"] == LOGIN)),
        "no session dispatched from the task:\n{}\nmessages: {}",
        person.sees(),
        env.tmux(&["show-messages"])
    );
    assert_eq!(env.session("fix-the-login-redirect")["task"], LOGIN);
    assert!(wait_until(Duration::from_secs(10), || notion
        .patches()
        .len()
        == 1));
}

/// The stand-in's own tests (filters, pagination, faults, the wire) run with the suite.
#[test]
fn the_notion_stand_in_passes_its_own_tests() {
    stand_in_passes_its_own_tests("test_notion.py");
}

/// A merge killed after it landed but before its task moved: `doctor --fix` finishes the
/// teardown from the merge journal, and the task moves to Done with it.
#[test]
fn doctor_finishing_a_killed_merge_closes_its_task() {
    use std::os::unix::process::ExitStatusExt;
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "done_on_merge = true\n");
    env.start_server(&[]);
    pick_to_cat(&env, DOCS, "docs");
    let wt = env.worktree_path("docs");
    commit_file(&wt, "docs.txt", "written\n", "write the docs");
    let before = env.git(&["rev-parse", "main"]);
    let done = json!({"properties": {"Status": {"status": {"name": "Done"}}}});
    let closed = || notion.patches().iter().any(|(_, body)| *body == done);
    // Each step in turn, until one kills the merge after main moved.
    let mut step = 1;
    loop {
        assert!(step < 40, "no step of merge was after its landing");
        let output = env
            .orchestra_command(&env.repo, &["merge", "docs", "--yes"])
            .env("ORCHESTRA_FAULT_AT", format!("merge:{step}"))
            .output()
            .expect("run orchestra");
        assert_eq!(
            output.status.signal(),
            Some(9),
            "merge ran to its end at step {step}"
        );
        if env.git(&["rev-parse", "main"]) != before {
            break;
        }
        env.orchestra(&["doctor", "--fix"]);
        step += 1;
    }
    assert!(!closed(), "the task moved before the merge was finished");
    let fixed = env.orchestra(&["doctor", "--fix"]);
    assert!(
        fixed.stdout.contains(&format!("task {DOCS} is Done now")),
        "{}\n{}",
        fixed.stdout,
        fixed.stderr
    );
    assert!(closed(), "{:?}", notion.patches());
    assert!(!env.branches().iter().any(|b| b == "session/docs"));
    assert!(env.list_json().iter().all(|s| s["label"] != "docs"));
}

/// A repo's `.mcp.json` is the clone's author's file: its Notion entry is read only once
/// `orchestra allow` allowed that very file, after the person's own config, and its
/// `${VAR}` may name only a Notion variable, never another secret of the environment.
#[test]
fn a_repos_mcp_json_gives_a_token_only_once_allowed_and_never_another_secret() {
    const AWS_SECRET: &str = "aws-s3cr3t-n0t-f0r-n0t10n";
    const AUTHORS: &str = "ntn_the_repo_authors_token";
    let mut env = Env::new();
    let mut world = workspace();
    world["watched"] = json!([AWS_SECRET, AUTHORS]);
    let Some(notion) = Notion::start(&env, &world) else {
        return;
    };
    write_manifest(&env, &tasks_toml(TASKS, ""));
    let home = private_home(&mut env);
    env.env.push(("NOTION_API_URL".into(), notion.url()));
    env.env
        .push(("AWS_SECRET_ACCESS_KEY".into(), AWS_SECRET.into()));
    let mcp_json = |token: &str| {
        json!({"mcpServers": {"notion": {"command": "npx",
            "args": ["-y", "@notionhq/notion-mcp-server"],
            "env": {"NOTION_TOKEN": token}}}})
        .to_string()
    };
    let commit_mcp = |token: &str| {
        std::fs::write(env.repo.join(".mcp.json"), mcp_json(token)).unwrap();
        git_in(&env.repo, &["add", ".mcp.json"]);
        git_in(&env.repo, &["commit", "-q", "-m", ".mcp.json"]);
    };
    let never_watched = |notion: &Notion| {
        let requests = notion.requests();
        assert!(
            requests.iter().all(|r| r["auth"] != "watched"),
            "a secret that is not the person's Notion token reached Notion: {requests:?}"
        );
    };

    // The hostile entry: not read before it is allowed, nor its variable after.
    commit_mcp("${AWS_SECRET_ACCESS_KEY}");
    let refused = env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        refused.stderr.contains("no Notion token"),
        "{}",
        refused.stderr
    );
    let allowed = env.orchestra(&["allow"]).ok();
    assert!(allowed.stdout.contains(".mcp.json"), "{}", allowed.stdout);
    env.orchestra(&["tasks"]).fails_with(2);
    never_watched(&notion);
    assert!(notion.requests().is_empty(), "no token, no request");

    // The person's own entry wins over the repo's, allowed or not.
    commit_mcp(AUTHORS);
    env.orchestra(&["allow"]).ok();
    let person = json!({"mcpServers": {"notion": {"command": "npx",
        "args": ["-y", "@notionhq/notion-mcp-server"], "env": {"NOTION_TOKEN": TOKEN}}}});
    std::fs::write(home.join(".claude.json"), person.to_string()).unwrap();
    let listed = env.orchestra(&["tasks"]).ok();
    assert!(
        listed.stdout.contains("Fix the login redirect"),
        "{}",
        listed.stdout
    );
    never_watched(&notion);
    assert!(notion.requests().iter().all(|r| r["auth"] == "ok"));

    // Without the person's entry, the repo's works only once this very file is allowed.
    std::fs::remove_file(home.join(".claude.json")).unwrap();
    commit_mcp(TOKEN);
    let before = notion.requests().len();
    let refused = env.orchestra(&["tasks"]).fails_with(2);
    assert!(
        refused.stderr.contains("orchestra allow"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        notion.requests().len(),
        before,
        "a changed .mcp.json is not read"
    );
    env.orchestra(&["allow"]).ok();
    env.orchestra(&["tasks"]).ok();
    assert!(notion.requests().len() > before);
    env.orchestra(&["allow", "--revoke"]).ok();
    env.orchestra(&["tasks"]).fails_with(2);
    never_watched(&notion);
}

#[test]
fn the_orchestrators_tools_list_and_pick_a_task_and_name_who_asked() {
    let mut env = Env::new();
    let Some(notion) = Notion::start(&env, &workspace()) else {
        return;
    };
    configure(&mut env, &notion, TASKS, "");
    env.start_server(&[]);
    let mut mcp = crate::mcp::Client::start(&env, "orchestrator");
    // tasks_list: the project's open tasks, as `tasks --json` lists them.
    let listed = mcp.ok("tasks_list", json!({}));
    let titles: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["title"].as_str())
        .collect();
    assert!(titles.contains(&"Fix the login redirect"), "{listed}");
    assert!(!titles.contains(&"Old work"), "{listed}");
    assert!(!titles.contains(&"Another project's task"), "{listed}");
    // tasks_pick with dispatch: the task in progress, a session on it, asked for by the
    // orchestrator.
    let picked = mcp.ok(
        "tasks_pick",
        json!({"id": LOGIN, "dispatch": true, "agent": "cat"}),
    );
    let label = "fix-the-login-redirect";
    assert!(
        picked["lines"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x
                .as_str()
                .is_some_and(|x| x.contains(&format!("dispatched {label}"))))),
        "{picked}"
    );
    let session = env.session(label);
    assert_eq!(session["task"], LOGIN);
    assert_eq!(session["requested_by"], "orchestrator", "{session}");
    assert_eq!(
        notion.patches(),
        [(
            format!("/v1/pages/{LOGIN}"),
            json!({"properties": {"Status": {"status": {"name": "In progress"}}}})
        )]
    );
}
