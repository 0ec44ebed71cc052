//! Agent kinds: the [`Agent`] trait, the questions the use cases ask of a kind, answered
//! by each kind in its own folder (claude/, codex/, gemini/, aider/, opencode/, generic/):
//! how it is launched, what its hook events mean, how it resumes and quits. The screen
//! rules of every kind are data (rules.toml), read by rules.rs.

pub mod aider;
pub mod asked;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod generic;
pub mod menu;
pub mod opencode;
pub mod rules;

use std::path::Path;

use crate::state::{AgentState, Session, StateError, Store};
use crate::tmux::Key;

pub use aider::AIDER_NOTIFICATION;
pub use claude::{claude_remote_settings, claude_settings};
pub use codex::{codex_notify, codex_notify_state, CODEX_NOTIFY_EVENT};

/// Everything the use cases ask of one kind of agent. Each kind answers in its own
/// folder, and [`of`] gives a kind's answers: a new kind is one folder, one arm there,
/// and the compiler then names every question it has yet to answer (no method has a
/// default).
pub trait Agent: Sync {
    /// The kind that answers.
    fn kind(&self) -> AgentKind;

    /// The argv for this agent, starting from the person's command (`program` plus its
    /// own arguments) and ending with the prompt where the agent takes one.
    fn launch(&self, command: &[String], prompt: Option<&str>, ctx: &LaunchContext<'_>) -> Launch;

    /// The words a first message goes in at the end of its command line (an
    /// orchestrator's opening); `None` for an agent that takes none there.
    fn first_message(&self, message: String) -> Option<Vec<String>>;

    /// Where its hooks are wired: what dispatch writes into the session's folder.
    fn hook_wiring(&self) -> HookWiring;

    /// The events its hooks call `orchestra event` with (those [`Agent::hook_state`]
    /// maps); none for an agent whose word comes otherwise.
    fn hook_events(&self) -> Vec<String>;

    /// The state `event` (with `hook`, its JSON, or Null) means; `None` for events that
    /// change nothing. An event it does not know is bad input.
    fn hook_state(
        &self,
        event: &str,
        hook: &serde_json::Value,
    ) -> Result<Option<AgentState>, AgentError>;

    /// The conversation a hook says the session is in now, when the agent names it only
    /// there: what a restart resumes (kept as the session's agent uuid).
    fn conversation_named<'a>(&self, event: &str, hook: &'a serde_json::Value) -> Option<&'a str>;

    /// The states its hooks say whenever they come true, on every release orchestra
    /// supports: for these a screen that disagrees with a hook's word is a disagreement
    /// (kept, and the hook's word stands a few ticks); the others only the screen (or
    /// tmux) reads. README's table of hook-exact states is this one.
    fn hook_exact(&self) -> &'static [AgentState];

    /// The states its hooks say that its screen cannot.
    fn screen_cannot_show(&self) -> &'static [AgentState];

    /// Whether `state`, said by its hooks while `recorded` is the recorded state, says
    /// nothing new and is not recorded.
    fn says_nothing_new(&self, recorded: AgentState, state: Option<AgentState>) -> bool;

    /// How it comes to take the worktree orchestra made as trusted.
    fn trust(&self) -> Trust;

    /// Whether `screen` shows it at work in a folder it trusts, so no trust dialog is
    /// coming (asked only of an agent whose [`Trust`] is a dialog).
    fn started_without_asking(&self, screen: &str) -> bool;

    /// Whether restarted session `session` (of this kind, on this machine, in orchestra
    /// home `home`) has a conversation of its own saved to resume.
    fn can_resume(&self, home: &Path, store: &Store, session: &Session)
        -> Result<bool, StateError>;

    /// Whether a manifest session, in the person's own folder, resumes with what its last
    /// `down` left: `conversation`, the id of the conversation it was in; `history`, its
    /// history files carried into the new session's folder.
    fn resumes_in_person_folder(&self, conversation: bool, history: bool) -> bool;

    /// How it is asked to exit (saving its state on the way out).
    fn quit(&self) -> Quit;

    /// Whether it can start from a copy of another session's conversation
    /// ([`LaunchContext::fork_from`]); the others start fresh.
    fn can_fork(&self) -> bool {
        false
    }

    /// Whether its usage is read from its own logs (`cost`), on this machine.
    fn has_cost_logs(&self) -> bool;

