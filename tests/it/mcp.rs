//! `orchestra mcp`: the orchestrator's tools over MCP, spoken to by a small client of our
//! own (every tool, every error), then by the real claude, codex and gemini as the
//! orchestrator `launch` starts, against the stand-in APIs.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{wait_until, AgentCli, AgentWorld, ClaudeWorld, Env};

/// An MCP client on a server's stdio: one JSON-RPC message a line each way. Every line
/// the server writes must be a JSON-RPC message (stdout is the protocol's alone).
pub(crate) struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next: i64,
    /// Each tool's outputSchema, read from tools/list at the first result checked.
    outputs: Option<std::collections::HashMap<String, Value>>,
}

impl Client {
    pub(crate) fn start(env: &Env, session: &str) -> Client {
        let mut child = env
            .orchestra_command(&env.repo, &["mcp", "--session", session])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start orchestra mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client = Client {
            child,
            stdin,
            lines,
            next: 0,
            outputs: None,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "the-test", "version": "1"}}),
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(init["result"]["serverInfo"]["name"], "orchestra", "{init}");
        client.send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        client
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message from the server, checked to be JSON-RPC 2.0.
    fn receive(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer within a minute");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout held a line that is not JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let answer = self.receive();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// A tools/call's result (a protocol error fails the test).
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
        answer["result"].clone()
    }

    pub(crate) fn ok(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        assert!(result["content"][0]["text"].is_string(), "{result}");
        let structured = result["structuredContent"].clone();
        // What the tool says it returns is what it returns (the spec's MUST).
        let schema = self.output_schema(tool);
        if let Err(wrong) = conforms(&schema, &structured) {
            panic!("{tool}'s result breaks its outputSchema: {wrong}\n{structured}\n{schema}");
        }
        structured
    }

    fn output_schema(&mut self, tool: &str) -> Value {
        if self.outputs.is_none() {
            let listed = self.request("tools/list", json!({}));
            let tools = listed["result"]["tools"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            self.outputs = Some(
                tools
                    .into_iter()
                    .map(|t| {
                        (
                            t["name"].as_str().unwrap_or_default().to_string(),
                            t["outputSchema"].clone(),
                        )
                    })
                    .collect(),
            );
        }
        self.outputs
            .as_ref()
            .and_then(|o| o.get(tool).cloned())
            .unwrap_or_else(|| panic!("{tool} has no outputSchema"))
    }

    /// A tool error's one line.
    fn refused(&mut self, tool: &str, args: Value) -> String {
        let result = self.call(tool, args);
        assert_eq!(result["isError"], true, "{tool}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap().to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        text
    }

    /// Closes stdin; the server must end by itself, status 0, with nothing more to say.
    fn close(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        assert!(
            wait_until(Duration::from_secs(30), || matches!(
                self.child.try_wait(),
                Ok(Some(_))
            )),
            "the server did not end when its stdin closed"
        );
        assert!(self.child.wait().unwrap().success());
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            rest.push(serde_json::from_str(&line).expect("only JSON-RPC on stdout"));
        }
        rest
    }
}

const BASH: &str = "bash --norc --noprofile";

/// Whether `value` is what `schema` says (the part of JSON Schema the tools use: type,
/// properties, required, items); the first place it is not.
fn conforms(schema: &Value, value: &Value) -> Result<(), String> {
    let typed = match schema["type"].as_str() {
        None => true,
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some(other) => return Err(format!("the schema's type {other} is unknown to the test")),
    };
    if !typed {
        return Err(format!("{value} is not {}", schema["type"]));
    }
    for key in schema["required"].as_array().into_iter().flatten() {
        let key = key.as_str().unwrap_or_default();
        if value.get(key).is_none() {
            return Err(format!("{key} is required"));
        }
    }
    if let Some(properties) = schema["properties"].as_object() {
        for (key, sub) in properties {
            if let Some(v) = value.get(key) {
                conforms(sub, v).map_err(|e| format!("{key}: {e}"))?;
            }
        }
    }
    if let (Some(items), Some(values)) = (schema.get("items"), value.as_array()) {
        for (i, v) in values.iter().enumerate() {
            conforms(items, v).map_err(|e| format!("[{i}]: {e}"))?;
        }
    }
    Ok(())
}

