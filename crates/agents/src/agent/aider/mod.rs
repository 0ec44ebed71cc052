//! aider: no hooks, but a notifications command at the end of each turn (`orchestra
//! event`, whose word the screen then settles), its history files in the session's
//! folder, read back to resume; its prompt is typed in.

use std::path::Path;

use crate::agent::{
    Agent, AgentError, AgentKind, HookWiring, Launch, LaunchContext, Quit, Sandboxed, Trust,
};
use crate::agent::{AIDER_CHAT_HISTORY, AIDER_INPUT_HISTORY};
use crate::state::{AgentState, Session, StateError, Store};

pub struct Aider;

impl Agent for Aider {
    fn kind(&self) -> AgentKind {
        AgentKind::Aider
    }

    fn launch(&self, command: &[String], prompt: Option<&str>, ctx: &LaunchContext<'_>) -> Launch {
        let mut argv = command.to_vec();
        argv.extend(aider_args(ctx.orchestra, ctx.session_dir));
        if ctx.resume {
            argv.push("--restore-chat-history".to_string());
        }
        Launch {
            argv,
            // aider's `--message` runs one turn and exits; typing keeps it interactive.
            typed_prompt: prompt.map(str::to_string),
            env: Vec::new(),
        }
    }

    fn first_message(&self, _message: String) -> Option<Vec<String>> {
        None
    }

    // Its notifications command is on its command line.
    fn hook_wiring(&self) -> HookWiring {
        HookWiring::CommandLine
    }

    // Its notification is no state: `hooks::settle_aider` reads that off its screen.
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

    // Its notification says when; what (idle, a question, an error) is read from the
    // screen.
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

    // Its chat history file, in the session's folder.
    fn can_resume(
        &self,
        _home: &Path,
        _store: &Store,
        _session: &Session,
    ) -> Result<bool, StateError> {
        Ok(true)
    }

    fn resumes_in_person_folder(&self, _conversation: bool, history: bool) -> bool {
        history
    }

    fn quit(&self) -> Quit {
        Quit::Typed("/exit")
    }

    // Its usage is written nowhere this reads.
    fn has_cost_logs(&self) -> bool {
        false
    }

    fn sandboxed(&self) -> Sandboxed {
        Sandboxed {
            config: &[
                ".aider.conf.yml",
                ".aider.model.settings.yml",
                ".aider.model.metadata.json",
            ],
            env: &[
                "AIDER_*",
                "OPENAI_*",
                "ANTHROPIC_*",
                "GEMINI_API_KEY",
                "OPENROUTER_API_KEY",
                "DEEPSEEK_API_KEY",
            ],
            moved_by: &[],
            no_ask: &["--yes-always"],
        }
    }

    fn log_named<'a>(&self, _event: &str, _hook: &'a serde_json::Value) -> Option<&'a str> {
        None
    }
}

/// The event aider's notifications command reports: its turn ended and it waits for the
/// person, at its prompt or with a question (the command cannot say which).
pub const AIDER_NOTIFICATION: &str = "aider-notification";

/// What orchestra adds to aider's command line. aider has no hooks, but runs a command
/// at the end of each turn when it first waits for the person: `orchestra event`.
/// It keeps the worktree as the branch has it: its history files go to the session's
/// folder, and it does not ask (first thing, before the prompt that the task is typed
/// into) to add its files to .gitignore.
fn aider_args(orchestra: &Path, session_dir: &Path) -> Vec<String> {
    let exe = shell_words::quote(&orchestra.to_string_lossy()).into_owned();
    let file = |name: &str| session_dir.join(name).to_string_lossy().into_owned();
    vec![
        "--notifications".to_string(),
        "--notifications-command".to_string(),
        format!("{exe} event --from-hook {AIDER_NOTIFICATION}"),
        "--no-gitignore".to_string(),
        "--input-history-file".to_string(),
        file(AIDER_INPUT_HISTORY),
        "--chat-history-file".to_string(),
        file(AIDER_CHAT_HISTORY),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::of;

    #[test]
    fn aider_reports_its_turns_and_keeps_the_worktree_clean() {
        let ctx = LaunchContext {
            agent_uuid: "",
            settings_file: Path::new("/sessions/s 1/settings.json"),
            session_dir: Path::new("/sessions/s 1"),
            orchestra: Path::new("/opt/my tools/orchestra"),
            system_prompt: Some("worker rules"),
            resume: false,
            gemini_home: None,
            trust_worktree: true,
            notify: None,
            opencode_config: None,
            fork_from: None,
        };
        let a = of(AgentKind::Aider).launch(
            &["aider".into(), "--model".into(), "x".into()],
            Some("line one\nline two"),
            &ctx,
        );
        assert_eq!(
            a.argv,
            [
                "aider",
                "--model",
                "x",
                "--notifications",
                "--notifications-command",
                "'/opt/my tools/orchestra' event --from-hook aider-notification",
                "--no-gitignore",
                "--input-history-file",
                "/sessions/s 1/aider.input.history",
                "--chat-history-file",
                "/sessions/s 1/aider.chat.history.md",
            ]
        );
        assert_eq!(a.typed_prompt.as_deref(), Some("line one\nline two"));
        let resumed = of(AgentKind::Aider).launch(
            &["aider".into()],
            None,
            &LaunchContext {
                resume: true,
                ..ctx
            },
        );
        assert_eq!(
            resumed.argv.last().map(String::as_str),
            Some("--restore-chat-history")
        );
        assert_eq!(resumed.typed_prompt, None);
    }
}
