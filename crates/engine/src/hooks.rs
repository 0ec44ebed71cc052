//! Agents' hook events received: what an event means is its kind's to say
//! (`agent::Agent::hook_state`); the state it says is recorded, announced and passed to
//! the dependency engine. aider's notifications command is settled from its screen here.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::agent::claude::Claude;
use crate::agent::rules::Rules;
use crate::agent::{Agent, AIDER_NOTIFICATION};
use crate::context::Context;
use crate::error::Error;
use crate::error::HealthError;
use crate::state::now_micros;
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
    if let Some(own) = crate::inbox::in_box(&ctx.home) {
        // In a box the record is not there: the word goes to the session's drop folder,
        // and a box says only its own session's words.
        if own != id {
            return Err(Error::BadInput(format!(
                "this sandbox is session {own}'s: it says nothing of {id}"
            )));
        }
        let word = crate::inbox::Word::Hook {
            event: event.to_string(),
            at,
            hook: without_prompt(hook),
        };
        return crate::inbox::leave(&ctx.home, &own, &word);
    }
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

/// [`replay`] for a writer that has not opened the record yet, then the sandboxed
/// sessions' drop folders (`inbox::replay`): it opens the record only when a word waits
/// (a status tick opens the record only when it must).
pub fn replay_spooled(ctx: &Context) -> Result<(), Error> {
    if spooled(&ctx.home).is_empty() && !crate::inbox::waiting(&ctx.home) {
        return Ok(());
    }
    let store = ctx.store()?;
    replay(ctx, &store)?;
    crate::inbox::replay(ctx, &store)
}

/// A hook's word of session `id` read from its drop folder, recorded as [`receive`]
/// records one (its prompt, if any, left out here too).
pub(crate) fn record_word(
    ctx: &Context,
    store: &Store,
    id: &str,
    event: String,
    at: i64,
    hook: serde_json::Value,
) -> Result<(), Error> {
    let word = Spooled {
        id: id.to_string(),
        event,
        at,
        hook: without_prompt(&hook),
    };
    record(ctx, store, &word)
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
    let agent = crate::agent::of(session.agent_kind);
    let state = agent.hook_state(event, hook)?;
    // The conversation the session is in now (claude's `/clear` and `/resume`, the session
    // opencode names to its plugin): remembered, so a restart resumes that one.
    if let Some(conversation) = agent.conversation_named(event, hook) {
        if session.agent_uuid.as_deref() != Some(conversation) {
            store.set_agent_uuid(&session, conversation)?;
        }
    }
    if agent.says_nothing_new(session.state, state) {
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
    let ask = crate::agent::asked::from_hook(hook).and_then(|a| a.relative_to(worktree).phrase());
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
    let Some(state) = Claude.hook_state(event, hook)? else {
        return Ok(());
    };
    let word = crate::remote_hooks::HookWord {
        state: state.to_string(),
        at,
        event: event.to_string(),
        conversation: Claude.conversation_named(event, hook).map(str::to_string),
        // Paths as the host's claude sees them, shown from its folder (the hook's `cwd`).
        asks: crate::agent::asked::from_hook(hook).and_then(|a| {
            let folder = hook.get("cwd").and_then(|c| c.as_str()).unwrap_or_default();
            a.relative_to(Path::new(folder)).phrase()
        }),
    };
    crate::remote_hooks::record_word(home, id, &word)
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

/// What Claude Code's hook `event` means (`agent::claude::state_for`), an event it does
/// not know the command's bad input.
pub fn state_for(event: &str, hook: &serde_json::Value) -> Result<Option<AgentState>, Error> {
    Ok(crate::agent::claude::state_for(event, hook)?)
}