    /// The conversation a hook names that its cost log is found by (`cost`), when the
    /// agent names it only in its hooks.
    fn log_named<'a>(&self, event: &str, hook: &'a serde_json::Value) -> Option<&'a str>;

    /// What a sandboxed session of this kind takes from the person's home and
    /// environment, and the words of its no-ask mode (`--yolo`).
    fn sandboxed(&self) -> Sandboxed;
}

/// What an agent kind needs inside a sandbox (the engine's `session::sandbox` builds the
/// box from it): nothing else of the person's home or environment goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sandboxed {
    /// Its configuration and conversation files and folders, relative to the home: each
    /// copied into the session's own home (a folder's top-level files), so the agent
    /// writes its copies, never the person's.
    pub config: &'static [&'static str],
    /// The environment variables it is given (its API keys, its own settings); a name
    /// ending in `*` is a prefix.
    pub env: &'static [&'static str],
    /// Variables that name one of those folders somewhere else (`CODEX_HOME`), each with
    /// the folder's place in the home: where the person set one, the copy is made of
    /// that folder and shown in the box where it lies, so paths its settings spell still
    /// lead there.
    pub moved_by: &'static [(&'static str, &'static str)],
    /// The words on its command line that make it run without asking; none: it has no
    /// such mode and `--yolo` is refused.
    pub no_ask: &'static [&'static str],
}

impl Sandboxed {
    /// Whether environment variable `name` is one this kind is given.
    pub fn passes(&self, name: &str) -> bool {
        self.env
            .iter()
            .any(|allowed| match allowed.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *allowed,
            })
    }
}

/// The answers of `kind`.
pub fn of(kind: AgentKind) -> &'static dyn Agent {
    match kind {
        AgentKind::Claude => &claude::Claude,
        AgentKind::Codex => &codex::Codex,
        AgentKind::Gemini => &gemini::Gemini,
        AgentKind::Aider => &aider::Aider,
        AgentKind::Opencode => &opencode::Opencode,
        AgentKind::Generic => &generic::Generic,
    }
}

/// Where an agent's hooks are wired, written by dispatch into the session's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookWiring {
    /// `settings.json` for `claude --settings` (written without hooks too).
    ClaudeSettings,
    /// `settings.json` naming codex's `notify` program (written without hooks too).
    CodexNotify,
    /// The session's Gemini home (`gemini`).
    GeminiHome,
    /// opencode's config folder with orchestra's plugin (`opencode`).
    OpencodePlugin,
    /// Nothing written: what it needs is on its command line (aider), or none.
    CommandLine,
}

/// How an agent comes to trust the worktree orchestra made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// It asks, in a dialog orchestra answers (claude, codex).
    Dialog,
    /// It is told so at launch (gemini's environment).
    AtLaunch,
    /// It never asks.
    NotAsked,
}

/// How an agent is asked to exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quit {
    /// Its own exit command, typed after an Escape.
    Typed(&'static str),
    /// These keys, pressed.
    Keys(&'static [Key]),
}

/// The events every kind shares (tmux's, and states said outright): what `event` means
/// when the kind's own hooks (`hooks`, named in the error) do not know it; anything else
/// is bad input.
pub fn shared_event(event: &str, hooks: &str) -> Result<Option<AgentState>, AgentError> {
    match event {
        "pane-died" | "pane-exited" => Ok(Some(AgentState::Exited)),
        other => match AgentState::parse(other) {
            Some(AgentState::Unknown) | None => Err(AgentError::BadInput(format!(
                "unknown event {other:?}: {hooks}, pane-died, pane-exited, or busy/waiting/idle/error/exited"
            ))),
            Some(state) => Ok(Some(state)),
        },
    }
}

/// A claude permission mode, as its `--permission-mode` names it (the choices of the
/// pinned 2.1.x, and `default` of 2.0.x).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    #[value(name = "default")]
    Default,
    #[value(name = "acceptEdits")]
    AcceptEdits,
    #[value(name = "auto")]
    Auto,
    #[value(name = "bypassPermissions")]
    BypassPermissions,
    #[value(name = "manual")]
    Manual,
    #[value(name = "dontAsk")]
    DontAsk,
    #[value(name = "plan")]
    Plan,
}

