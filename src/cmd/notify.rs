//! `orchestra notify` (hidden): sends one notification, from the detached child that
//! `notify::spawn` starts.

use crate::cli::NotifyArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::notify::{self, Fallback, Note};

/// `orchestra notify`: send one notification now (the detached half of `notify::spawn`).
pub fn notify(ctx: &Context, args: &NotifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let via = notify::send(
        &Note {
            title: args.title.clone(),
            body: args.body.clone(),
        },
        &Fallback {
            command: args.fallback_cmd.clone(),
            tmux_socket: ctx
                .server
                .socket
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
        },
    );
    out.line(format!("sent via {via}"));
    Ok(())
}
