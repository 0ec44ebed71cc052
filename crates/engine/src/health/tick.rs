//! A status tick on this machine: the local refresh, then the dependency engine for what
//! it may have changed (blocked sessions notice their inputs here, without a daemon).

use crate::context::Context;
use crate::error::Error;
use crate::health::{self, Outcome};

/// One local refresh (`health::refresh`) on the context's tmux server, after the hooks'
/// spooled words, then [`crate::deps::wake`] when it saw blocked sessions or transitions.
pub fn refresh_once(ctx: &Context) -> Result<Outcome, Error> {
    // Words hooks could not record (the record was busy) come first: they are older. Still
    // busy, they wait for the next writer; the refresh goes on.
    match crate::hooks::replay_spooled(ctx) {
        Err(e) if !e.is_busy() => return Err(e),
        _ => {}
    }
    let key = health::server_key(ctx.server.socket.as_deref());
    let rules = || crate::agent::rules::Rules::load(&ctx.home);
    let outcome = health::refresh(&ctx.home, &key, &ctx.tmux(), rules)?;
    let wake = crate::deps::Wake {
        // Status ticks are where blocked sessions notice their inputs, without a daemon.
        edges: outcome.blocked > 0,
        // A transition is when a manifest's `when` may have come true (not on quiet ticks).
        manifest: !outcome.transitions.is_empty(),
        remote_found: &[],
    };
    if wake.edges || wake.manifest {
        match ctx.store() {
            // The `when`s' failure is no tick's business (`status` and `done` report it).
            Ok(store) => drop(crate::deps::wake(ctx, &store, wake)?.ran),
            Err(e) if wake.edges => return Err(e),
            Err(_) => {}
        }
    }
    Ok(outcome)
}
