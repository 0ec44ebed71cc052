//! Agent kinds: how each is launched and how its prompt reaches it. Screen rules and hook
//! wiring per kind live here too, as data.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    Claude,
    Codex,
    Gemini,
    Aider,
    Generic,
}

impl AgentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Aider => "aider",
            AgentKind::Generic => "generic",
        }
    }

    pub fn parse(text: &str) -> Option<AgentKind> {
        [
            AgentKind::Claude,
            AgentKind::Codex,
            AgentKind::Gemini,
            AgentKind::Aider,
            AgentKind::Generic,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }

    /// The kind a program's file name suggests (`/opt/bin/claude` → claude); anything
    /// unknown is generic.
    pub fn from_program(program: &str) -> AgentKind {
        let name = Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        [
            AgentKind::Claude,
            AgentKind::Codex,
            AgentKind::Gemini,
            AgentKind::Aider,
        ]
        .into_iter()
        .find(|k| name.starts_with(k.as_str()))
        .unwrap_or(AgentKind::Generic)
    }
}

/// What to run, and the prompt to type in afterwards for agents that take none on their
/// command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub typed_prompt: Option<String>,
}

/// Per-session facts a launch may need.
pub struct LaunchContext<'a> {
    pub agent_uuid: &'a str,
    pub settings_file: &'a Path,
}

/// The argv for `kind`, starting from the user's command (`program` plus its own
/// arguments) and ending with the prompt where the agent takes one.
pub fn launch(
    kind: AgentKind,
    command: &[String],
    prompt: Option<&str>,
    ctx: &LaunchContext<'_>,
) -> Launch {
    let mut argv = command.to_vec();
    let mut typed_prompt = None;
    match kind {
        AgentKind::Claude => {
            argv.extend([
                "--session-id".to_string(),
                ctx.agent_uuid.to_string(),
                "--settings".to_string(),
                ctx.settings_file.to_string_lossy().into_owned(),
            ]);
            argv.extend(prompt.map(str::to_string));
        }
        AgentKind::Codex => argv.extend(prompt.map(str::to_string)),
        AgentKind::Gemini => {
            if let Some(p) = prompt {
                argv.extend(["--prompt-interactive".to_string(), p.to_string()]);
            }
        }
        // aider's `--message` runs one turn and exits; typing keeps it interactive.
        AgentKind::Aider | AgentKind::Generic => typed_prompt = prompt.map(str::to_string),
    }
    Launch { argv, typed_prompt }
}

/// The settings file passed with `--settings`: the hooks that report state.
pub fn claude_settings() -> serde_json::Value {
    serde_json::json!({ "hooks": {} })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_programs() {
        assert_eq!(
            AgentKind::from_program("/usr/local/bin/claude"),
            AgentKind::Claude
        );
        assert_eq!(AgentKind::from_program("codex"), AgentKind::Codex);
        assert_eq!(AgentKind::from_program("bash"), AgentKind::Generic);
        assert_eq!(AgentKind::parse("aider"), Some(AgentKind::Aider));
        assert_eq!(AgentKind::parse("vim"), None);
    }

    #[test]
    fn claude_gets_its_session_settings_and_prompt_last() {
        let ctx = LaunchContext {
            agent_uuid: "u-1",
            settings_file: Path::new("/s.json"),
        };
        let l = launch(
            AgentKind::Claude,
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
                "do it"
            ]
        );
        assert_eq!(l.typed_prompt, None);
        let g = launch(AgentKind::Generic, &["bash".into()], Some("echo hi"), &ctx);
        assert_eq!(g.argv, ["bash"]);
        assert_eq!(g.typed_prompt.as_deref(), Some("echo hi"));
    }
}
