//! The one place a person is told. What a note says for each occasion (a transition that
//! needs a person, with what a waiting agent asks; a budget mark crossed; a conflict the
//! radar found; a dependent started, or left blocked by a killed upstream; a setup that
//! failed) and how it reaches them: a tmux message on the client of a person looking at
//! the session's window right now, else a desktop notification, a waiting session's with
//! its actions. Sending is `notify`'s (orchestra-sys, the effect); nothing else in the
//! engine calls it to tell anyone.

use std::collections::HashMap;
use std::path::Path;

use crate::cost::Crossed;
use crate::error::Error;
use crate::notify::{Fallback, Note};
use crate::state::{AgentState, Conflict, Session, Status, Transition, TransitionKind};
use crate::tmux::Tmux;

/// Shows a recorded state change at once: the window's badge and, where the change needs
/// a person, a notification (ONE tmux call for the badge and the notify command). `ask`:
/// what a waiting agent asks for, one short line ("run: npm test"). A person already
/// looking at the window gets a tmux message on that client instead of a notification.
pub fn announce(transition: &Transition, ask: Option<&str>) -> Result<(), Error> {
    let Some(window) = &transition.session.window else {
        return Ok(());
    };
    let tmux = crate::session::session_tmux(&transition.session)?;
    let notify_cmd = tmux
        .set_badge(
            window,
            transition.session.badge(),
            crate::tmux::options::NOTIFY_CMD,
        )
        .ok()
        .flatten();
    self::transition(
        transition,
        ask,
        Some(&tmux),
        &Fallback {
            command: notify_cmd,
            tmux_socket: transition.session.tmux_socket.clone(),
        },
    );
    Ok(())
}

/// Tells a person of transition `t` (`ask`: what a waiting agent asks for): on the desktop,
/// or, when an attached client looks at the session's window right now, as a tmux message
/// to that client instead. `tmux`: the session's server where it runs here (`None`: nobody
/// here can be looking). Unknown who looks (tmux did not answer): the notification goes out.
/// Only transitions into waiting, error, exited (state) or stalled, done, setup-failed
/// (status) need a person ([`note_for`]).
pub fn transition(t: &Transition, ask: Option<&str>, tmux: Option<&Tmux>, fallback: &Fallback) {
    let ask = ask.map(said_ask);
    let ask = ask.as_deref().filter(|a| !a.is_empty());
    let Some(note) = note_for(t, ask) else {
        return;
    };
    let viewers = match (tmux, &t.session.window) {
        (Some(tmux), Some(window)) => tmux
            .clients_viewing(window)
            .unwrap_or_default()
            .into_iter()
            .map(|client| (tmux, client))
            .collect(),
        _ => Vec::new(),
    };
    if viewers.is_empty() {
        let way = if t.kind == TransitionKind::State && t.new == AgentState::Waiting.as_str() {
            Way::Waiting {
                asks: ask.map(str::to_string),
                session: t.session.id.clone(),
                event: t.event,
            }
        } else {
            Way::Plain
        };
        send(&note, fallback, way);
    }
    for (tmux, client) in viewers {
        let shown = note.shown();
        let _ = tmux.message_client(&client, &format!("{}: {}", shown.title, shown.body));
    }
}

/// What is asked as a person is told of it. A phrase made here is that already; a host's
/// word says it in the host's own words, and is bounded and shown inert the same way.
fn said_ask(ask: &str) -> String {
    crate::inert::cut(ask, crate::notify::ASK_CHARS + "fetch ".len())
}

/// What a person is told of transition `t`, `None` when it needs no person. `ask`: what a
/// waiting agent asks for ("run: npm test"), already one short inert line ([`said_ask`]).
pub fn note_for(t: &Transition, ask: Option<&str>) -> Option<Note> {
    let what = match (t.kind, t.new.as_str()) {
        (TransitionKind::State, "waiting") => "is waiting for you",
        (TransitionKind::State, "error") => "stopped on an error",
        (TransitionKind::State, "exited") => "exited",
        (TransitionKind::Status, "stalled") => "has stalled (busy, no output)",
        (TransitionKind::Status, "done") => "is done",
        (TransitionKind::Status, "setup-failed") => "could not finish its setup",
        _ => return None,
    };
    let repo = repo_name(&t.session.repo);
    let label = &t.session.label;
    let body = match ask.filter(|a| !a.is_empty() && t.new.as_str() == "waiting") {
        Some(ask) => format!("{label} wants to {ask} (in {repo})"),
        None => format!("session {label} in {repo} {what}"),
    };
    Some(Note {
        title: format!("orchestra: {label} {what}"),
        body,
    })
}

/// Tells a person that a session's cost crossed 80 % or 100 % of `@orchestra-budget`
/// (each mark once: the cost watch decides which are new).
pub fn budget_crossed(crossed: &Crossed, fallback: &Fallback) {
    send(&budget_note(crossed), fallback, Way::Plain);
}