fn labels(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap_or_else(|| panic!("not an array: {rows}"))
        .iter()
        .map(|r| r["label"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn every_tool_answers_over_mcp_and_none_takes_the_persons_decisions() {
    let env = Env::new();
    env.start_server(&[]);
    let mut c = Client::start(&env, "orchestrator");
    assert_eq!(c.request("ping", json!({}))["result"], json!({}));

    // The tools, each with a schema and the person's decisions named; none of theirs.
    let listed = c.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "slugify",
            "dispatch",
            "list",
            "status",
            "health",
            "review_summary",
            "brief",
            "deps_add",
            "deps_graph",
            "conflicts",
            "tasks_list",
            "tasks_pick",
            "cost"
        ]
    );
    for t in &tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
        assert!(
            t["description"]
                .as_str()
                .unwrap()
                .contains("stay the person's"),
            "{t}"
        );
    }
    for theirs in ["merge", "kill", "approve", "deny"] {
        let answer = c.request(
            "tools/call",
            json!({"name": theirs, "arguments": {"label": "api"}}),
        );
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }

    let slug = c.ok("slugify", json!({"title": "Write the API"}));
    assert_eq!(slug["lines"][0], "write-the-api", "{slug}");

    // dispatch: a session as the CLI makes it, recorded as the orchestrator's request.
    let windows_before = env.windows().len();
    let made = c.ok(
        "dispatch",
        json!({"label": "api", "prompt": "echo api-prompt-3391", "agent": BASH}),
    );
    assert!(
        made["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("dispatched api"),
        "{made}"
    );
    assert_eq!(env.windows().len(), windows_before + 1);
    assert_eq!(env.session("api")["requested_by"], "orchestrator");
    env.wait_screen("api", "api-prompt-3391", Duration::from_secs(20));

    // A failing dispatch: the CLI's own line, as a tool error, nothing made.
    let cli = env
        .orchestra(&["dispatch", "api", "--prompt", "again", "--agent", BASH])
        .fails_with(2);
    let cli_line = cli
        .stderr
        .trim()
        .trim_start_matches("orchestra: ")
        .to_string();
    let branches = env.branches();
    let windows = env.windows();
    let line = c.refused(
        "dispatch",
        json!({"label": "api", "prompt": "again", "agent": BASH}),
    );
    assert_eq!(line, cli_line);
    let cli = env
        .orchestra(&[
            "dispatch",
            "nobase",
            "--prompt",
            "x",
            "--base",
            "no-such-rev",
            "--agent",
            BASH,
        ])
        .fails_with(2);
    let line = c.refused(
        "dispatch",
        json!({"label": "nobase", "prompt": "x", "base": "no-such-rev", "agent": BASH}),
    );
    assert_eq!(line, cli.stderr.trim().trim_start_matches("orchestra: "));
    let line = c.refused(
        "dispatch",
        json!({"label": "Bad Label", "prompt": "x", "agent": BASH}),
    );
    assert!(line.contains("label"), "{line}");
    // The person's own flags are not the orchestrator's to pass.
    let line = c.refused(
        "dispatch",
        json!({"label": "yolo", "prompt": "x", "agent": "claude --dangerously-skip-permissions"}),
    );
    assert!(line.contains("`agent`"), "{line}");
    // Schema-invalid arguments name the field.
    let line = c.refused("dispatch", json!({"label": 7, "prompt": "x"}));
    assert!(line.contains("`label`"), "{line}");
    let line = c.refused(
        "dispatch",
        json!({"label": "x", "prompt": "x", "yolo": true}),
    );
    assert!(line.contains("`yolo`"), "{line}");
    let line = c.refused("dispatch", json!({"prompt": "x"}));
    assert!(
        line.contains("`label`") && line.contains("required"),
        "{line}"
    );
    assert_eq!(env.branches(), branches);
    assert_eq!(env.windows(), windows);

    // list, status, health: the commands' JSON as the structured result.
    let list = c.ok("list", json!({}));
    assert_eq!(labels(&list["sessions"]), ["api"]);
    assert_eq!(list["sessions"][0]["requested_by"], "orchestrator");
    let status = c.ok("status", json!({}));
    assert!(
        labels(&status["sessions"]).contains(&"api".to_string()),
        "{status}"
    );
    let health = c.ok("health", json!({}));
    assert!(
        labels(&health["rows"]).contains(&"api".to_string()),
        "{health}"
    );

    // review_summary: commits and files, the diff only when asked, and bounded.
    let wt = env.worktree_path("api");
    std::fs::write(wt.join("api.txt"), "line\n".repeat(2000)).unwrap();
    crate::harness::git_in(&wt, &["add", "api.txt"]);
    crate::harness::git_in(&wt, &["commit", "-q", "-m", "the api"]);
    let review = c.ok("review_summary", json!({"label": "api"}));
    assert_eq!(review["commits"].as_array().unwrap().len(), 1, "{review}");
    assert!(review.get("diff").is_none(), "{review}");
    let review = c.ok(
        "review_summary",
        json!({"label": "api", "diff": true, "max_diff_bytes": 2048}),
    );
    let diff = review["diff"].as_str().unwrap();
    assert!(
        diff.contains("api.txt") && diff.contains("diff cut at 2048"),
        "{diff}"
    );
    assert!(diff.len() < 2048 + 200, "{}", diff.len());
    let line = c.refused(
        "review_summary",
        json!({"label": "api", "max_diff_bytes": 1}),
    );
    assert!(line.contains("`max_diff_bytes`"), "{line}");
    let line = c.refused("review_summary", json!({"label": "nobody"}));
    assert!(line.contains("nobody"), "{line}");

    // brief: the text exactly, even one that starts with `@`.
    let briefed = c.ok(
        "brief",
        json!({"label": "api", "text": "@literally-7713 not a file"}),
    );
    assert!(
        briefed["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("briefed api"),
        "{briefed}"
    );
    env.wait_screen("api", "@literally-7713 not a file", Duration::from_secs(20));

    // deps: an edge, refused as the CLI refuses, the graph.
    c.ok(
        "dispatch",
        json!({"label": "web", "prompt": "echo web", "agent": BASH}),
    );
    c.ok(
        "deps_add",
        json!({"dependent": "web", "upstream": "api", "artifact": "branch:session/api"}),
    );
    let line = c.refused(
        "deps_add",
        json!({"dependent": "web", "upstream": "web", "artifact": "x"}),
    );
    assert!(!line.is_empty());
    let graph = c.ok("deps_graph", json!({}));
    assert_eq!(graph["edges"].as_array().unwrap().len(), 1, "{graph}");
    assert_eq!(env.session("web")["requested_by"], "orchestrator");

    let conflicts = c.ok("conflicts", json!({}));
    assert!(conflicts["pairs"].is_array(), "{conflicts}");
    let cost = c.ok("cost", json!({"by": "outcome"}));
    assert!(cost["rows"].is_array(), "{cost}");
    let line = c.refused("cost", json!({"by": "week"}));
    assert!(line.contains("`by`"), "{line}");
    // No tracker here: the CLI's refusal, one line.
    let line = c.refused("tasks_list", json!({}));
    assert!(line.contains("[tasks]"), "{line}");
    let cli = env
        .orchestra(&["tasks", "pick", "t1", "--dispatch"])
        .fails_with(2);
    let line = c.refused("tasks_pick", json!({"id": "t1", "dispatch": true}));
    assert_eq!(line, cli.stderr.trim().trim_start_matches("orchestra: "));

    // A message over the bound: an error, the line dropped, the server still answers.
    c.send_line(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(1_200_000)
    ));
    assert_eq!(c.receive()["error"]["code"], -32600);
    assert_eq!(c.request("ping", json!({}))["result"], json!({}));

    // A second server on the same repo is allowed: it shares the record, not a lock.
    let mut second = Client::start(&env, "second");
    assert_eq!(
        labels(&second.ok("list", json!({}))["sessions"]),
        ["api", "web"]
    );
    second.ok(
        "dispatch",
        json!({"label": "docs", "prompt": "echo docs", "agent": BASH}),
    );
    assert_eq!(env.session("docs")["requested_by"], "second");
    assert!(second.close().is_empty());

    // stdin closed mid-call: the call is finished and answered, then the server ends.
    c.next += 1;
    c.send_line(
        &json!({"jsonrpc": "2.0", "id": c.next, "method": "tools/call",
                "params": {"name": "dispatch", "arguments": {"label": "late", "prompt": "echo late", "agent": BASH}}})
        .to_string(),
    );
    let rest = c.close();
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["result"]["isError"], false, "{rest:?}");
    assert_eq!(env.session("late")["requested_by"], "orchestrator");
}

