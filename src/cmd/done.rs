//! `orchestra done`: a session says it has finished; whoever waits for it is told.

use crate::cli::DoneArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::notify::Fallback;
use crate::paths::non_empty_env;
use crate::session::{find_session, session_tmux};
use crate::state::Status;

pub fn run(ctx: &Context, args: &DoneArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let store = ctx.store()?;
    let session = match &args.label {
        Some(label) => find_session(&store, &open_repo(args.repo.repo.as_deref())?, label)?,
        None => {
            let id = non_empty_env("ORCHESTRA_SESSION").ok_or_else(|| {
                Error::BadInput(
                    "which session? give its label, or run it inside one (ORCHESTRA_SESSION)"
                        .into(),
                )
            })?;
            store
                .session_by_id(&id)?
                .ok_or_else(|| Error::BadInput(format!("unknown session id {id:?}")))?
        }
    };
    if matches!(session.status, Status::Merged | Status::Blocked) || session.status.in_setup() {
        return Err(Error::Refused(format!(
            "session {} is {}: it cannot be done",
            session.label, session.status
        )));
    }
    if let Some(t) = store.change_status(&session, Status::Done, "orchestra done")? {
        crate::tell::transition(
            &t,
            None,
            session_tmux(&session).ok().as_ref(),
            &Fallback {
                command: None,
                tmux_socket: session.tmux_socket.clone(),
            },
        );
    }
    out.line(format!("{} is done", session.label));
    let woken = crate::deps::wake(ctx, &store, crate::deps::Wake::all())?;
    for started in &woken.started {
        out.line(started.to_string());
    }
    for started in &woken.started {
        out.line(format!(
            "{} was waiting for it and has started",
            started.label
        ));
    }
    for line in woken.ran? {
        out.line(format!("ran {line}"));
    }
    Ok(())
}
