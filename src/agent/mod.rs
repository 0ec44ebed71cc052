//! Agent kinds: how each is launched and how its prompt reaches it. Screen rules and hook
//! wiring per kind live here too, as data.

pub mod gemini;
pub mod menu;
pub mod rules;

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

    /// How this kind takes text typed into it (briefings, typed prompts, exit commands).
    pub fn typing(self) -> crate::tmux::Typing {
        match self {
            AgentKind::Claude => crate::tmux::Typing::Paste,
            _ => crate::tmux::Typing::Natural,
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
        ]
        .into_iter()
        .find(|k| name.starts_with(k.as_str()))
        .unwrap_or(AgentKind::Generic)
    }
}

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
    /// Appended to the agent's system prompt, where the agent takes one.
    pub system_prompt: Option<&'a str>,
    /// Continue this conversation instead of starting one (`--resume`).
    pub resume: bool,
    /// The Gemini home holding the session's hooks (`agent::gemini::prepare_home`).
    pub gemini_home: Option<&'a Path>,
    /// The agent may take the worktree as trusted without asking (orchestra made it).
    pub trust_worktree: bool,
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
            argv.extend(prompt.map(str::to_string));
        }
        AgentKind::Codex => argv.extend(prompt.map(str::to_string)),
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
            if let Some(p) = prompt {
                argv.extend(["--prompt-interactive".to_string(), p.to_string()]);
            }
        }
        // aider's `--message` runs one turn and exits; typing keeps it interactive.
        AgentKind::Aider | AgentKind::Generic => typed_prompt = prompt.map(str::to_string),
    }
    Launch {
        argv,
        typed_prompt,
        env,
    }
}

/// Whether `text` looks like a conversation id (a UUID): it goes back on a command line
/// as `--resume ID`.
pub fn is_conversation_id(text: &str) -> bool {
    text.len() == 36
        && text.chars().enumerate().all(|(i, c)| {
            matches!(i, 8 | 13 | 18 | 23) == (c == '-') && (c == '-' || c.is_ascii_hexdigit())
        })
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
                "command": format!("{exe} event --from-hook {event}"),
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
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
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
            system_prompt: None,
            resume: false,
            gemini_home: Some(Path::new("/s/gemini-home")),
            trust_worktree: true,
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
        assert!(l.env.is_empty(), "{:?}", l.env);
        let g = launch(AgentKind::Generic, &["bash".into()], Some("echo hi"), &ctx);
        assert_eq!(g.argv, ["bash"]);
        assert_eq!(g.typed_prompt.as_deref(), Some("echo hi"));
    }

    #[test]
    fn gemini_gets_its_home_and_trust_and_the_prompt_to_run_first() {
        let mut ctx = LaunchContext {
            agent_uuid: "",
            settings_file: Path::new("/s/settings.json"),
            system_prompt: Some("be brief"),
            resume: false,
            gemini_home: Some(Path::new("/s/gemini-home")),
            trust_worktree: true,
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
}
