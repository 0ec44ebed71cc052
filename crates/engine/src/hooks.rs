//! Agents' hook events: the state each kind's events mean (Claude Code's hooks, the
//! Gemini CLI's, codex's `notify`, aider's notifications command, tmux's pane-died), and
//! a state said by a hook recorded, announced and passed to the dependency engine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::agent::asked::Asked;
use crate::agent::rules::Rules;
use crate::agent::{AgentKind, AIDER_NOTIFICATION};
use crate::context::Context;
use crate::error::Error;
use crate::health::{now_micros, HealthError};
use crate::state::{AgentState, Session, StateSource, Store, Transition};

/// How long after aider's notification its prompt or question may take to show.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// After a recorded state: an upstream's change is when its dependents notice its
/// artifacts, and a transition is shown to the person.
fn pass_on(
    ctx: &Context,
    store: &Store,
    session: &Session,
    transition: Option<Transition>,
    ask: Option<&str>,
) -> Result<(), Error> {
    let Some(transition) = transition else {
        return Ok(());
    };
    crate::deps::upstream_changed(ctx, store, session)?;
    crate::tell::announce(&transition, ask)
}

/// A hook of local session `id` said `event` (with `hook`, its JSON, or Null) at `at`:
/// what it means recorded, a conversation it moved to remembered, and who should hear
/// of it told.
pub fn receive(
    ctx: &Context,
    id: &str,
    event: &str,
    hook: &serde_json::Value,
    at: i64,
) -> Result<(), Error> {
    let word = Spooled {
        id: id.to_string(),
        event: event.to_string(),
        at,
        hook: without_prompt(hook),
    };
    let result = ctx.store().and_then(|store| {
        replay(ctx, &store)?;
        record(ctx, &store, &word)
    });
    match result {
        // Another process holds the record's write lock: the word waits in the spool for
        // the next writer, and the agent's hook returns now.
        Err(e) if e.is_busy() => spool(&ctx.home, &word),
        other => other,
    }
}

/// A hook's word kept for later: what [`receive`] was given.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Spooled {
    id: String,
    event: String,
    at: i64,
    hook: serde_json::Value,
}

/// Where words wait while the record is busy: a file each, named so that their order by
/// name is the order they were said in.
fn spool_dir(home: &Path) -> PathBuf {
    home.join("spool")
}

/// The hook's JSON without the text a person typed (UserPromptSubmit's `prompt`): no
/// word needs it, and the spool keeps no prompt.
fn without_prompt(hook: &serde_json::Value) -> serde_json::Value {
    let mut hook = hook.clone();
    if let Some(fields) = hook.as_object_mut() {
        fields.remove("prompt");
    }
    hook
}

fn spool(home: &Path, word: &Spooled) -> Result<(), Error> {
    let dir = spool_dir(home);
    crate::paths::private_dir(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let name = format!(
        "{:020}-{}.json",
        word.at.max(0),
        uuid::Uuid::new_v4().simple()
    );
    let path = dir.join(name);
    let text = serde_json::to_string(word).unwrap_or_default();
    crate::paths::replace_private(&path, text)
        .map_err(Error::io(format!("writing {}", path.display())))
}

/// Records the words the spool holds, oldest first, each removed once recorded: called by
/// every writer that got the lock (a hook, a status tick) before it says its own. Replaying
/// a word twice changes nothing (the newest word wins, a transition is recorded once). A
/// busy record stops it there, the rest kept in order.
fn replay(ctx: &Context, store: &Store) -> Result<(), Error> {
    for file in spooled(&ctx.home) {
        let word = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Spooled>(&b).ok());
        if let Some(word) = word {
            match record(ctx, store, &word) {
                Err(e) if e.is_busy() => return Err(e),
                // A word of a session gone since, or one that meant nothing: said and done.
                _ => {}
            }
        }
        let _ = std::fs::remove_file(&file);
    }
    Ok(())
}

/// [`replay`] for a writer that has not opened the record yet: it opens it only when a
/// word waits (a status tick opens the record only when it must).
pub fn replay_spooled(ctx: &Context) -> Result<(), Error> {
    if spooled(&ctx.home).is_empty() {
        return Ok(());
    }
    replay(ctx, &ctx.store()?)
}

