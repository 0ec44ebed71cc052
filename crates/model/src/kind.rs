//! What kind of agent a session runs, and how it takes typed text.

use std::path::Path;

/// Recorded and shown as its name (`claude`, …, `generic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    Claude,
    Codex,
    Gemini,
    Aider,
    Opencode,
    Generic,
}

/// Where aider keeps what was typed and said, in the session's folder.
pub const AIDER_INPUT_HISTORY: &str = "aider.input.history";
pub const AIDER_CHAT_HISTORY: &str = "aider.chat.history.md";

impl AgentKind {
    /// The files in the session's folder this kind keeps its history in (aider's; claude
    /// keeps its own conversations): what a restart into a new folder carries over.
    pub fn history_files(self) -> &'static [&'static str] {
        match self {
            AgentKind::Aider => &[AIDER_INPUT_HISTORY, AIDER_CHAT_HISTORY],
            _ => &[],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Aider => "aider",
            AgentKind::Opencode => "opencode",
            AgentKind::Generic => "generic",
        }
    }

    pub const ALL: [AgentKind; 6] = [
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Aider,
        AgentKind::Opencode,
        AgentKind::Generic,
    ];

    pub fn parse(text: &str) -> Option<AgentKind> {
        AgentKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// How this kind takes text typed into it (briefings, typed prompts, exit commands).
    pub fn typing(self) -> Typing {
        match self {
            AgentKind::Claude => Typing::Paste,
            _ => Typing::Natural,
        }
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
            AgentKind::Opencode,
        ]
        .into_iter()
        .find(|k| name.starts_with(k.as_str()))
        .unwrap_or(AgentKind::Generic)
    }
}

/// How a program takes typed text best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    /// Always one bracketed paste: the program then knows where the text ends, so the
    /// Enter after it is a key (claude, under load, drops an Enter that follows a fast
    /// unbracketed burst, or keeps it as a newline).
    Paste,
    /// A short single line as if typed; several lines or a long text as one bracketed
    /// paste, so newlines do not submit (some programs ignore an Enter right after a
    /// paste).
    Natural,
}
