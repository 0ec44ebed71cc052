//! A waiting session's notification a person can act on: Approve and Deny answer its menu
//! through the same code as `approve`/`deny`, Open shows its window. The notification may
//! be answered long after it went out, so an action first checks the session is still
//! waiting on the very change of state it was offered for, and then the screen is read
//! again as `approve` reads it; a late action sends nothing and says so.

use std::time::Duration;

use crate::agent::menu::Answer;
use crate::context::Context;
use crate::error::Error;
use crate::notify::{self, Action, Fallback, Note, Waited};
use crate::session::{agent_pane, answer::answer_named, record_if_gone};
use crate::state::{AgentState, Session, Store};
use crate::tmux::{Server, Tmux};

/// Shows `note` for session `id`'s wait (its change of state `event`) with actions, where
/// the bus shows them and `@orchestra-notify-wait` is not off, and acts on the one chosen.
/// `asks`: what the note says is asked ("run: npm test"); Approve and Deny answer only
/// that question. Returns what became of it; `None` when no actions were offered (send
/// `note` plainly).
pub fn offer(
    ctx: &Context,
    id: &str,
    event: i64,
    note: &Note,
    asks: Option<&str>,
    fallback: &Fallback,
) -> Result<Option<String>, Error> {
    let bound = wait_bound(fallback.tmux_socket.as_deref());
    if bound.is_zero() || !notify::offers_actions() {
        return Ok(None);
    }
    let Some(session) = ctx.store()?.session_by_id(id)? else {
        return Ok(None);
    };
    // A remote session's window is on another machine's server: nothing here to show.
    let actions: &[Action] = if session.host.is_none() {
        &[Action::Approve, Action::Deny, Action::Open]
    } else {
        &[Action::Approve, Action::Deny]
    };
    // Once the wait it names has ended (answered by hand or by `approve`, or a later
    // change recorded), its buttons could only be refused: it is taken down.
    let store = ctx.store()?;
    let mut still_asked = || still_waiting_on(&store, id, event).unwrap_or(true);
    let Some(waited) = notify::show_and_wait(note, actions, bound, &mut still_asked) else {
        return Ok(None);
    };
    drop(store);
    let action = match waited {
        Waited::Dismissed => return Ok(Some("dismissed".into())),
        Waited::Outlived => return Ok(Some("the wait ended first: closed".into())),
        Waited::GaveUp => {
            return Ok(Some(format!(
                "no action within {}: closed",
                crate::duration::spell(bound)
            )))
        }
        Waited::Chose(action) => action,
    };
    match act(ctx, id, event, action, asks) {
        Ok(done) => Ok(Some(done)),
        Err(e) => {
            // The person acted and is owed an answer: the one way they are told.
            let said = Note {
                title: format!("orchestra: {} {}: not done", session.label, action.label()),
                body: e.to_string(),
            };
            notify::send(&said, fallback);
            Err(e)
        }
    }
}

/// `@orchestra-notify-wait` on the session's server: how long a notification's actions
/// are waited for (`0`/`off`: none offered); [`notify::ACTION_WAIT`] when unset or unread.
fn wait_bound(socket: Option<&str>) -> Duration {
    let tmux = Tmux::new(&Server::at(socket));
    match tmux.global_option(crate::tmux::options::NOTIFY_WAIT) {
        Ok(Some(text)) if text.trim() == "off" => Duration::ZERO,
        Ok(Some(text)) => crate::duration::parse(&text).unwrap_or(notify::ACTION_WAIT),
        _ => notify::ACTION_WAIT,
    }
}

/// Carries out `action` for session `id`, offered for its change of state `event` and,
/// when the notification named one, the question `asks`.
pub fn act(
    ctx: &Context,
    id: &str,
    event: i64,
    action: Action,
    asks: Option<&str>,
) -> Result<String, Error> {
    let store = ctx.store()?;
    let session = store
        .session_by_id(id)?
        .ok_or_else(|| Error::Refused(format!("session {id} is gone: nothing done")))?;
    let answer = match action {
        Action::Open => return open(ctx, &session),
        Action::Approve => Answer::Yes,
        Action::Deny => Answer::No,
    };
    // A menu on screen now may be a later question than the one this notification named.
    if !still_waiting_on(&store, id, event)? {
        return Err(Error::Refused(format!(
            "{} is no longer waiting on what the notification asked (it is {} now): nothing sent",
            session.label, session.state
        )));
    }
    drop(store);
    // The same change of state can hold a later question (a menu answered in the pane,
    // then another asked with no change recorded between): only the one named is answered.
    let chosen = answer_named(ctx, &session, answer, asks)?;
    Ok(format!("{}: chose {chosen:?}", session.label))
}

/// Whether session `id` still waits on its change of state `event` (its newest one, and
/// a wait): what a notification offered for that change may still act on.
fn still_waiting_on(store: &Store, id: &str, event: i64) -> Result<bool, Error> {
    let Some(session) = store.session_by_id(id)? else {
        return Ok(false);
    };
    Ok(session.state == AgentState::Waiting && store.last_state_event(id)? == Some(event))
}

/// Shows the session's window on the attached client that was active most recently.
fn open(ctx: &Context, session: &Session) -> Result<String, Error> {
    let (Some(tmux_session), Some(window)) = (&session.tmux_session, &session.window) else {
        return Err(Error::Refused(format!(
            "session {} has no window",
            session.label
        )));
    };
    let result = agent_pane(session).and_then(|(tmux, pane)| {
        let client = tmux.most_recent_client()?.ok_or_else(|| {
            Error::Refused(format!(
                "no tmux client is attached to show {} on",
                session.label
            ))
        })?;
        tmux.switch_client_if_ours(&client, &pane, tmux_session, window)?;
        Ok(client)
    });
    let client = record_if_gone(ctx, session, result)?;
    Ok(format!("{} shown on {client}", session.label))
}