#[test]
fn a_server_for_no_repository_refuses_in_one_line() {
    let env = Env::new();
    let outside = env.root.join("not-a-repo");
    std::fs::create_dir_all(&outside).unwrap();
    let run = env.orchestra_in(&outside, &["mcp"]).fails_with(2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let run = env
        .orchestra(&["mcp", "--session", "two\nlines"])
        .fails_with(2);
    assert!(run.stderr.contains("--session"), "{}", run.stderr);
}

fn claude_agent(world: &ClaudeWorld) -> String {
    format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    )
}

/// The orchestrator pane `launch` made.
fn orchestrator_pane(env: &Env) -> String {
    env.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{window_name}"])
        .lines()
        .find(|l| l.ends_with(" orchestrator"))
        .and_then(|l| l.split(' ').next())
        .expect("the orchestrator's pane")
        .to_string()
}

/// Types `text` as the person would and sends it: Enter again while the API has not
/// heard it (a long text is still being taken as a paste when the first Enter comes).
fn type_into(env: &Env, world: &ClaudeWorld, pane: &str, text: &str, heard: &str) {
    env.tmux(&["send-keys", "-t", pane, "-l", text]);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(700));
        env.tmux(&["send-keys", "-t", pane, "Enter"]);
        if wait_until(Duration::from_secs(5), || {
            world.api.requests().contains(heard)
        }) {
            return;
        }
    }
}

