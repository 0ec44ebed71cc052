//! `orchestra done`: a session says it has finished; whoever waits for it is told. Inside
//! a sandbox the record is out of reach: the word goes to the session's drop folder and
//! the next status tick says it.

use crate::cli::DoneArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::paths::non_empty_env;
use crate::session::find_session;

pub fn run(ctx: &Context, args: &DoneArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if let Some(own) = crate::inbox::in_box(&ctx.home) {
        if args.label.is_some() {
            return Err(Error::BadInput(
                "inside a sandbox orchestra done says only its own session's: run it without a label"
                    .into(),
            ));
        }
        let word = crate::inbox::Word::Done {
            at: crate::health::now_micros(),
        };
        crate::inbox::leave(&ctx.home, &own, &word)?;
        out.line("done: orchestra records it on its next status tick");
        return Ok(());
    }
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
    let woken = crate::session::done::finish(ctx, &store, &session)?;
    out.line(format!("{} is done", session.label));
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