impl PermissionMode {
    /// Its name on claude's command line.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Auto => "auto",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Manual => "manual",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Plan => "plan",
        }
    }

    /// `--permission-mode` with this mode at the end of a `kind` agent's `command`: only
    /// claude has one, and a command that names one already is not given a second.
    pub fn add_to(self, kind: AgentKind, command: &mut Vec<String>) -> Result<(), AgentError> {
        if kind != AgentKind::Claude {
            return Err(AgentError::BadInput(format!(
                "--permission-mode is claude's: a {} agent has none",
                kind.as_str()
            )));
        }
        if command
            .iter()
            .any(|w| w == "--permission-mode" || w.starts_with("--permission-mode="))
        {
            return Err(AgentError::BadInput(
                "the agent command names a permission mode already: pass one or the other".into(),
            ));
        }
        command.extend(["--permission-mode".to_string(), self.as_str().to_string()]);
        Ok(())
    }
}

/// A request this kind of agent cannot take (a bad input).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    BadInput(String),
}

pub use orchestra_model::kind::{AgentKind, AIDER_CHAT_HISTORY, AIDER_INPUT_HISTORY};

/// What to run (with what in its environment), and the prompt to type in afterwards for
/// agents that take none on their command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub typed_prompt: Option<String>,
    pub env: Vec<(String, String)>,
}

/// Per-session facts a launch may need.
pub struct LaunchContext<'a> {
    pub agent_uuid: &'a str,
    pub settings_file: &'a Path,
    /// The session's own folder (hook settings, the agent's history files).
    pub session_dir: &'a Path,
    /// This orchestra binary, for the agents that call it back (aider's notifications).
    pub orchestra: &'a Path,
    /// Appended to the agent's system prompt, where the agent takes one.
    pub system_prompt: Option<&'a str>,
    /// Continue this conversation instead of starting one (claude `--resume`, codex
    /// `resume --last`, gemini `--resume latest`, aider `--restore-chat-history`).
    pub resume: bool,
    /// The Gemini home holding the session's hooks (`agent::gemini::prepare_home`).
    pub gemini_home: Option<&'a Path>,
    /// The agent may take the worktree as trusted without asking (orchestra made it).
    pub trust_worktree: bool,
    /// The program codex runs when a turn ends (its `notify`), when hooks are on.
    pub notify: Option<&'a [String]>,
    /// The config folder holding opencode's plugin (`agent::opencode`), when hooks are on.
    pub opencode_config: Option<&'a Path>,
    /// `orchestra fork`: start from a copy of this conversation (where
    /// [`Agent::can_fork`]), under the session's own id.
    pub fork_from: Option<&'a str>,
}

/// Whether `text` looks like a conversation id (a UUID): it goes back on a command line
/// as `--resume ID`.
pub fn is_conversation_id(text: &str) -> bool {
    text.len() == 36
        && text.chars().enumerate().all(|(i, c)| {
            matches!(i, 8 | 13 | 18 | 23) == (c == '-') && (c == '-' || c.is_ascii_hexdigit())
        })
}