#[test]
fn the_orchestrator_dispatches_through_its_tools_and_leaves_the_merge_to_the_person() {
    let env = Env::new();
    let Some(world) = ClaudeWorld::start(&env, &[&env.repo, &env.worktree_path("login")]) else {
        return;
    };
    env.start_server(&world.env);
    env.orchestra(&["launch", "--agent", &claude_agent(&world)])
        .ok();
    let pane = orchestrator_pane(&env);
    let screen = || env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(
        wait_until(Duration::from_secs(60), || screen()
            .lines()
            .any(|l| l.trim_end() == "❯")),
        "{}",
        screen()
    );

    // The person's request; the stand-in drafts it and calls the tools, then reports.
    let dispatch = json!({"label": "login", "prompt": "Fix the login bug in auth.py (drafted 5521)",
                          "agent": claude_agent(&world)});
    let request = format!(
        "Please get the login bug fixed. [[mcp: orchestra dispatch | {dispatch} ;; orchestra status | {{}} \
         ;; orchestra review_summary | {{\"label\": \"login\"}}]] [[after: reported: {{results}}]]"
    );
    type_into(
        &env,
        &world,
        &pane,
        &request,
        "Please get the login bug fixed",
    );
    assert!(
        wait_until(Duration::from_secs(90), || env
            .orchestra(&["list", "--json"])
            .stdout
            .contains("\"login\"")),
        "no session dispatched: {}\n{}",
        screen(),
        world.api.requests()
    );
    let login = env.session("login");
    assert_eq!(login["requested_by"], "orchestrator", "{login}");
    // The worker started in its own window with the drafted prompt.
    assert!(
        env.windows().iter().any(|w| w.contains(" login ")),
        "{:?}",
        env.windows()
    );
    assert!(
        wait_until(Duration::from_secs(60), || world
            .api
            .requests_json()
            .iter()
            .any(|r| r["request"]["messages"]
                .to_string()
                .contains("drafted 5521")
                && !r["request"]["messages"]
                    .to_string()
                    .contains("mcp__orchestra"))),
        "the worker never got its prompt"
    );
    // status and review_summary were called and their answers reported.
    // (the report quotes the results: what review_summary answered is on the screen.)
    assert!(
        wait_until(Duration::from_secs(90), || screen()
            .lines()
            .map(str::trim)
            .collect::<String>()
            .contains("\"merges_cleanly\":true")),
        "the report never came: {}",
        screen()
    );
    let requests = world.api.requests();
    assert!(
        requests.contains("\\\"reachable\\\":true"),
        "status's answer never reached the model"
    );
    // The model was offered the orchestrator's tools and none of the person's.
    let offered: Vec<String> = world
        .api
        .requests_json()
        .iter()
        .flat_map(|r| {
            r["request"]["tools"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|t| t["name"].as_str().map(String::from))
        .filter(|n| n.starts_with("mcp__orchestra__"))
        .collect();
    assert!(
        offered.iter().any(|n| n == "mcp__orchestra__dispatch"),
        "{offered:?}"
    );
    for theirs in ["merge", "kill", "approve", "deny"] {
        assert!(!offered.iter().any(|n| n.contains(theirs)), "{offered:?}");
    }

    // Asked to merge, the orchestrator has no tool for it: a call of one fails, and the
    // answer tells the person the command; nothing merged.
    let main_before = env.git(&["rev-parse", "HEAD"]);
    type_into(
        &env,
        &world,
        &pane,
        "Merge login now. [[mcp: orchestra merge | {\"label\": \"login\"}]] \
         [[after: I cannot merge: run orchestra merge login yourself]]",
        "Merge login now",
    );
    assert!(
        wait_until(Duration::from_secs(90), || screen()
            .contains("run orchestra merge login yourself")),
        "{}",
        screen()
    );
    assert_eq!(env.git(&["rev-parse", "HEAD"]), main_before);
    assert!(env.branches().contains(&"session/login".to_string()));
}

/// Types `text` into `pane` as the person would and sends it: Enter again while `heard`
/// says the API has not got it (a long text may still be taken as a paste at the first).
fn type_until_heard(env: &Env, pane: &str, text: &str, heard: impl Fn() -> bool) {
    env.tmux(&["send-keys", "-t", pane, "-l", text]);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(700));
        env.tmux(&["send-keys", "-t", pane, "Enter"]);
        if wait_until(Duration::from_secs(5), &heard) {
            return;
        }
    }
}