/// The spooled words' files, oldest first.
fn spooled(home: &Path) -> Vec<PathBuf> {
    crate::paths::files_ending(&spool_dir(home), "json")
}

/// What a hook's word means, recorded in `store`.
fn record(ctx: &Context, store: &Store, word: &Spooled) -> Result<(), Error> {
    let Spooled {
        id,
        event,
        at,
        hook,
    } = word;
    let (event, at) = (event.as_str(), *at);
    let session = store
        .session_by_id(id)?
        .ok_or_else(|| Error::BadInput(format!("unknown session id {id:?}")))?;
    let state = state_of(session.agent_kind, event, hook)?;
    // `/clear` and `/resume` move the session to another conversation: remember it, so a
    // restart resumes the one the person was in (claude's; restart resumes no other kind).
    if session.agent_kind == AgentKind::Claude {
        if let Some(uuid) = conversation_started(event, hook) {
            if session.agent_uuid.as_deref() != Some(uuid) {
                store.set_agent_uuid(&session, uuid)?;
            }
        }
    }
    // opencode names its session only to its plugin: a restart resumes it by that id.
    if session.agent_kind == AgentKind::Opencode && event == "opencode-session.created" {
        if let Some(ses) = hook
            .get("sessionID")
            .and_then(|v| v.as_str())
            .filter(|s| crate::agent::opencode::is_session_id(s))
        {
            if session.agent_uuid.as_deref() != Some(ses) {
                store.set_agent_uuid(&session, ses)?;
            }
        }
    }
    if idle_after_error(session.agent_kind, session.state, state) {
        return Ok(());
    }
    // codex and gemini name their conversation only in their hooks: its log is found by it.
    crate::cost::note_conversation(store, &session, event, hook)?;
    note_permission_mode(&ctx.home, &session.id, hook);
    let Some(state) = state else {
        return Ok(());
    };
    // An agent whose window orchestra closes itself (merge, kill), or closed, ends as
    // the window goes (its SessionEnd, the pane's hooks): that is no agent that exited.
    if session.status == crate::state::Status::Merged
        || crate::lock::is_closing(&ctx.home, &session.id)
    {
        return Ok(());
    }
    let transition = store.apply_state(&session.id, state, at, StateSource::Hook, event)?;
    let worktree = Path::new(&session.worktree);
    let ask = asked(hook).and_then(|a| a.relative_to(worktree).phrase());
    pass_on(ctx, store, &session, transition, ask.as_deref())
}

/// The permission mode claude's hooks say the session runs in (`permission_mode`), kept
/// in the session's folder for `health`: what it runs in, whoever chose it (a flag, the
/// person's settings, Shift-Tab in the window).
fn note_permission_mode(home: &Path, id: &str, hook: &serde_json::Value) {
    let Some(mode) = hook
        .get("permission_mode")
        .and_then(|m| m.as_str())
        .filter(|m| !m.is_empty() && m.len() <= 40 && m.chars().all(|c| c.is_ascii_alphanumeric()))
    else {
        return;
    };
    if permission_mode(home, id).as_deref() != Some(mode) {
        let _ = crate::paths::write_private(&permission_mode_path(home, id), mode);
    }
}

/// The permission mode session `id` last said it runs in (claude's hooks), if any.
pub fn permission_mode(home: &Path, id: &str) -> Option<String> {
    std::fs::read_to_string(permission_mode_path(home, id))
        .ok()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

fn permission_mode_path(home: &Path, id: &str) -> std::path::PathBuf {
    crate::paths::session_dir(home, id).join("permission-mode")
}

/// A hook of session `id` of another machine's orchestra (a remote claude calling this
/// host's copy): no row here, only its word, left for that orchestra's refresh to read —
/// with the conversation a SessionStart names, so `/clear` there moves what its restart
/// resumes too.
pub fn receive_remote(
    home: &Path,
    id: &str,
    event: &str,
    hook: &serde_json::Value,
    at: i64,
) -> Result<(), Error> {
    let Some(state) = state_of(AgentKind::Claude, event, hook)? else {
        return Ok(());
    };
    let word = crate::remote_hooks::HookWord {
        state: state.to_string(),
        at,
        event: event.to_string(),
        conversation: conversation_started(event, hook).map(str::to_string),
        // Paths as the host's claude sees them, shown from its folder (the hook's `cwd`).
        asks: asked(hook).and_then(|a| {
            let folder = hook.get("cwd").and_then(|c| c.as_str()).unwrap_or_default();
            a.relative_to(Path::new(folder)).phrase()
        }),
    };
    crate::remote_hooks::record_word(home, id, &word)
}

/// The conversation claude's SessionStart hook names (a start, `/clear`, `/resume`), when
/// it is a conversation id.
pub fn conversation_started<'a>(event: &str, hook: &'a serde_json::Value) -> Option<&'a str> {
    if event != "SessionStart" {
        return None;
    }
    hook.get("session_id")
        .and_then(|v| v.as_str())
        .filter(|u| crate::agent::is_conversation_id(u))
}

