//! Gemini CLI: its hooks, wired in a Gemini home of the session's own (home.rs), what
//! they mean, and its latest chat in the worktree resumed. What a session cost is read
//! from its chat records (cost.rs).

mod home;

use std::path::Path;

pub mod cost;
pub use home::*;

use crate::agent::{
    shared_event, Agent, AgentError, AgentKind, HookWiring, Launch, LaunchContext, Quit, Sandboxed,
    Trust,
};
use crate::state::{AgentState, Session, StateError, Store};

pub struct Gemini;

impl Agent for Gemini {
    fn kind(&self) -> AgentKind {
        AgentKind::Gemini
    }

    fn launch(&self, command: &[String], prompt: Option<&str>, ctx: &LaunchContext<'_>) -> Launch {
        let mut argv = command.to_vec();
        let mut env = Vec::new();
        if let Some(home) = ctx.gemini_home {
            env.push((
                "GEMINI_CLI_HOME".to_string(),
                home.to_string_lossy().into_owned(),
            ));
        }
        // Without it the CLI asks first, and runs no hooks in a folder it does not trust.
        if ctx.trust_worktree {
            env.push(("GEMINI_CLI_TRUST_WORKSPACE".to_string(), "true".to_string()));
        }
        // The session's Gemini home is its own, and its worktree a project of its own:
        // the latest chat there is the one it was in.
        if ctx.resume {
            argv.extend(["--resume".to_string(), "latest".to_string()]);
        }
        if let Some(p) = prompt {
            argv.extend(["--prompt-interactive".to_string(), p.to_string()]);
        }
        Launch {
            argv,
            typed_prompt: None,
            env,
        }
    }

    fn first_message(&self, message: String) -> Option<Vec<String>> {
        Some(vec!["--prompt-interactive".into(), message])
    }

    fn hook_wiring(&self) -> HookWiring {
        HookWiring::GeminiHome
    }

    fn hook_events(&self) -> Vec<String> {
        HOOK_EVENTS.iter().map(ToString::to_string).collect()
    }

    fn hook_state(
        &self,
        event: &str,
        hook: &serde_json::Value,
    ) -> Result<Option<AgentState>, AgentError> {
        gemini_state_for(event, hook)
    }

    fn conversation_named<'a>(
        &self,
        _event: &str,
        _hook: &'a serde_json::Value,
    ) -> Option<&'a str> {
        None
    }

    // BeforeAgent/BeforeTool/AfterTool, the ToolPermission notification, AfterAgent;
    // SessionEnd. An error ends with AfterAgent too: the screen says it.
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
        Trust::AtLaunch
    }

    fn started_without_asking(&self, _screen: &str) -> bool {
        true
    }

    // Its latest chat in the worktree, when it saved one in the session's Gemini home.
    fn can_resume(
        &self,
        home: &Path,
        _store: &Store,
        session: &Session,
    ) -> Result<bool, StateError> {
        Ok(cost::has_chat(
            &crate::paths::session_dir(home, &session.id).join(HOME_DIR),
            &session.worktree,
        ))
    }

    // Its latest chat in the person's own folder may be the person's.
    fn resumes_in_person_folder(&self, _conversation: bool, _history: bool) -> bool {
        false
    }

    fn quit(&self) -> Quit {
        Quit::Typed("/quit")
    }

    fn has_cost_logs(&self) -> bool {
        true
    }

    // Its session, named at its start and at each prompt.
    fn sandboxed(&self) -> Sandboxed {
        Sandboxed {
            config: &[".gemini"],
            env: &["GEMINI_*", "GOOGLE_*"],
            moved_by: &[],
            no_ask: &["--yolo"],
        }
    }

    fn log_named<'a>(&self, event: &str, hook: &'a serde_json::Value) -> Option<&'a str> {
        match event {
            "SessionStart" | "BeforeAgent" => hook.get("session_id").and_then(|v| v.as_str()),
            _ => None,
        }
    }
}

