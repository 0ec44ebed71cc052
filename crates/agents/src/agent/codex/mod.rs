//! codex: its `notify` program (the one event it says, a turn's end), given on its
//! command line from the session's settings; it resumes its latest thread in the worktree.
//! What a session cost is read from its rollouts (cost.rs).

use std::path::Path;

pub mod cost;

use crate::agent::{
    shared_event, Agent, AgentError, AgentKind, HookWiring, Launch, LaunchContext, Quit, Sandboxed,
    Trust,
};
use crate::state::{AgentState, Session, StateError, Store};

pub struct Codex;

impl Agent for Codex {
    fn kind(&self) -> AgentKind {
        AgentKind::Codex
    }

    fn launch(&self, command: &[String], prompt: Option<&str>, ctx: &LaunchContext<'_>) -> Launch {
        let mut argv = command.to_vec();
        if let Some(program) = ctx.notify {
            argv.extend(["-c".to_string(), codex_notify_override(program)]);
        }
        // Last, after every option of the command: the session's worktree is its own
        // folder, so its latest recorded thread there is the one it was in.
        if ctx.resume {
            argv.extend(["resume".to_string(), "--last".to_string()]);
        }
        if let Some(p) = prompt {
            // A prompt starting with `-` is still the prompt, not an option.
            argv.extend(["--".to_string(), p.to_string()]);
        }
        Launch {
            argv,
            typed_prompt: None,
            env: Vec::new(),
        }
    }

    fn first_message(&self, message: String) -> Option<Vec<String>> {
        Some(vec!["--".into(), message])
    }

    fn hook_wiring(&self) -> HookWiring {
        HookWiring::CodexNotify
    }

    fn hook_events(&self) -> Vec<String> {
        vec![CODEX_NOTIFY_EVENT.to_string()]
    }

    fn hook_state(
        &self,
        event: &str,
        hook: &serde_json::Value,
    ) -> Result<Option<AgentState>, AgentError> {
        codex_state_for(event, hook)
    }

    fn conversation_named<'a>(
        &self,
        _event: &str,
        _hook: &'a serde_json::Value,
    ) -> Option<&'a str> {
        None
    }

    // `notify` says only that a turn ended.
    fn hook_exact(&self) -> &'static [AgentState] {
        &[AgentState::Idle]
    }

    fn screen_cannot_show(&self) -> &'static [AgentState] {
        &[]
    }

    fn says_nothing_new(&self, _recorded: AgentState, _state: Option<AgentState>) -> bool {
        false
    }

    fn trust(&self) -> Trust {
        Trust::Dialog
    }

    // Its footer hint "← for agents", drawn once its conversation is live (its input box
    // shows earlier, while it still checks the folder).
    fn started_without_asking(&self, screen: &str) -> bool {
        screen.lines().any(|l| l.contains("← for agents"))
    }

    // A thread its notify named was recorded: codex saved it.
    fn can_resume(
        &self,
        _home: &Path,
        store: &Store,
        session: &Session,
    ) -> Result<bool, StateError> {
        Ok(store.all_conversations()?.contains_key(&session.id))
    }

    // Its latest thread in the person's own folder may be the person's.
    fn resumes_in_person_folder(&self, _conversation: bool, _history: bool) -> bool {
        false
    }

    fn quit(&self) -> Quit {
        Quit::Typed("/quit")
    }

    fn has_cost_logs(&self) -> bool {
        true
    }

    // Its notify payload's `thread-id`, at the end of each of the person's turns; not the
    // title codex asks for in a thread of its own, which leaves no rollout.
    fn sandboxed(&self) -> Sandboxed {
        Sandboxed {
            config: &[".codex"],
            env: &["OPENAI_*", "CODEX_*"],
            moved_by: &[("CODEX_HOME", ".codex")],
            no_ask: &["--dangerously-bypass-approvals-and-sandbox"],
        }
    }

    fn log_named<'a>(&self, event: &str, hook: &'a serde_json::Value) -> Option<&'a str> {
        if event != CODEX_NOTIFY_EVENT || codex_notify_state(hook).is_none() {
            return None;
        }
        hook.get("thread-id").and_then(|v| v.as_str())
    }
}