/// The state `event` means for an agent of `kind` (Claude Code's hooks for any kind
/// without its own); `None` for events that change nothing. An unknown event is bad input.
pub fn state_of(
    kind: AgentKind,
    event: &str,
    hook: &serde_json::Value,
) -> Result<Option<AgentState>, Error> {
    match kind {
        AgentKind::Gemini => gemini_state_for(event, hook),
        AgentKind::Codex => codex_state_for(event, hook),
        AgentKind::Opencode => opencode_state_for(event, hook),
        _ => state_for(event, hook),
    }
}

/// The detached half of aider's notification (`event --settle`): reads session `id`'s
/// screen until it shows its prompt, a question or an error (for a few seconds at most)
/// and records that as the hook's word.
pub fn settle_aider(ctx: &Context, id: &str) -> Result<(), Error> {
    let store = ctx.store()?;
    let session = store
        .session_by_id(id)?
        .ok_or_else(|| Error::BadInput(format!("unknown session id {id:?}")))?;
    let (tmux, pane) = crate::session::agent_pane(&session)?;
    let rules = Rules::load(&ctx.home).map_err(HealthError::from)?;
    let started = Instant::now();
    while started.elapsed() < SETTLE_WAIT {
        let screen = tmux.capture_pane(pane.pane(), 0)?;
        let verdict = rules
            .classify(session.agent_kind.as_str(), &screen)
            .map_err(HealthError::from)?;
        if matches!(
            verdict.state,
            AgentState::Idle | AgentState::Waiting | AgentState::Error
        ) {
            if !tmux.is_ours(&pane)? {
                return Ok(());
            }
            let detail = format!("{AIDER_NOTIFICATION}: {}", verdict.rule.unwrap_or_default());
            let transition = store.apply_state(
                &session.id,
                verdict.state,
                now_micros(),
                StateSource::Hook,
                &detail,
            )?;
            let ask = match verdict.state {
                AgentState::Waiting => rules
                    .asked(session.agent_kind.as_str(), &screen)
                    .map_err(HealthError::from)?
                    .and_then(|a| a.relative_to(Path::new(&session.worktree)).phrase()),
                _ => None,
            };
            return pass_on(ctx, &store, &session, transition, ask.as_deref());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// What a hook says the agent asks the person for: Claude Code's PermissionRequest and
/// PreToolUse name the tool and its input, the Gemini CLI's ToolPermission notification
/// has `details`; `None` for a hook that names neither. Told as [`Asked::phrase`], as an
/// approval read from the screen is.
pub fn asked(hook: &serde_json::Value) -> Option<Asked> {
    fn text(v: Option<&serde_json::Value>) -> String {
        v.and_then(|v| v.as_str()).unwrap_or("").to_string()
    }
    if let Some(details) = hook
        .get("details")
        .filter(|_| hook.get("tool_name").is_none())
    {
        let field = |name: &str| text(details.get(name));
        return match field("type").as_str() {
            "exec" => Some(Asked::Run(field("command"))),
            // A file with nothing in it before is a new one.
            "edit" if field("originalContent").is_empty() => Some(Asked::Write(field("filePath"))),
            "edit" => Some(Asked::Edit(field("filePath"))),
            _ => None,
        };
    }
    // opencode's permission.asked: the permission, the patterns it would allow (a
    // command, a file) and the tool's own words in `metadata`.
    if let Some(permission) = hook
        .get("permission")
        .and_then(|v| v.as_str())
        .filter(|_| hook.get("patterns").is_some())
    {
        let first = text(hook.pointer("/patterns/0"));
        let meta = |name: &str| {
            Some(text(hook.pointer(&format!("/metadata/{name}")))).filter(|t| !t.is_empty())
        };
        return match permission {
            "bash" => Some(Asked::Run(meta("command").unwrap_or(first))),
            "edit" => Some(Asked::Edit(meta("filepath").unwrap_or(first))),
            "webfetch" => Some(Asked::Fetch(meta("url").unwrap_or(first))),
            other => Some(Asked::Use(other.to_string())),
        };
    }
    let tool = text(hook.get("tool_name"));
    let input = hook.get("tool_input");
    let field = |name: &str| text(input.and_then(|i| i.get(name)));
    let asked = match tool.as_str() {
        // A question or a plan is no permission: nothing to approve by name.
        "" => return None,
        tool if asks_the_person(tool) => return None,
        "Bash" => Asked::Run(field("command")),
        "Write" => Asked::Write(field("file_path")),
        "Edit" | "MultiEdit" => Asked::Edit(field("file_path")),
        "NotebookEdit" => Asked::Edit(field("notebook_path")),
        "WebFetch" => Asked::Fetch(field("url")),
        _ => Asked::Use(tool),
    };
    Some(asked)
}

/// The state an event means; `None` for events that change nothing.
pub fn state_for(event: &str, hook: &serde_json::Value) -> Result<Option<AgentState>, Error> {
    let field = |name: &str| hook.get(name).and_then(|v| v.as_str()).unwrap_or("");
    Ok(match event {
        // A question the agent asks, or its plan put up for approval, is shown to the
        // person as the tool starts: waiting, without the screen. Their answer is the
        // tool's end (PostToolUse): the turn goes on.
        "PreToolUse" if asks_the_person(field("tool_name")) => Some(AgentState::Waiting),
        "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => {
            Some(AgentState::Busy)
        }
        "PermissionRequest" => Some(AgentState::Waiting),
        "Notification" => {
            let kind = field("notification_type");
            let message = field("message").to_ascii_lowercase();
            let asks = matches!(kind, "permission_prompt" | "elicitation_dialog")
                || kind.is_empty() && message.contains("permission");
            asks.then_some(AgentState::Waiting)
        }
        // A sub-agent finishing says nothing about its parent.
        "Stop" if !field("agent_id").is_empty() || field("hook_event_name") == "SubagentStop" => {
            None
        }
        "Stop" => Some(AgentState::Idle),
        "SubagentStop" => None,
        // Compaction restarts the conversation in the middle of a turn: still busy.
        "SessionStart" if field("source") == "compact" => None,
        "SessionStart" => Some(AgentState::Idle),
        // Compacting is part of a turn, not its end.
        "PreCompact" => None,
        "StopFailure" => Some(AgentState::Error),
        "SessionEnd" => Some(AgentState::Exited),
        other => return not_a_hook(other, "a Claude Code hook event"),
    })
}

/// Claude Code's tools whose use is a question to the person: AskUserQuestion (its
/// options), ExitPlanMode (the plan, to approve or not).
pub const CLAUDE_PERSON_TOOLS: &[&str] = &["AskUserQuestion", "ExitPlanMode"];

fn asks_the_person(tool: &str) -> bool {
    CLAUDE_PERSON_TOOLS.contains(&tool)
}

/// The states `kind`'s hooks say whenever they come true, on every release orchestra
/// supports: for these a screen that disagrees with a hook's word is a disagreement (kept,
/// and the hook's word stands a few ticks); the others only the screen (or tmux) reads.
/// README's table of hook-exact states is this one.
pub fn hook_exact(kind: AgentKind) -> &'static [AgentState] {
    match kind {
        // UserPromptSubmit/PreToolUse/PostToolUse, PermissionRequest and the question
        // tools, Stop; SessionEnd. An error is said only from 2.1.78 on (StopFailure).
        AgentKind::Claude => &[
            AgentState::Busy,
            AgentState::Waiting,
            AgentState::Idle,
            AgentState::Exited,
        ],
        // BeforeAgent/BeforeTool/AfterTool, the ToolPermission notification, AfterAgent;
        // SessionEnd. An error ends with AfterAgent too: the screen says it.
        AgentKind::Gemini => &[
            AgentState::Busy,
            AgentState::Waiting,
            AgentState::Idle,
            AgentState::Exited,
        ],
        // `notify` says only that a turn ended.
        AgentKind::Codex => &[AgentState::Idle],
        // session.status busy/idle, permission.asked, session.error. No event at exit.
        AgentKind::Opencode => &[
            AgentState::Busy,
            AgentState::Waiting,
            AgentState::Idle,
            AgentState::Error,
        ],
        // aider's notification says when; what (idle, a question, an error) is read from
        // the screen.
        _ => &[],
    }
}

/// The states `kind`'s hooks say that its screen cannot: opencode's error block differs
/// from a prompt's only by colour, so after one its screen reads idle.
pub fn screen_cannot_show(kind: AgentKind) -> &'static [AgentState] {
    match kind {
        AgentKind::Opencode => &[AgentState::Error],
        _ => &[],
    }
}

