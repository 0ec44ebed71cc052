//! `orchestra notify` (hidden): sends one notification, from the detached child that
//! `notify::spawn` starts; for a waiting session (`--session`, `--event`) it stays to act
//! on the action chosen, where the bus shows actions.

use crate::cli::NotifyArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::notify::{self, Fallback, Sent};

/// How much of its stdin the sender reads: a note is a few KiB at most.
const SENT_BYTES: u64 = 64 * 1024;

/// `orchestra notify`: send one notification now (the detached half of `notify::spawn`).
pub fn notify(ctx: &Context, args: &NotifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let sent = if args.stdin {
        let mut text = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::io::stdin().lock(), SENT_BYTES),
            &mut text,
        )
        .map_err(Error::io("reading the note"))?;
        serde_json::from_slice::<Sent>(&text)
            .map_err(|e| Error::BadInput(format!("the note on stdin is not valid: {e}")))?
    } else {
        Sent {
            title: args.title.clone().unwrap_or_default(),
            body: args.body.clone(),
            asks: None,
        }
    };
    let note = sent.note();
    let fallback = Fallback {
        command: args.fallback_cmd.clone(),
        tmux_socket: ctx
            .server
            .socket
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    };
    if let (Some(id), Some(event)) = (&args.session, args.event) {
        if let Some(done) =
            crate::session::notified::offer(ctx, id, event, &note, sent.asks.as_deref(), &fallback)?
        {
            out.line(done);
            return Ok(());
        }
    }
    let via = notify::send(&note, &fallback);
    out.line(format!("sent via {via}"));
    Ok(())
}