#[test]
fn a_codex_orchestrator_dispatches_through_its_tools_without_being_asked_to_allow_them() {
    let Some(c) = AgentWorld::start(
        AgentCli::codex(),
        |env| vec![env.repo.clone(), env.worktree_path("login")],
        None,
    ) else {
        return;
    };
    c.env.orchestra(&["launch", "--agent", &c.agent]).ok();
    let pane = orchestrator_pane(&c.env);
    let screen = || c.env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(
        wait_until(Duration::from_secs(60), || screen()
            .contains("← for agents")),
        "{}",
        screen()
    );
    // The server was given on codex's command line, not in the person's config.toml.
    let cmdline = c.env.pane_proc(&pane, "cmdline").replace('\n', " ");
    assert!(
        cmdline.contains("mcp_servers.orchestra.command=")
            && cmdline.contains("default_tools_approval_mode=\"approve\""),
        "{cmdline}"
    );
    let codex_home = c
        .vars
        .iter()
        .find(|(k, _)| k == "CODEX_HOME")
        .map(|(_, v)| std::path::PathBuf::from(v))
        .expect("the world's CODEX_HOME");
    let person_config = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    assert!(!person_config.contains("mcp_servers"), "{person_config}");

    let dispatch = json!({"label": "login", "prompt": "Fix the login bug in auth.py (drafted 5521)",
                          "agent": c.agent});
    let request = format!(
        "Please get the login bug fixed. [[tool: dispatch | {dispatch} ;; status | {{}}]] \
         [[after: reported: {{results}}]]"
    );
    type_until_heard(&c.env, &pane, &request, || {
        c.api.requests().contains("Please get the login bug fixed")
    });
    assert!(
        wait_until(Duration::from_secs(90), || c
            .env
            .orchestra(&["list", "--json"])
            .stdout
            .contains("\"login\"")),
        "no session dispatched: {}\n{}",
        screen(),
        c.api.requests()
    );
    let login = c.env.session("login");
    assert_eq!(login["requested_by"], "orchestrator", "{login}");
    assert!(
        c.env.windows().iter().any(|w| w.contains(" login ")),
        "{:?}",
        c.env.windows()
    );
    // The worker (a codex of its own, without the orchestrator's tools) got the prompt.
    assert!(
        wait_until(Duration::from_secs(60), || c
            .api
            .requests_json()
            .iter()
            .any(|r| {
                let input = r["request"]["input"].to_string();
                input.contains("drafted 5521")
                    && !input.contains("Please get the login bug fixed")
                    && !r["request"]["tools"].to_string().contains("mcp__orchestra")
            })),
        "the worker never got its prompt"
    );
    // status came after dispatch's result, and the report quotes both answers (its
    // `reachable`, which the typed request does not hold).
    let turns = || {
        c.api
            .requests_json()
            .iter()
            .map(|r| format!("{} {}", r["turn"], r["request"]["input"].to_string().len()))
            .collect::<Vec<_>>()
    };
    assert!(
        wait_until(Duration::from_secs(90), || screen()
            .lines()
            .map(str::trim)
            .collect::<String>()
            .contains("\"reachable\":true")),
        "the report never came: {}\n{:?}",
        screen(),
        turns()
    );
    // The tools came in codex's namespace for the server, and none of the person's.
    let offered: Vec<String> = c
        .api
        .requests_json()
        .iter()
        .flat_map(|r| {
            r["request"]["tools"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|t| t["name"] == "mcp__orchestra")
        .flat_map(|t| t["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert!(offered.iter().any(|n| n == "dispatch"), "{offered:?}");
    for theirs in ["merge", "kill", "approve", "deny"] {
        assert!(!offered.iter().any(|n| n.contains(theirs)), "{offered:?}");
    }
    // It was told what an orchestrator does (prompts/task-drafting.md, as its instructions).
    let first = &c.api.requests_json()[0];
    assert!(
        first["request"]["input"]
            .to_string()
            .contains("You are the orchestra orchestrator"),
        "{first}"
    );
    // Nothing asked the person to allow a tool.
    assert!(
        !screen().contains("Allow the orchestra MCP server"),
        "{}",
        screen()
    );
}

#[test]
fn a_gemini_orchestrator_dispatches_through_its_trusted_tools_from_a_home_of_its_own() {
    let Some(mut g) = AgentWorld::start(AgentCli::gemini(), |_| Vec::new(), None) else {
        return;
    };
    g.patience = Duration::from_secs(60);
    // orchestra builds the orchestrator's Gemini home from the person's: the sandboxed one.
    g.share("HOME");
    // The person trusted their repo once (an untrusted folder connects no MCP server).
    std::fs::write(
        g.home.join(".gemini/trustedFolders.json"),
        json!({ g.env.repo.to_string_lossy(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    g.env.orchestra(&["launch", "--agent", &g.agent]).ok();
    let pane = orchestrator_pane(&g.env);
    let screen = || g.env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(
        wait_until(Duration::from_secs(60), || screen()
            .contains("Type your message")),
        "{}",
        screen()
    );
    // The server is in a Gemini home of the orchestrator's own, not the person's settings.
    let environ = g.env.pane_proc(&pane, "environ");
    let home = environ
        .lines()
        .find_map(|l| l.strip_prefix("GEMINI_CLI_HOME="))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("no GEMINI_CLI_HOME: {environ}"));
    assert!(
        home.starts_with(g.env.home.join("mcp")),
        "{}",
        home.display()
    );
    let ours = std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap();
    assert!(ours.contains("\"trust\": true"), "{ours}");
    let person = std::fs::read_to_string(g.home.join(".gemini/settings.json")).unwrap();
    assert!(!person.contains("mcpServers"), "{person}");
    assert!(!g.env.repo.join(".gemini").exists());

    // gemini names a server's tools to the model `mcp_SERVER_TOOL`.
    let dispatch = json!({"label": "login", "prompt": "Fix the login bug in auth.py (drafted 5521)",
                          "agent": g.agent});
    let request = format!(
        "Please get the login bug fixed. [[tool: mcp_orchestra_dispatch | {dispatch}]] \
         [[after: dispatched it]]"
    );
    type_until_heard(&g.env, &pane, &request, || {
        g.api.requests().contains("Please get the login bug fixed")
    });
    assert!(
        wait_until(Duration::from_secs(90), || g
            .env
            .orchestra(&["list", "--json"])
            .stdout
            .contains("\"login\"")),
        "no session dispatched: {}\n{}",
        screen(),
        g.api.requests()
    );
    let login = g.env.session("login");
    assert_eq!(login["requested_by"], "orchestrator", "{login}");
    // The tools offered: the server's, none of the person's decisions.
    let offered: Vec<String> = g
        .api
        .requests_json()
        .iter()
        .flat_map(|r| {
            r["request"]["tools"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|t| t["name"].as_str().map(String::from))
        .filter(|n| n.starts_with("mcp_orchestra_"))
        .collect();
    assert!(
        offered.iter().any(|n| n == "mcp_orchestra_dispatch"),
        "{offered:?}"
    );
    for theirs in ["merge", "kill", "approve", "deny"] {
        assert!(!offered.iter().any(|n| n.contains(theirs)), "{offered:?}");
    }
    // The call ran without a confirmation (the server is trusted): its answer came.
    assert!(
        wait_until(Duration::from_secs(60), || screen()
            .contains("dispatched it")),
        "{}",
        screen()
    );
}