/// The state a Gemini CLI hook event means (0.61.0's events; `agent::gemini::HOOK_EVENTS`
/// are the ones orchestra asks for).
pub fn gemini_state_for(
    event: &str,
    hook: &serde_json::Value,
) -> Result<Option<AgentState>, Error> {
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
        other => return not_a_hook(other, "a Gemini CLI hook event"),
    })
}

/// The state an opencode bus event means, as its plugin (`agent::opencode`) passes it on:
/// `opencode-<type>` with the event's properties (1.18.33's events).
pub fn opencode_state_for(
    event: &str,
    hook: &serde_json::Value,
) -> Result<Option<AgentState>, Error> {
    let Some(kind) = event.strip_prefix("opencode-") else {
        return not_a_hook(event, "an opencode plugin event (opencode-<type>)");
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
            return Err(Error::BadInput(format!(
                "unknown opencode event {other:?}: one of {}",
                crate::agent::opencode::EVENTS.join(", ")
            )))
        }
    })
}

/// What opencode's plugin said was the end of a failed turn: the idle that follows
/// session.error says nothing new, and the screen cannot show the error (`rules.toml`).
fn idle_after_error(kind: AgentKind, recorded: AgentState, state: Option<AgentState>) -> bool {
    kind == AgentKind::Opencode && recorded == AgentState::Error && state == Some(AgentState::Idle)
}