/// The state codex's one event, its `notify` at the end of a turn, means.
pub fn codex_state_for(
    event: &str,
    payload: &serde_json::Value,
) -> Result<Option<AgentState>, AgentError> {
    match event {
        CODEX_NOTIFY_EVENT => Ok(codex_notify_state(payload)),
        other => shared_event(other, "codex-notify"),
    }
}

/// What codex's `notify` runs for a session: `orchestra event` with the payload codex
/// appends as the last argument (the session named here, not only in the environment).
pub fn codex_notify(orchestra: &Path, session_id: &str) -> Vec<String> {
    [
        &*orchestra.to_string_lossy(),
        "event",
        "--from-hook",
        "--session",
        session_id,
        CODEX_NOTIFY_EVENT,
    ]
    .map(str::to_string)
    .to_vec()
}

/// What codex's `notify` payload means. It says only that a turn ended
/// (`agent-turn-complete`); the title codex asks its model for after the first prompt runs
/// as a turn of a thread of its own and ends while the person's turn still runs, so that
/// one says nothing.
pub fn codex_notify_state(payload: &serde_json::Value) -> Option<AgentState> {
    if payload.get("type").and_then(|v| v.as_str()) != Some("agent-turn-complete") {
        return None;
    }
    let first_input = payload
        .get("input-messages")
        .and_then(|v| v.as_array())
        .and_then(|m| m.first())
        .and_then(|m| m.as_str())
        .unwrap_or("");
    if first_input.starts_with("Generate a concise, single-line task title") {
        return None;
    }
    Some(AgentState::Idle)
}

/// The event name `orchestra event` gets from codex's `notify`.
pub const CODEX_NOTIFY_EVENT: &str = "codex-notify";

/// `notify=[…]` for codex's `-c`: the value is TOML, each word a quoted string.
fn codex_notify_override(program: &[String]) -> String {
    let words = program
        .iter()
        .map(|w| toml::Value::String(w.clone()))
        .collect();
    format!("notify={}", toml::Value::Array(words))
}

/// codex's `-c` words naming one stdio MCP server, `name`, run as `argv` with `env`, its
/// `tools` the only ones offered and each approved in advance (`approve`: no prompt), for
/// this one run: the person's `config.toml` is neither read for it nor written.
pub fn mcp_overrides(
    name: &str,
    argv: &[String],
    env: &[(String, String)],
    tools: &[&str],
) -> Vec<String> {
    let text = |s: &str| toml::Value::String(s.to_string());
    let list =
        |words: &mut dyn Iterator<Item = &str>| toml::Value::Array(words.map(text).collect());
    let env: toml::map::Map<String, toml::Value> =
        env.iter().map(|(k, v)| (k.clone(), text(v))).collect();
    // `-c` takes a dotted key; a server name is a bare TOML key (letters, digits, _ and -),
    // so it needs no quoting.
    let key = format!("mcp_servers.{name}");
    [
        ("command", text(argv.first().map_or("", String::as_str))),
        ("args", list(&mut argv.iter().skip(1).map(String::as_str))),
        // An inline table: a dotted `env.KEY` would break on a key with a dot.
        ("env", toml::Value::Table(env)),
        ("enabled_tools", list(&mut tools.iter().copied())),
        ("default_tools_approval_mode", text("approve")),
    ]
    .into_iter()
    .flat_map(|(field, value)| {
        [
            "-c".to_string(),
            format!("{key}.{field}={}", inline(&value)),
        ]
    })
    .collect()
}

/// codex's `-c` words adding `text` to its instructions for this run (a developer message
/// of every request; its own instructions stay).
pub fn instructions_override(text: &str) -> Vec<String> {
    vec![
        "-c".to_string(),
        format!(
            "developer_instructions={}",
            toml::Value::String(text.to_string())
        ),
    ]
}

