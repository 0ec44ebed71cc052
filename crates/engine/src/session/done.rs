//! A session says it has finished (`orchestra done`, or its word from a sandbox's drop
//! folder): its status is done, whoever waits for it is told and woken.

use crate::context::Context;
use crate::deps::Woken;
use crate::error::Error;
use crate::notify::Fallback;
use crate::session::session_tmux;
use crate::state::{Session, Status, Store};

/// `session` done: refused for one merged, blocked or still in its setup; then the
/// dependency engine's pass (what it started and ran).
pub fn finish(ctx: &Context, store: &Store, session: &Session) -> Result<Woken, Error> {
    if matches!(session.status, Status::Merged | Status::Blocked) || session.status.in_setup() {
        return Err(Error::Refused(format!(
            "session {} is {}: it cannot be done",
            session.label, session.status
        )));
    }
    if let Some(t) = store.change_status(session, Status::Done, "orchestra done")? {
        crate::tell::transition(
            &t,
            None,
            session_tmux(session).ok().as_ref(),
            &Fallback {
                command: None,
                tmux_socket: session.tmux_socket.clone(),
            },
        );
    }
    crate::deps::wake(ctx, store, crate::deps::Wake::all())
}
