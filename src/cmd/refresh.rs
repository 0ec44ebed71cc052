//! `orchestra refresh`: one refresh now, of this machine's windows or (`--remote`) of the
//! remote hosts'.

use crate::cli::RefreshArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::health;
use crate::health::remote::{refresh_remote, RemoteRefresh};
use crate::health::tick::refresh_once;

pub fn run(ctx: &Context, args: &RefreshArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.remote {
        return run_remote(ctx, args, out);
    }
    let outcome = refresh_once(ctx)?;
    let transitions: Vec<serde_json::Value> = outcome
        .transitions
        .iter()
        .map(|t| {
            serde_json::json!({
                "id": t.session.id, "label": t.session.label, "kind": t.kind, "old": t.old, "new": t.new,
            })
        })
        .collect();
    if args.json {
        out.line(
            serde_json::json!({
                "tmux_calls": outcome.tmux_calls,
                "captured": outcome.captured,
                "transitions": transitions,
                "summary": outcome.summary,
            })
            .to_string(),
        );
        return Ok(());
    }
    for t in &outcome.transitions {
        out.line(format!(
            "{}: {} {} → {}",
            t.session.label, t.kind, t.old, t.new
        ));
    }
    out.line(format!(
        "refreshed {} window(s): captured {}, {} change(s), {} tmux call(s)",
        outcome.rows.len(),
        outcome.captured,
        outcome.transitions.len(),
        outcome.tmux_calls
    ));
    Ok(())
}

/// `refresh --remote`: one at a time (a lock), every host at once (a thread each).
fn run_remote(ctx: &Context, args: &RefreshArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let lock_path = health::remote_lock_path(&ctx.home);
    let lock = crate::lock::try_exclusive(&lock_path)
        .map_err(Error::io(format!("opening {}", lock_path.display())))?;
    if lock.is_none() {
        out.note("a remote refresh is already running");
        return Ok(());
    }
    let RemoteRefresh { cache, ran } = refresh_remote(ctx)?;
    if args.json {
        out.line(serde_json::to_string_pretty(&cache.hosts).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    for host in &cache.hosts {
        match &host.error {
            None => out.line(format!(
                "{}: {} session(s), {} ms",
                host.name,
                host.rows.len(),
                host.latency_ms
            )),
            Some(e) => out.line(format!("{}: {e}", host.name)),
        }
        if let Some(note) = &host.note {
            out.line(format!("{}: {note}", host.name));
        }
    }
    for line in ran {
        out.line(format!("ran {line}"));
    }
    Ok(())
}
