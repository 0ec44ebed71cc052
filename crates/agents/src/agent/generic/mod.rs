//! Any other program: its prompt typed in once it has drawn something, its screen read
//! by output activity (unless agents.toml gives it rules), Ctrl+C to quit.

use std::path::Path;

use crate::agent::{
    Agent, AgentError, AgentKind, HookWiring, Launch, LaunchContext, Quit, Sandboxed, Trust,
};
use crate::state::{AgentState, Session, StateError, Store};
use crate::tmux::Key;

pub struct Generic;

impl Agent for Generic {
    fn kind(&self) -> AgentKind {
        AgentKind::Generic
    }

    fn launch(&self, command: &[String], prompt: Option<&str>, _ctx: &LaunchContext<'_>) -> Launch {
        Launch {
            argv: command.to_vec(),
            typed_prompt: prompt.map(str::to_string),
            env: Vec::new(),
        }
    }

    fn first_message(&self, _message: String) -> Option<Vec<String>> {
        None
    }

    fn hook_wiring(&self) -> HookWiring {
        HookWiring::CommandLine
    }

    fn hook_events(&self) -> Vec<String> {
        Vec::new()
    }

    // Claude Code's hooks, for a kind without its own.
    fn hook_state(
        &self,
        event: &str,
        hook: &serde_json::Value,
    ) -> Result<Option<AgentState>, AgentError> {
        crate::agent::claude::state_for(event, hook)
    }

    fn conversation_named<'a>(
        &self,
        _event: &str,
        _hook: &'a serde_json::Value,
    ) -> Option<&'a str> {
        None
    }

    fn hook_exact(&self) -> &'static [AgentState] {
        &[]
    }

    fn screen_cannot_show(&self) -> &'static [AgentState] {
        &[]
    }

    fn says_nothing_new(&self, _recorded: AgentState, _state: Option<AgentState>) -> bool {
        false
    }

    fn trust(&self) -> Trust {
        Trust::NotAsked
    }

    fn started_without_asking(&self, _screen: &str) -> bool {
        true
    }

    fn can_resume(
        &self,
        _home: &Path,
        _store: &Store,
        _session: &Session,
    ) -> Result<bool, StateError> {
        Ok(false)
    }

    fn resumes_in_person_folder(&self, _conversation: bool, _history: bool) -> bool {
        false
    }

    fn quit(&self) -> Quit {
        Quit::Keys(&[Key::CtrlC])
    }

    fn has_cost_logs(&self) -> bool {
        false
    }

    fn sandboxed(&self) -> Sandboxed {
        Sandboxed {
            config: &[],
            env: &[],
            moved_by: &[],
            no_ask: &[],
        }
    }

    fn log_named<'a>(&self, _event: &str, _hook: &'a serde_json::Value) -> Option<&'a str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::of;

    #[test]
    fn a_generic_agent_gets_its_prompt_typed() {
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
        let g = of(AgentKind::Generic).launch(&["bash".into()], Some("echo hi"), &ctx);
        assert_eq!(g.argv, ["bash"]);
        assert_eq!(g.typed_prompt.as_deref(), Some("echo hi"));
    }
}
