//! `orchestra notify` (hidden): sends one notification, from the detached child that
//! `notify::spawn` starts; for a waiting session (`--session`, `--event`) it stays to act
//! on the action chosen, where the bus shows actions.

use crate::cli::NotifyArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::notify::{self, Fallback, Note};

/// `orchestra notify`: send one notification now (the detached half of `notify::spawn`).
pub fn notify(ctx: &Context, args: &NotifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let note = Note {
        title: args.title.clone(),
        body: args.body.clone(),
    };
    let fallback = Fallback {
        command: args.fallback_cmd.clone(),
        tmux_socket: ctx
            .server
            .socket
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    };
    if let (Some(id), Some(event)) = (&args.session, args.event) {
        if let Some(done) = crate::session::notified::offer(ctx, id, event, &note, &fallback)? {
            out.line(done);
            return Ok(());
        }
    }
    let via = notify::send(&note, &fallback);
    out.line(format!("sent via {via}"));
    Ok(())
}