fn budget_note(crossed: &Crossed) -> Note {
    let label = &crossed.session.label;
    let repo = repo_name(&crossed.session.repo);
    Note {
        title: format!("orchestra: {label} at {}% of its budget", crossed.percent),
        body: format!(
            "session {label} in {repo} has cost {} of {} (@orchestra-budget); it keeps running",
            crate::cost::usd_text(Some(crossed.cost_usd)),
            crate::cost::usd_text(Some(crossed.budget))
        ),
    }
}

/// Tells a person of a conflict the radar found just now: "api and auth both change
/// src/login.rs". `by_id`: the sessions that may be either side.
pub fn conflict(c: &Conflict, by_id: &HashMap<&str, &Session>, fallback: &Fallback) {
    send(&conflict_note(c, by_id), fallback, Way::Plain);
}

fn conflict_note(c: &Conflict, by_id: &HashMap<&str, &Session>) -> Note {
    let a = by_id
        .get(c.session.as_str())
        .map_or(c.session.as_str(), |s| s.label.as_str());
    let b = c.other_name(by_id);
    let repo = repo_name(&c.repo);
    Note {
        title: format!("orchestra: {a} and {b} conflict"),
        body: format!(
            "{a} and {b} both change {} in {repo}{}",
            crate::paths::short_list(&c.paths),
            if c.uncommitted {
                " (uncommitted work)"
            } else {
                ""
            }
        ),
    }
}

/// Tells a person that a session's pull request turned: its checks failing ("lint
/// failed on #12") or changes requested. Once per turn: the refresh sends it only when the
/// state it read differs from the one it kept.
pub fn pull_request_turned(session: &Session, what: &str, command: Option<String>) {
    let note = Note {
        title: format!("orchestra: {} {what}", session.label),
        body: format!("{what}, in {}", repo_name(&session.repo)),
    };
    send(&note, &session_fallback(session, command), Way::Plain);
}

/// Tells a person that blocked `session` was started: `ready` names what it waited for
/// ("report.json (from api)").
pub fn started(session: &Session, ready: &[String]) {
    let note = Note {
        title: format!("orchestra: {} started", session.label),
        // The title names who started: the message tmux shows is "title: body".
        body: format!("{} ready", ready.join(", ")),
    };
    send(&note, &session_fallback(session, None), Way::Plain);
}

/// Tells a person that `dependent` stays blocked because its upstream was killed (`why`
/// says which, and how to close it).
pub fn stays_blocked(dependent: &Session, why: &str) {
    let note = Note {
        title: format!("orchestra: {} stays blocked", dependent.label),
        body: why.to_string(),
    };
    send(&note, &session_fallback(dependent, None), Way::Plain);
}

/// Shows that `session`'s setup failed (`why`): its window's badge, then a notification
/// that says how to run the setup again.
pub fn setup_failed(session: &Session, why: &str) -> Result<(), Error> {
    let label = &session.label;
    let tmux = crate::session::session_tmux(session)?;
    let command = session.window.as_ref().and_then(|w| {
        tmux.set_badge(
            w,
            Status::SetupFailed.as_str(),
            crate::tmux::options::NOTIFY_CMD,
        )
        .ok()
        .flatten()
    });
    let note = Note {
        title: format!("orchestra: {label} setup failed"),
        body: format!("{why}: `orchestra restart {label}` runs it again"),
    };
    send(&note, &session_fallback(session, command), Way::Plain);
    Ok(())
}

fn session_fallback(session: &Session, command: Option<String>) -> Fallback {
    Fallback {
        command,
        tmux_socket: session.tmux_socket.clone(),
    }
}

/// The name a person knows a repo by: its folder's.
fn repo_name(repo: &str) -> String {
    Path::new(repo)
        .file_name()
        .map_or_else(|| repo.to_string(), |n| n.to_string_lossy().into_owned())
}

/// How a note goes out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Way {
    /// Shown, no actions.
    Plain,
    /// To a person `session` waits for: with its actions where the bus shows them, acting
    /// only while the session's newest change is still `event` and the screen still asks
    /// what `asks` names.
    Waiting {
        asks: Option<String>,
        session: String,
        event: i64,
    },
}

/// The one call of `notify`'s senders.
fn send(note: &Note, fallback: &Fallback, way: Way) {
    // A unit test's binary is not orchestra, so what it would start is no notification:
    // the note is kept for the test to read instead.
    #[cfg(test)]
    SENT.with_borrow_mut(|sent| {
        sent.push(Sent {
            note: note.clone(),
            fallback: fallback.clone(),
            way,
        });
    });
    #[cfg(not(test))]
    match way {
        Way::Plain => crate::notify::spawn(note, fallback),
        Way::Waiting {
            asks,
            session,
            event,
        } => crate::notify::spawn_waiting(note, asks.as_deref(), fallback, &session, event),
    }
}

#[cfg(test)]
#[derive(Debug, Clone)]
struct Sent {
    note: Note,
    fallback: Fallback,
    way: Way,
}

#[cfg(test)]
thread_local! {
    static SENT: std::cell::RefCell<Vec<Sent>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What this thread sent since it last asked.
#[cfg(test)]
fn sent() -> Vec<Sent> {
    SENT.take()
}

#[cfg(test)]
mod tests;
