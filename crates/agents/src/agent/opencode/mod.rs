//! opencode: the plugin that reports its state (plugin.rs) in a config folder of the
//! session's own, what its events mean, and the session it named resumed.

pub mod cost;
mod plugin;

use std::path::Path;

pub use plugin::*;

use crate::agent::{
    shared_event, Agent, AgentError, AgentKind, HookWiring, Launch, LaunchContext, Quit, Sandboxed,
    Trust,
};
use crate::state::{AgentState, Session, StateError, Store};
use crate::tmux::Key;

pub struct Opencode;

impl Agent for Opencode {
    fn kind(&self) -> AgentKind {
        AgentKind::Opencode
    }

    fn launch(&self, command: &[String], prompt: Option<&str>, ctx: &LaunchContext<'_>) -> Launch {
        let mut argv = command.to_vec();
        let mut env = Vec::new();
        if let Some(dir) = ctx.opencode_config {
            env.push((
                "OPENCODE_CONFIG_DIR".to_string(),
                dir.to_string_lossy().into_owned(),
            ));
        }
        // A release that updated itself mid-session is not the one its screens were
        // proven on, and a shared session is the conversation on someone's server.
        env.push(("OPENCODE_DISABLE_AUTOUPDATE".to_string(), "1".to_string()));
        env.push(("OPENCODE_DISABLE_SHARE".to_string(), "1".to_string()));
        if ctx.resume {
            // The session its plugin named; else the worktree's last one (the
            // worktree is the session's own).
            if is_session_id(ctx.agent_uuid) {
                argv.extend(["-s".to_string(), ctx.agent_uuid.to_string()]);
            } else {
                argv.push("-c".to_string());
            }
        }
        if let Some(p) = prompt {
            // `--prompt=` keeps a prompt starting with `-` the prompt.
            argv.push(format!("--prompt={p}"));
        }
        Launch {
            argv,
            typed_prompt: None,
            env,
        }
    }

    fn first_message(&self, message: String) -> Option<Vec<String>> {
        Some(vec![format!("--prompt={message}")])
    }

    fn hook_wiring(&self) -> HookWiring {
        HookWiring::OpencodePlugin
    }

    fn hook_events(&self) -> Vec<String> {
        EVENTS.iter().map(|kind| event_name(kind)).collect()
    }

    fn hook_state(
        &self,
        event: &str,
        hook: &serde_json::Value,
    ) -> Result<Option<AgentState>, AgentError> {
        opencode_state_for(event, hook)
    }

    // It names its session only to its plugin: a restart resumes it by that id.
    fn conversation_named<'a>(&self, event: &str, hook: &'a serde_json::Value) -> Option<&'a str> {
        if event != "opencode-session.created" {
            return None;
        }
        hook.get("sessionID")
            .and_then(|v| v.as_str())
            .filter(|s| is_session_id(s))
    }

    // session.status busy/idle, permission.asked, session.error. No event at exit.
    fn hook_exact(&self) -> &'static [AgentState] {
        &[
            AgentState::Busy,
            AgentState::Waiting,
            AgentState::Idle,
            AgentState::Error,
        ]
    }

    // Its error block differs from a prompt's only by colour, so after one its screen
    // reads idle.
    fn screen_cannot_show(&self) -> &'static [AgentState] {
        &[AgentState::Error]
    }

    // The idle that follows session.error ends the failed turn, and the screen cannot
    // show the error (`rules.toml`).
    fn says_nothing_new(&self, recorded: AgentState, state: Option<AgentState>) -> bool {
        recorded == AgentState::Error && state == Some(AgentState::Idle)
    }

    fn trust(&self) -> Trust {
        Trust::NotAsked
    }

    fn started_without_asking(&self, _screen: &str) -> bool {
        true
    }

    // The session its plugin named at the start.
    fn can_resume(
        &self,
        _home: &Path,
        _store: &Store,
        session: &Session,
    ) -> Result<bool, StateError> {
        Ok(is_session_id(
            session.agent_uuid.as_deref().unwrap_or_default(),
        ))
    }

    // Its latest session in the person's own folder may be the person's.
    fn resumes_in_person_folder(&self, _conversation: bool, _history: bool) -> bool {
        false
    }

    // Ctrl+C clears a half-typed prompt, then exits at an empty one.
    fn quit(&self) -> Quit {
        Quit::Keys(&[Key::Escape, Key::CtrlC, Key::CtrlC])
    }

    // Its database keeps each message's tokens.
    fn has_cost_logs(&self) -> bool {
        true
    }

    fn sandboxed(&self) -> Sandboxed {
        Sandboxed {
            config: &[".config/opencode", ".local/share/opencode"],
            env: &["OPENCODE_*", "ANTHROPIC_*", "OPENAI_*"],
            moved_by: &[],
            no_ask: &[],
        }
    }

    fn log_named<'a>(&self, _event: &str, _hook: &'a serde_json::Value) -> Option<&'a str> {
        None
    }
}

