//! Claude Code: its session id and settings on the command line, its hooks (hooks.rs),
//! the settings file that wires them.

pub mod cost;
pub mod hooks;

use std::path::Path;

pub use hooks::{conversation_started, state_for, CLAUDE_PERSON_TOOLS};

use crate::agent::{
    Agent, AgentError, AgentKind, HookWiring, Launch, LaunchContext, Quit, Sandboxed, Trust,
};
use crate::state::{AgentState, Session, StateError, Store};

pub struct Claude;

impl Agent for Claude {
    fn kind(&self) -> AgentKind {
        AgentKind::Claude
    }

    fn launch(&self, command: &[String], prompt: Option<&str>, ctx: &LaunchContext<'_>) -> Launch {
        let mut argv = command.to_vec();
        let session_flag = if ctx.resume {
            "--resume"
        } else {
            "--session-id"
        };
        // A fork reads the earlier conversation and goes on under its own id (claude
        // takes `--session-id` beside `--resume` only with `--fork-session`).
        if let Some(from) = ctx.fork_from.filter(|_| !ctx.resume) {
            argv.extend([
                "--resume".to_string(),
                from.to_string(),
                "--fork-session".to_string(),
            ]);
        }
        argv.extend([
            session_flag.to_string(),
            ctx.agent_uuid.to_string(),
            "--settings".to_string(),
            ctx.settings_file.to_string_lossy().into_owned(),
        ]);
        if let Some(text) = ctx.system_prompt {
            argv.extend(["--append-system-prompt".to_string(), text.to_string()]);
        }
        if let Some(p) = prompt {
            argv.extend(["--".to_string(), claude_prompt_operand(p)]);
        }
        Launch {
            argv,
            typed_prompt: None,
            env: Vec::new(),
        }
    }

    fn first_message(&self, message: String) -> Option<Vec<String>> {
        Some(vec![message])
    }

    fn hook_wiring(&self) -> HookWiring {
        HookWiring::ClaudeSettings
    }

    fn hook_events(&self) -> Vec<String> {
        CLAUDE_HOOKS
            .iter()
            .map(|(event, _)| event.to_string())
            .collect()
    }

    fn hook_state(
        &self,
        event: &str,
        hook: &serde_json::Value,
    ) -> Result<Option<AgentState>, AgentError> {
        state_for(event, hook)
    }

    // `/clear` and `/resume` move the session to another conversation: a restart
    // resumes the one the person was in.
    fn conversation_named<'a>(&self, event: &str, hook: &'a serde_json::Value) -> Option<&'a str> {
        conversation_started(event, hook)
    }

    // UserPromptSubmit/PreToolUse/PostToolUse, PermissionRequest and the question
    // tools, Stop; SessionEnd. An error is said only from 2.1.78 on (StopFailure).
    fn hook_exact(&self) -> &'static [AgentState] {
        &[
            AgentState::Busy,
            AgentState::Waiting,
            AgentState::Idle,
            AgentState::Exited,
        ]
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

    // Its empty input box.
    fn started_without_asking(&self, screen: &str) -> bool {
        screen.lines().any(|l| l.trim_end() == "❯")
    }

    // Its conversation, by id.
    fn can_resume(
        &self,
        _home: &Path,
        _store: &Store,
        session: &Session,
    ) -> Result<bool, StateError> {
        Ok(session.agent_uuid.is_some())
    }

    fn resumes_in_person_folder(&self, conversation: bool, _history: bool) -> bool {
        conversation
    }

    fn quit(&self) -> Quit {
        Quit::Typed("/exit")
    }

    fn can_fork(&self) -> bool {
        true
    }

    fn has_cost_logs(&self) -> bool {
        true
    }

    // Its log is named by its recorded uuid (`cost::refresh`).
    fn sandboxed(&self) -> Sandboxed {
        Sandboxed {
            config: &[".claude", ".claude.json"],
            env: &[
                "ANTHROPIC_*",
                "CLAUDE_*",
                "DISABLE_TELEMETRY",
                "DISABLE_AUTOUPDATER",
                "DISABLE_ERROR_REPORTING",
            ],
            moved_by: &[("CLAUDE_CONFIG_DIR", ".claude")],
            no_ask: &["--dangerously-skip-permissions"],
        }
    }

    fn log_named<'a>(&self, _event: &str, _hook: &'a serde_json::Value) -> Option<&'a str> {
        None
    }
}

/// The prompt as claude's last argument. `--` keeps a prompt starting with `-` from being
/// read as an option, but claude still takes a first operand that names one of its
/// subcommands for that subcommand, `--` or not (measured: `claude -- mcp` prints the mcp
/// help on 2.0.77 and 2.1.332, and 2.0.77 runs its self-updater for the prompt `update`).
/// Subcommand names are single words, so a prompt without white space gets a trailing
/// space, which no subcommand name has and the model does not care about.
fn claude_prompt_operand(prompt: &str) -> String {
    if prompt.contains(char::is_whitespace) {
        prompt.to_string()
    } else {
        format!("{prompt} ")
    }
}

/// The Claude Code hook events that report state, and the release that introduced each
/// (a release refuses a whole settings file naming an event it does not know).
const CLAUDE_HOOKS: &[(&str, (u32, u32, u32))] = &[
    ("UserPromptSubmit", (0, 0, 0)),
    ("PreToolUse", (0, 0, 0)),
    ("PostToolUse", (0, 0, 0)),
    ("PermissionRequest", (0, 0, 0)),
    ("Notification", (0, 0, 0)),
    ("Stop", (0, 0, 0)),
    ("SessionEnd", (0, 0, 0)),
    // Also says which conversation the session is in now (`/clear`, `/resume`).
    ("SessionStart", (0, 0, 0)),
    ("StopFailure", (2, 1, 78)),
];