/// The state a Gemini CLI hook event means (0.61.0's events; [`HOOK_EVENTS`]
/// are the ones orchestra asks for).
pub fn gemini_state_for(
    event: &str,
    hook: &serde_json::Value,
) -> Result<Option<AgentState>, AgentError> {
    let field = |name: &str| hook.get(name).and_then(|v| v.as_str()).unwrap_or("");
    Ok(match event {
        // BeforeTool fires before the approval menu too: the Notification after it says so.
        "BeforeAgent" | "BeforeTool" | "AfterTool" => Some(AgentState::Busy),
        "Notification" if field("notification_type") == "ToolPermission" => {
            Some(AgentState::Waiting)
        }
        "Notification" => None,
        // The turn ended, also when it failed: the screen's "API Error" says error after
        // the hook's grace. A denied approval ends the turn with no hook (the screen again).
        "AfterAgent" | "SessionStart" => Some(AgentState::Idle),
        // `/clear` ends one conversation and starts the next in the same CLI.
        "SessionEnd" if matches!(field("reason"), "clear" | "logout") => None,
        "SessionEnd" => Some(AgentState::Exited),
        // Per-chunk model events and compression say nothing about the turn.
        "PreCompress" | "BeforeModel" | "AfterModel" | "BeforeToolSelection" => None,
        other => return shared_event(other, "a Gemini CLI hook event"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::claude::state_for;
    use crate::agent::of;
    use serde_json::json;

    #[test]
    fn gemini_events_map_to_states() {
        let none = serde_json::Value::Null;
        let state = |event: &str, hook: &serde_json::Value| gemini_state_for(event, hook).unwrap();
        for busy in ["BeforeAgent", "BeforeTool", "AfterTool"] {
            assert_eq!(state(busy, &none), Some(AgentState::Busy), "{busy}");
        }
        let permission = json!({"notification_type": "ToolPermission", "message": "Tool Confirm Shell Command requires execution"});
        assert_eq!(
            state("Notification", &permission),
            Some(AgentState::Waiting)
        );
        assert_eq!(
            state("Notification", &json!({"notification_type": "Other"})),
            None
        );
        assert_eq!(state("AfterAgent", &none), Some(AgentState::Idle));
        assert_eq!(
            state("SessionStart", &json!({"source": "clear"})),
            Some(AgentState::Idle)
        );
        assert_eq!(state("SessionEnd", &json!({"reason": "clear"})), None);
        assert_eq!(
            state("SessionEnd", &json!({"reason": "exit"})),
            Some(AgentState::Exited)
        );
        assert_eq!(state("PreCompress", &none), None);
        assert_eq!(state("pane-died", &none), Some(AgentState::Exited));
        assert_eq!(state("waiting", &none), Some(AgentState::Waiting));
        assert!(gemini_state_for("Stop", &none).is_err(), "a Claude event");
        assert!(state_for("BeforeAgent", &none).is_err(), "a Gemini event");
    }

    #[test]
    fn recorded_gemini_hook_json_maps_as_captured() {
        let dir = concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/tests/fixtures/screens/gemini/0.61.0/hooks"
        );
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let hook: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let event = hook["hook_event_name"].as_str().unwrap().to_string();
            let want = match event.as_str() {
                "BeforeAgent" | "BeforeTool" | "AfterTool" => Some(AgentState::Busy),
                "Notification" => Some(AgentState::Waiting),
                "AfterAgent" | "SessionStart" => Some(AgentState::Idle),
                "SessionEnd" => Some(AgentState::Exited),
                _ => None,
            };
            assert_eq!(
                gemini_state_for(&event, &hook).unwrap(),
                want,
                "{}",
                path.display()
            );
            seen += 1;
        }
        assert!(seen >= 10, "hook fixtures missing in {dir}");
    }

    #[test]
    fn gemini_gets_its_home_and_trust_and_the_prompt_to_run_first() {
        let mut ctx = LaunchContext {
            agent_uuid: "",
            settings_file: Path::new("/s/settings.json"),
            session_dir: Path::new("/s"),
            orchestra: Path::new("/opt/my tools/orchestra"),
            system_prompt: Some("be brief"),
            resume: false,
            gemini_home: Some(Path::new("/s/gemini-home")),
            trust_worktree: true,
            notify: None,
            opencode_config: None,
            fork_from: None,
        };
        let l = of(AgentKind::Gemini).launch(&["gemini".into()], Some("do it"), &ctx);
        assert_eq!(l.argv, ["gemini", "--prompt-interactive", "do it"]);
        assert_eq!(l.typed_prompt, None);
        let env = |l: &Launch| {
            l.env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            env(&l),
            [
                "GEMINI_CLI_HOME=/s/gemini-home",
                "GEMINI_CLI_TRUST_WORKSPACE=true"
            ]
        );
        ctx.gemini_home = None;
        ctx.trust_worktree = false;
        let bare = of(AgentKind::Gemini).launch(&["gemini".into()], None, &ctx);
        assert_eq!(bare.argv, ["gemini"]);
        assert!(bare.env.is_empty());
    }
}
