//! Agent kinds: how each is launched and how its prompt reaches it. Screen rules and hook
//! wiring per kind live here too, as data.

pub mod asked;
pub mod gemini;
pub mod menu;
pub mod opencode;
pub mod rules;

use std::path::Path;

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
    let mut env = Vec::new();
    match kind {
        AgentKind::Claude => {
            let session_flag = if ctx.resume {
                "--resume"
            } else {
                "--session-id"
            };
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
        }
        AgentKind::Codex => {
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
        }
        AgentKind::Gemini => {
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
        }
        AgentKind::Opencode => {
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
                if opencode::is_session_id(ctx.agent_uuid) {
                    argv.extend(["-s".to_string(), ctx.agent_uuid.to_string()]);
                } else {
                    argv.push("-c".to_string());
                }
            }
            if let Some(p) = prompt {
                // `--prompt=` keeps a prompt starting with `-` the prompt.
                argv.push(format!("--prompt={p}"));
            }
        }
        AgentKind::Aider => {
            argv.extend(aider_args(ctx.orchestra, ctx.session_dir));
            if ctx.resume {
                argv.push("--restore-chat-history".to_string());
            }
            // aider's `--message` runs one turn and exits; typing keeps it interactive.
            typed_prompt = prompt.map(str::to_string);
        }
        AgentKind::Generic => typed_prompt = prompt.map(str::to_string),
    }
    Launch {
        argv,
        typed_prompt,
        env,
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

/// Whether `text` looks like a conversation id (a UUID): it goes back on a command line
/// as `--resume ID`.
pub fn is_conversation_id(text: &str) -> bool {
    text.len() == 36
        && text.chars().enumerate().all(|(i, c)| {
            matches!(i, 8 | 13 | 18 | 23) == (c == '-') && (c == '-' || c.is_ascii_hexdigit())
        })
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

/// The event name `orchestra event` gets from codex's `notify`.
/// What codex's `notify` payload means. It says only that a turn ended
/// (`agent-turn-complete`); the title codex asks its model for after the first prompt runs
/// as a turn of a thread of its own and ends while the person's turn still runs, so that
/// one says nothing.
pub fn codex_notify_state(payload: &serde_json::Value) -> Option<crate::state::AgentState> {
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
    Some(crate::state::AgentState::Idle)
}

pub const CODEX_NOTIFY_EVENT: &str = "codex-notify";

/// `notify=[…]` for codex's `-c`: the value is TOML, each word a quoted string.
fn codex_notify_override(program: &[String]) -> String {
    let words = program
        .iter()
        .map(|w| toml::Value::String(w.clone()))
        .collect();
    format!("notify={}", toml::Value::Array(words))
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
    fn conversation_ids_are_uuids() {
        assert!(is_conversation_id("45913bb3-602f-424a-8f1a-bb001627e015"));
        assert!(!is_conversation_id("45913bb3-602f-424a-8f1a-bb001627e01"));
        assert!(!is_conversation_id(
            "--resume x; rm -rf /aaaaaaaaaaaaaaaaaaa"
        ));
        assert!(!is_conversation_id("45913bb3x602f-424a-8f1a-bb001627e015"));
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
                "--",
                "do it"
            ]
        );
        assert_eq!(l.typed_prompt, None);
        assert!(l.env.is_empty(), "{:?}", l.env);
        for (prompt, operand) in [
            ("mcp", "mcp "),
            ("--version", "--version "),
            ("-x y", "-x y"),
        ] {
            let l = launch(AgentKind::Claude, &["claude".into()], Some(prompt), &ctx);
            assert_eq!(l.argv[l.argv.len() - 2..], ["--", operand], "{prompt:?}");
        }
        let g = launch(AgentKind::Generic, &["bash".into()], Some("echo hi"), &ctx);
        assert_eq!(g.argv, ["bash"]);
        assert_eq!(g.typed_prompt.as_deref(), Some("echo hi"));
    }

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
        };
        let a = launch(
            AgentKind::Aider,
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
        let resumed = launch(
            AgentKind::Aider,
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
        };
        let l = launch(AgentKind::Gemini, &["gemini".into()], Some("do it"), &ctx);
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
        let bare = launch(AgentKind::Gemini, &["gemini".into()], None, &ctx);
        assert_eq!(bare.argv, ["gemini"]);
        assert!(bare.env.is_empty());
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
        };
        let l = launch(
            AgentKind::Codex,
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
        let quiet = launch(
            AgentKind::Codex,
            &["codex".into()],
            None,
            &LaunchContext {
                notify: None,
                ..ctx
            },
        );
        assert_eq!(quiet.argv, ["codex"], "no hooks: nothing added");
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
        };
        let l = launch(
            AgentKind::Opencode,
            &["opencode".into()],
            Some("-x do it"),
            &ctx,
        );
        assert_eq!(l.argv, ["opencode", "--prompt=-x do it"]);
        assert_eq!(l.typed_prompt, None);
        assert_eq!(
            l.env[0],
            ("OPENCODE_CONFIG_DIR".to_string(), "/s/opencode".to_string())
        );
        ctx.resume = true;
        ctx.opencode_config = None;
        let l = launch(AgentKind::Opencode, &["opencode".into()], None, &ctx);
        assert_eq!(
            l.argv,
            ["opencode", "-c"],
            "no session id known: the last one"
        );
        assert!(l.env.iter().all(|(k, _)| k != "OPENCODE_CONFIG_DIR"));
        ctx.agent_uuid = "ses_dcae52746ffeXlceujJWQ7dMNb";
        let l = launch(AgentKind::Opencode, &["opencode".into()], None, &ctx);
        assert_eq!(l.argv, ["opencode", "-s", "ses_dcae52746ffeXlceujJWQ7dMNb"]);
    }
}