/// The settings file passed with `--settings`: hooks that call `orchestra event` for every
/// state-bearing event this release of the CLI knows. An unknown release gets the events
/// every 2.x release has.
pub fn claude_settings(orchestra: &Path, version: Option<(u32, u32, u32)>) -> serde_json::Value {
    let exe = shell_words::quote(&orchestra.to_string_lossy()).into_owned();
    claude_hooks(version, |event| format!("{exe} event --from-hook {event}"))
}

/// The settings of a claude session on a remote host: the same hooks (those every 2.x
/// release has: the host's claude release is not asked), calling the host's orchestra
/// at `orchestra` with `--remote`. A binary removed or replaced by one that does not know
/// `--remote` must not block the agent or print into its screen, so the command says
/// nothing and exits 0 whatever happens.
pub fn claude_remote_settings(orchestra: &str) -> serde_json::Value {
    let exe = shell_words::quote(orchestra).into_owned();
    claude_hooks(None, |event| {
        format!("{exe} event --from-hook --remote {event} >/dev/null 2>&1 || true")
    })
}

/// The `--mcp-config` file naming one stdio server, `name`, run as `argv` with `env`.
pub fn mcp_config(name: &str, argv: &[String], env: &[(String, String)]) -> serde_json::Value {
    let env: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
        .collect();
    serde_json::json!({ "mcpServers": { name: {
        "type": "stdio",
        "command": argv.first(),
        "args": argv.get(1..).unwrap_or_default(),
        "env": env,
    }}})
}

/// claude's words for that config file and for the tools of server `name` it may call
/// without asking (`mcp__NAME__TOOL`). Both options take several values, so they go
/// before the launch's other options, which end their lists.
pub fn mcp_args(config: &Path, name: &str, tools: &[&str]) -> Vec<String> {
    let allowed: Vec<String> = tools.iter().map(|t| format!("mcp__{name}__{t}")).collect();
    vec![
        "--mcp-config".to_string(),
        config.to_string_lossy().into_owned(),
        "--allowedTools".to_string(),
        allowed.join(","),
    ]
}

fn claude_hooks(
    version: Option<(u32, u32, u32)>,
    command: impl Fn(&str) -> String,
) -> serde_json::Value {
    let mut hooks = serde_json::Map::new();
    for (event, since) in CLAUDE_HOOKS {
        let known = match version {
            Some(v) => v >= *since,
            None => *since == (0, 0, 0),
        };
        if !known {
            continue;
        }
        hooks.insert(
            event.to_string(),
            serde_json::json!([{ "hooks": [{
                "type": "command",
                "command": command(event),
                "timeout": 10
            }]}]),
        );
    }
    serde_json::json!({ "hooks": hooks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{of, parse_version};

    #[test]
    fn hook_events_follow_the_release() {
        let events = |v| {
            let s = claude_settings(Path::new("/opt/my tools/orchestra"), v);
            let mut keys: Vec<String> = s["hooks"].as_object().unwrap().keys().cloned().collect();
            keys.sort();
            (keys, s)
        };
        let (old, _) = events(Some((2, 0, 77)));
        assert!(!old.contains(&"StopFailure".to_string()));
        assert!(old.contains(&"PermissionRequest".to_string()));
        let (new, settings) = events(Some((2, 1, 332)));
        assert!(new.contains(&"StopFailure".to_string()));
        let command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert_eq!(command, "'/opt/my tools/orchestra' event --from-hook Stop");
        assert_eq!(events(None).0, old);
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1, 332)));
        assert_eq!(parse_version("v10.2"), None);
    }

    #[test]
    fn claude_gets_its_session_settings_and_prompt_last() {
        let ctx = LaunchContext {
            agent_uuid: "u-1",
            settings_file: Path::new("/s.json"),
            session_dir: Path::new("/sessions/s 1"),
            orchestra: Path::new("/opt/my tools/orchestra"),
            system_prompt: None,
            resume: false,
            gemini_home: Some(Path::new("/s/gemini-home")),
            trust_worktree: true,
            notify: None,
            opencode_config: None,
            fork_from: None,
        };
        let l = of(AgentKind::Claude).launch(
            &["claude".into(), "--model".into(), "x".into()],
            Some("do it"),
            &ctx,
        );
        assert_eq!(
            l.argv,
            [
                "claude",
                "--model",
                "x",
                "--session-id",
                "u-1",
                "--settings",
                "/s.json",
                "--",
                "do it"
            ]
        );
        assert_eq!(l.typed_prompt, None);
        assert!(l.env.is_empty(), "{:?}", l.env);
        // A fork reads the earlier conversation under its own id; a restart of the fork
        // resumes its own.
        let forked = LaunchContext {
            fork_from: Some("u-0"),
            ..ctx
        };
        let l = of(AgentKind::Claude).launch(&["claude".into()], None, &forked);
        assert_eq!(
            l.argv[..6],
            [
                "claude",
                "--resume",
                "u-0",
                "--fork-session",
                "--session-id",
                "u-1"
            ]
        );
        let again = LaunchContext {
            resume: true,
            ..forked
        };
        let l = of(AgentKind::Claude).launch(&["claude".into()], None, &again);
        assert_eq!(l.argv[..3], ["claude", "--resume", "u-1"]);
        assert!(!l.argv.contains(&"--fork-session".to_string()));
        for (prompt, operand) in [
            ("mcp", "mcp "),
            ("--version", "--version "),
            ("-x y", "-x y"),
        ] {
            let l = of(AgentKind::Claude).launch(&["claude".into()], Some(prompt), &ctx);
            assert_eq!(l.argv[l.argv.len() - 2..], ["--", operand], "{prompt:?}");
        }
    }
}