/// Events every kind shares (tmux's, and states said outright); anything else is bad input.
fn not_a_hook(event: &str, hooks: &str) -> Result<Option<AgentState>, Error> {
    match event {
        "pane-died" | "pane-exited" => Ok(Some(AgentState::Exited)),
        other => match AgentState::parse(other) {
            Some(AgentState::Unknown) | None => Err(Error::BadInput(format!(
                "unknown event {other:?}: {hooks}, pane-died, pane-exited, or busy/waiting/idle/error/exited"
            ))),
            Some(state) => Ok(Some(state)),
        },
    }
}

/// The state codex's one event, its `notify` at the end of a turn, means.
pub fn codex_state_for(
    event: &str,
    payload: &serde_json::Value,
) -> Result<Option<AgentState>, Error> {
    match event {
        crate::agent::CODEX_NOTIFY_EVENT => Ok(codex_notify_state(payload)),
        other => not_a_hook(other, "codex-notify"),
    }
}

pub use crate::agent::codex_notify_state;

#[cfg(test)]
mod tests {
    use crate::agent::asked::Asked;

    #[test]
    fn asked_names_the_command_or_the_file() {
        let hook = |v: &str| serde_json::from_str::<serde_json::Value>(v).unwrap();
        let asked = |v: &serde_json::Value| super::asked(v).and_then(|a| a.phrase());
        assert_eq!(
            asked(&hook(
                r#"{"tool_name":"Bash","tool_input":{"command":"npm test"}}"#
            ))
            .as_deref(),
            Some("run: npm test")
        );
        assert_eq!(
            asked(&hook(
                r#"{"tool_name":"Write","tool_input":{"file_path":"src/login.rs","content":"x"}}"#
            ))
            .as_deref(),
            Some("write src/login.rs")
        );
        let hostile = asked(&hook(
            r#"{"tool_name":"Bash","tool_input":{"command":"echo hi\n\u001b]0;x\u0007 && make"}}"#,
        ))
        .unwrap();
        assert!(!hostile.chars().any(char::is_control), "{hostile:?}");
        assert!(hostile.starts_with("run: echo hi"), "{hostile:?}");
        let long = format!(
            r#"{{"tool_name":"Bash","tool_input":{{"command":"{}"}}}}"#,
            "x".repeat(10_000)
        );
        assert!(asked(&hook(&long)).unwrap().chars().count() < 100);
        assert_eq!(asked(&serde_json::Value::Null), None);

        // The Gemini CLI's ToolPermission notifications, as 0.61.0 sent them.
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/screens/gemini/0.61.0/hooks");
        let gemini = |name: &str| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            super::asked(&hook(&text))
                .map(|a| a.relative_to(std::path::Path::new("/tmp/orchestra-capture.SWICkx/wt")))
        };
        assert_eq!(
            gemini("Notification.1796053111770353353.json"),
            Some(Asked::Run("touch created-by-shell.txt".into()))
        );
        assert_eq!(
            gemini("Notification.1796053128734426965.json"),
            Some(Asked::Write("new-file.txt".into()))
        );
    }

    use super::*;
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
            if !crate::agent::opencode::EVENTS.contains(&kind) {
                continue;
            }
            let props = &line["data"]["properties"];
            let event = crate::agent::opencode::event_name(kind);
            let state = state_of(AgentKind::Opencode, &event, props).unwrap();
            if kind == "permission.asked" {
                asked_for = super::asked(props);
            }
            // What `record` keeps: the idle after an error says nothing.
            let recorded = states.last().copied().unwrap_or(AgentState::Unknown);
            if let Some(state) =
                state.filter(|s| !idle_after_error(AgentKind::Opencode, recorded, Some(*s)))
            {
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
            state_of(
                AgentKind::Opencode,
                "opencode-permission.replied",
                &rejected
            )
            .unwrap(),
            None,
            "its idle follows"
        );
        let retry = json!({"status": {"type": "retry", "attempt": 2}});
        assert_eq!(
            state_of(AgentKind::Opencode, "opencode-session.status", &retry).unwrap(),
            Some(Busy)
        );
        assert!(state_of(AgentKind::Opencode, "opencode-message.part.delta", &retry).is_err());
        assert!(state_of(AgentKind::Opencode, "Stop", &retry).is_err());
        assert_eq!(
            state_of(AgentKind::Opencode, "pane-died", &retry).unwrap(),
            Some(AgentState::Exited)
        );
    }

    #[test]
    fn hook_events_map_to_states() {
        let none = serde_json::Value::Null;
        assert_eq!(
            state_for("PreToolUse", &none).unwrap(),
            Some(AgentState::Busy)
        );
        assert_eq!(
            state_for("PermissionRequest", &none).unwrap(),
            Some(AgentState::Waiting)
        );
        assert_eq!(state_for("Stop", &none).unwrap(), Some(AgentState::Idle));
        assert_eq!(
            state_for("StopFailure", &none).unwrap(),
            Some(AgentState::Error)
        );
        assert_eq!(
            state_for("SessionEnd", &none).unwrap(),
            Some(AgentState::Exited)
        );
        assert_eq!(
            state_for("pane-died", &none).unwrap(),
            Some(AgentState::Exited)
        );
        assert_eq!(
            state_for("waiting", &none).unwrap(),
            Some(AgentState::Waiting)
        );
        assert!(state_for("bogus", &none).is_err());
        assert!(state_for("unknown", &none).is_err());
    }

    #[test]
    fn a_question_or_a_plan_waits_from_its_tool_use_and_its_answer_goes_on() {
        for tool in ["AskUserQuestion", "ExitPlanMode"] {
            let hook =
                json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {}});
            assert_eq!(
                state_for("PreToolUse", &hook).unwrap(),
                Some(AgentState::Waiting),
                "{tool}"
            );
            assert_eq!(super::asked(&hook), None, "nothing to approve by name");
            let answered = json!({"hook_event_name": "PostToolUse", "tool_name": tool});
            assert_eq!(
                state_for("PostToolUse", &answered).unwrap(),
                Some(AgentState::Busy)
            );
        }
        let bash = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        assert_eq!(
            state_for("PreToolUse", &bash).unwrap(),
            Some(AgentState::Busy)
        );
    }

    #[test]
    fn notifications_wait_only_for_a_person() {
        let perm = json!({"notification_type": "permission_prompt"});
        let idle = json!({"notification_type": "idle_prompt", "message": "Claude is waiting for your input"});
        let elicit = json!({"notification_type": "elicitation_dialog"});
        let old = json!({"message": "Claude needs your permission to use Bash"});
        assert_eq!(
            state_for("Notification", &perm).unwrap(),
            Some(AgentState::Waiting)
        );
        assert_eq!(
            state_for("Notification", &elicit).unwrap(),
            Some(AgentState::Waiting)
        );
        assert_eq!(state_for("Notification", &idle).unwrap(), None);
        assert_eq!(
            state_for("Notification", &old).unwrap(),
            Some(AgentState::Waiting)
        );
    }

    #[test]
    fn a_sub_agent_stop_leaves_the_parent_alone() {
        let sub = json!({"hook_event_name": "SubagentStop", "agent_id": "ae186a1"});
        let tagged = json!({"hook_event_name": "Stop", "agent_id": "ae186a1"});
        assert_eq!(state_for("Stop", &sub).unwrap(), None);
        assert_eq!(state_for("Stop", &tagged).unwrap(), None);
        assert_eq!(state_for("SubagentStop", &sub).unwrap(), None);
    }

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
    fn codex_notify_ends_a_turn_but_not_its_title_helper() {
        let fixtures = concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/tests/fixtures/screens/codex/0.171.0/notify"
        );
        let mut idle = 0;
        let mut helper = 0;
        for entry in std::fs::read_dir(fixtures).unwrap() {
            let payload: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap())
                    .unwrap();
            match codex_state_for("codex-notify", &payload).unwrap() {
                Some(AgentState::Idle) => idle += 1,
                None => helper += 1,
                other => panic!("{other:?} for {payload}"),
            }
        }
        assert_eq!((idle, helper), (4, 1), "the captured payloads");
        assert_eq!(
            codex_state_for("codex-notify", &json!({"type": "something-else"})).unwrap(),
            None
        );
        assert_eq!(
            codex_state_for("codex-notify", &serde_json::Value::Null).unwrap(),
            None
        );
    }

    /// Measured on the real CLI (tests/it/background.rs): a turn that started a background
    /// shell ends with Stop while the shell runs, and the CLI is then at its prompt; when
    /// the shell ends it wakes the model with a task notification as UserPromptSubmit.
    #[test]
    fn recorded_background_shell_hooks_map_as_captured() {
        let root = concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/tests/fixtures/screens/claude"
        );
        let (mut running, mut woken) = (0, 0);
        for release in ["2.0.77", "2.1.100", "2.1.332"] {
            for entry in std::fs::read_dir(format!("{root}/{release}/hooks")).unwrap() {
                let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
                let hook: serde_json::Value = serde_json::from_str(&text).unwrap();
                let event = hook["hook_event_name"].as_str().unwrap().to_string();
                let state = state_for(&event, &hook).unwrap();
                if event == "UserPromptSubmit" {
                    assert_eq!(state, Some(AgentState::Busy), "{text}");
                    woken += usize::from(text.contains("<task-notification>"));
                }
                if event == "Stop" && hook.get("agent_id").is_none() {
                    assert_eq!(state, Some(AgentState::Idle), "{text}");
                    running += usize::from(text.contains(r#""status":"running""#));
                }
            }
        }
        assert_eq!((running, woken), (1, 3), "the captured background hooks");
    }

    #[test]
    fn compaction_does_not_end_a_turn() {
        let compact = json!({"hook_event_name": "SessionStart", "source": "compact"});
        let clear = json!({"hook_event_name": "SessionStart", "source": "clear"});
        assert_eq!(state_for("SessionStart", &compact).unwrap(), None);
        assert_eq!(state_for("PreCompact", &compact).unwrap(), None);
        assert_eq!(
            state_for("SessionStart", &clear).unwrap(),
            Some(AgentState::Idle)
        );
    }
}