/// A TOML value on one line (`toml::Value`'s Display writes a table as one inline table).
fn inline(value: &toml::Value) -> String {
    match value {
        toml::Value::Table(t) => {
            let fields: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{}={}", toml::Value::String(k.clone()), inline(v)))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::of;
    use serde_json::json;

    #[test]
    fn the_mcp_server_is_given_as_codex_config_overrides_that_parse_back() {
        let argv = [
            r#"/opt/my "tools"/orchestra"#,
            "--socket=/tmp/s 1",
            "mcp",
            "--repo=/r",
        ]
        .map(String::from);
        let env = [("ORCHESTRA_HOME".to_string(), "/h/o.d\\x".to_string())];
        let words = mcp_overrides("orchestra", &argv, &env, &["dispatch", "status"]);
        // Each override is `-c key=value`, the value TOML as codex parses it.
        let mut table = toml::map::Map::new();
        for pair in words.chunks(2) {
            assert_eq!(pair[0], "-c");
            let (key, value) = pair[1].split_once('=').unwrap();
            let field = key.strip_prefix("mcp_servers.orchestra.").unwrap();
            let parsed: toml::Table = toml::from_str(&format!("v = {value}")).unwrap();
            table.insert(field.to_string(), parsed["v"].clone());
        }
        assert_eq!(table["command"].as_str(), Some(argv[0].as_str()));
        let args: Vec<&str> = table["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(args, ["--socket=/tmp/s 1", "mcp", "--repo=/r"]);
        assert_eq!(
            table["env"]["ORCHESTRA_HOME"].as_str(),
            Some(env[0].1.as_str())
        );
        assert_eq!(
            table["enabled_tools"].as_array().unwrap().len(),
            2,
            "{table:?}"
        );
        // Its tools run without asking: the one mode codex takes for that.
        assert_eq!(
            table["default_tools_approval_mode"].as_str(),
            Some("approve")
        );
        // The instructions, any text, are one TOML string.
        let text = "# Orchestrator\n\"quoted\" \\ and ''' lines\n";
        let words = instructions_override(text);
        assert_eq!(words[0], "-c");
        let (key, value) = words[1].split_once('=').unwrap();
        assert_eq!(key, "developer_instructions");
        let parsed: toml::Table = toml::from_str(&format!("v = {value}")).unwrap();
        assert_eq!(parsed["v"].as_str(), Some(text));
    }

    #[test]
    fn codex_notify_ends_a_turn_but_not_its_title_helper() {
        let fixtures = concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/tests/fixtures/screens/codex/0.171.0/notify"
        );
        let mut idle = 0;
        let mut helper = 0;
        for entry in std::fs::read_dir(fixtures).unwrap() {
            let payload: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap())
                    .unwrap();
            match codex_state_for("codex-notify", &payload).unwrap() {
                Some(AgentState::Idle) => idle += 1,
                None => helper += 1,
                other => panic!("{other:?} for {payload}"),
            }
        }
        assert_eq!((idle, helper), (4, 1), "the captured payloads");
        assert_eq!(
            codex_state_for("codex-notify", &json!({"type": "something-else"})).unwrap(),
            None
        );
        assert_eq!(
            codex_state_for("codex-notify", &serde_json::Value::Null).unwrap(),
            None
        );
    }

    #[test]
    fn codex_gets_its_notify_program_and_the_prompt_after_dashes() {
        let notify = codex_notify(Path::new("/opt/my \"tools\"/orchestra"), "abc123");
        let ctx = LaunchContext {
            agent_uuid: "",
            settings_file: Path::new("/s.json"),
            session_dir: Path::new("/s"),
            orchestra: Path::new("/opt/orchestra"),
            system_prompt: Some("not for codex"),
            resume: false,
            gemini_home: None,
            trust_worktree: false,
            notify: Some(&notify),
            opencode_config: None,
            fork_from: None,
        };
        let l = of(AgentKind::Codex).launch(
            &["codex".into(), "-a".into(), "on-request".into()],
            Some("-n is not an option here"),
            &ctx,
        );
        assert_eq!(l.argv[..3], ["codex", "-a", "on-request"]);
        assert_eq!(l.argv[3], "-c");
        let value: toml::Table = toml::from_str(&l.argv[4]).unwrap();
        let words: Vec<&str> = value["notify"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(
            words,
            [
                "/opt/my \"tools\"/orchestra",
                "event",
                "--from-hook",
                "--session",
                "abc123",
                "codex-notify"
            ]
        );
        assert_eq!(l.argv[5..], ["--", "-n is not an option here"]);
        assert_eq!(l.typed_prompt, None);
        let quiet = of(AgentKind::Codex).launch(
            &["codex".into()],
            None,
            &LaunchContext {
                notify: None,
                ..ctx
            },
        );
        assert_eq!(quiet.argv, ["codex"], "no hooks: nothing added");
    }
}