/// The release of the agent `command` runs ("2.1.332 (Claude Code)" → (2, 1, 332)), asked
/// once per program file and cached in `cache_file`: `--version` of a node-based release
/// takes a second.
pub fn agent_version(command: &[String], cache_file: &Path) -> Option<(u32, u32, u32)> {
    let key = version_cache_key(command)?;
    let mut cache: std::collections::BTreeMap<String, String> = std::fs::read_to_string(cache_file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if let Some(v) = cache.get(&key) {
        return parse_version(v);
    }
    let text = run_version(command)?;
    let version = parse_version(&text)?;
    cache.insert(key, text);
    if let Ok(json) = serde_json::to_string_pretty(&cache) {
        let _ = crate::paths::replace_private(cache_file, json);
    }
    Some(version)
}

/// The command plus the size and mtime of every file it names: a reinstall changes it.
fn version_cache_key(command: &[String]) -> Option<String> {
    let program = crate::paths::find_program(command.first()?)?;
    let mut key = program.to_string_lossy().into_owned();
    for (i, word) in command.iter().enumerate() {
        let path = if i == 0 {
            program.clone()
        } else {
            Path::new(word).to_path_buf()
        };
        if i > 0 {
            key.push(' ');
            key.push_str(word);
        }
        if let Some(stamp) = crate::paths::file_stamp(&path) {
            key.push_str(&format!("#{stamp}"));
        }
    }
    Some(key)
}

fn run_version(command: &[String]) -> Option<String> {
    // An agent's `--version` prints a line; one that prints without end or never returns
    // (a CLI stuck on an update check) is stopped.
    let output = crate::process::Run::new(&command[0], std::time::Duration::from_secs(10))
        .args(&command[1..])
        .arg("--version")
        .stderr_null()
        .cap(64 * 1024)
        .output()
        .ok()?;
    let out = String::from_utf8(output.stdout).ok()?;
    Some(out.trim().to_string())
}

/// The first `N.N.N` in `text`.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let mut parts = text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
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
    fn conversation_ids_are_uuids() {
        assert!(is_conversation_id("45913bb3-602f-424a-8f1a-bb001627e015"));
        assert!(!is_conversation_id("45913bb3-602f-424a-8f1a-bb001627e01"));
        assert!(!is_conversation_id(
            "--resume x; rm -rf /aaaaaaaaaaaaaaaaaaa"
        ));
        assert!(!is_conversation_id("45913bb3x602f-424a-8f1a-bb001627e015"));
    }

    /// Every kind answers every question, and answers it for itself: a kind added to
    /// [`AgentKind`] without a folder of its own, or one that copied another's answers
    /// without meaning them, fails here.
    #[test]
    fn every_kind_answers_for_itself() {
        let none = serde_json::Value::Null;
        for kind in AgentKind::ALL {
            let agent = of(kind);
            assert_eq!(agent.kind(), kind);
            // Each event its hooks are wired to call means something, or nothing, but is
            // never taken for bad input; tmux's events mean the same for every kind.
            for event in agent.hook_events() {
                assert!(agent.hook_state(&event, &none).is_ok(), "{kind:?}: {event}");
            }
            assert_eq!(
                agent.hook_state("pane-died", &none).unwrap(),
                Some(AgentState::Exited),
                "{kind:?}"
            );
            assert!(
                agent.hook_state("no-such-event", &none).is_err(),
                "{kind:?}"
            );
            // A kind whose hooks say a state exactly has hooks wired, and events for them.
            if !agent.hook_exact().is_empty() {
                assert!(!agent.hook_events().is_empty(), "{kind:?}");
                assert_ne!(agent.hook_wiring(), HookWiring::CommandLine, "{kind:?}");
            }
            // What its screen cannot show, its hooks must say.
            for state in agent.screen_cannot_show() {
                assert!(agent.hook_exact().contains(state), "{kind:?}: {state:?}");
            }
            match agent.quit() {
                Quit::Typed(command) => assert!(command.starts_with('/'), "{kind:?}"),
                Quit::Keys(keys) => assert!(!keys.is_empty(), "{kind:?}"),
            }
            // An empty screen: one that asks has not shown that it trusts the folder, and
            // one that never asks has nothing to wait for.
            assert_eq!(
                agent.started_without_asking(""),
                agent.trust() != Trust::Dialog,
                "{kind:?}"
            );
            // Its first message is on its command line exactly when its launch puts a
            // prompt there (else it is typed).
            let ctx = LaunchContext {
                agent_uuid: "",
                settings_file: Path::new("/s/settings.json"),
                session_dir: Path::new("/s"),
                orchestra: Path::new("/opt/orchestra"),
                system_prompt: None,
                resume: false,
                gemini_home: None,
                trust_worktree: false,
                notify: None,
                opencode_config: None,
                fork_from: None,
            };
            // A sandbox takes nothing of the home that is not relative to it, and no
            // variable of the person's shell by a prefix too short to mean one tool.
            let sandboxed = agent.sandboxed();
            for (name, place) in sandboxed.moved_by {
                assert!(sandboxed.config.contains(place), "{kind:?}: {name}");
            }
            for path in sandboxed.config {
                assert!(
                    !path.starts_with('/') && !path.contains(".."),
                    "{kind:?}: {path}"
                );
            }
            for name in ["HOME", "SSH_AUTH_SOCK", "AWS_SECRET_ACCESS_KEY", "GH_TOKEN"] {
                assert!(!sandboxed.passes(name), "{kind:?}: {name}");
            }
            let launch = agent.launch(&[kind.as_str().to_string()], Some("go on"), &ctx);
            assert_eq!(
                agent.first_message("go on".into()).is_some(),
                launch.typed_prompt.is_none(),
                "{kind:?}"
            );
        }
    }
}