/// The state an opencode bus event means, as its plugin (plugin.rs) passes it on:
/// `opencode-<type>` with the event's properties (1.18.33's events).
pub fn opencode_state_for(
    event: &str,
    hook: &serde_json::Value,
) -> Result<Option<AgentState>, AgentError> {
    let Some(kind) = event.strip_prefix("opencode-") else {
        return shared_event(event, "an opencode plugin event (opencode-<type>)");
    };
    let status = hook
        .pointer("/status/type")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    Ok(match kind {
        // A retry is the same turn, still at work (its countdown in the footer).
        "session.status" if matches!(status, "busy" | "retry") => Some(AgentState::Busy),
        // Also after a failed turn: `record` keeps the error that came first.
        "session.status" if status == "idle" => Some(AgentState::Idle),
        "session.status" => None,
        "session.idle" => Some(AgentState::Idle),
        "session.error" => Some(AgentState::Error),
        "permission.asked" => Some(AgentState::Waiting),
        // A rejection ends the turn: its session.status idle follows.
        "permission.replied" if hook.get("reply").and_then(|v| v.as_str()) == Some("reject") => {
            None
        }
        "permission.replied" => Some(AgentState::Busy),
        // It names the session (`record` keeps its id), and says nothing of the turn.
        "session.created" => None,
        other => {
            return Err(AgentError::BadInput(format!(
                "unknown opencode event {other:?}: one of {}",
                EVENTS.join(", ")
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::asked::Asked;
    use crate::agent::of;
    use serde_json::json;

    /// The events opencode 1.18.33's plugin saw for one turn (a bash call asked and
    /// allowed once), then a turn that failed with an API 400.
    #[test]
    fn opencode_plugin_events_map_to_states() {
        let file = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/screens/opencode/1.18.33/plugin-events/events.jsonl");
        let text = std::fs::read_to_string(file).unwrap();
        let mut states = Vec::new();
        let mut asked_for = None;
        for line in text.lines() {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            if line["kind"] != "event" {
                continue;
            }
            let kind = line["data"]["type"].as_str().unwrap();
            if !EVENTS.contains(&kind) {
                continue;
            }
            let props = &line["data"]["properties"];
            let event = event_name(kind);
            let state = Opencode.hook_state(&event, props).unwrap();
            if kind == "permission.asked" {
                asked_for = crate::agent::asked::from_hook(props);
            }
            // What `record` keeps: the idle after an error says nothing.
            let recorded = states.last().copied().unwrap_or(AgentState::Unknown);
            if let Some(state) = state.filter(|s| !Opencode.says_nothing_new(recorded, Some(*s))) {
                if states.last() != Some(&state) {
                    states.push(state);
                }
            }
        }
        use AgentState::{Busy, Error, Idle, Waiting};
        assert_eq!(states, [Busy, Waiting, Busy, Idle, Busy, Error]);
        assert_eq!(asked_for, Some(Asked::Run("touch by-bash.txt".into())));
        let rejected = json!({"reply": "reject"});
        assert_eq!(
            Opencode
                .hook_state("opencode-permission.replied", &rejected)
                .unwrap(),
            None,
            "its idle follows"
        );
        let retry = json!({"status": {"type": "retry", "attempt": 2}});
        assert_eq!(
            Opencode
                .hook_state("opencode-session.status", &retry)
                .unwrap(),
            Some(Busy)
        );
        assert!(Opencode
            .hook_state("opencode-message.part.delta", &retry)
            .is_err());
        assert!(Opencode.hook_state("Stop", &retry).is_err());
        assert_eq!(
            Opencode.hook_state("pane-died", &retry).unwrap(),
            Some(AgentState::Exited)
        );
    }

    #[test]
    fn opencode_gets_its_config_folder_the_prompt_and_its_session_back() {
        let mut ctx = LaunchContext {
            agent_uuid: "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            settings_file: Path::new("/s/settings.json"),
            session_dir: Path::new("/s"),
            orchestra: Path::new("/opt/orchestra"),
            system_prompt: Some("not for opencode"),
            resume: false,
            gemini_home: None,
            trust_worktree: true,
            notify: None,
            opencode_config: Some(Path::new("/s/opencode")),
            fork_from: None,
        };
        let l = of(AgentKind::Opencode).launch(&["opencode".into()], Some("-x do it"), &ctx);
        assert_eq!(l.argv, ["opencode", "--prompt=-x do it"]);
        assert_eq!(l.typed_prompt, None);
        assert_eq!(
            l.env[0],
            ("OPENCODE_CONFIG_DIR".to_string(), "/s/opencode".to_string())
        );
        ctx.resume = true;
        ctx.opencode_config = None;
        let l = of(AgentKind::Opencode).launch(&["opencode".into()], None, &ctx);
        assert_eq!(
            l.argv,
            ["opencode", "-c"],
            "no session id known: the last one"
        );
        assert!(l.env.iter().all(|(k, _)| k != "OPENCODE_CONFIG_DIR"));
        ctx.agent_uuid = "ses_dcae52746ffeXlceujJWQ7dMNb";
        let l = of(AgentKind::Opencode).launch(&["opencode".into()], None, &ctx);
        assert_eq!(l.argv, ["opencode", "-s", "ses_dcae52746ffeXlceujJWQ7dMNb"]);
    }
}
