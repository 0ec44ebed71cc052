//! `orchestra health`: every session's state now, here and on remote hosts, as a table.

use crate::cli::HealthArgs;
use crate::cmd::{cost_cells, health_table, Context, Output};
use crate::error::Error;
use crate::health::remote::{add_remote_rows, refresh_remote};
use crate::health::tick::refresh_once;

pub fn health(ctx: &Context, args: &HealthArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let mut outcome = refresh_once(ctx)?;
    let mut stranded = ctx.store()?.stranded_reasons(None)?;
    for row in &mut outcome.rows {
        if let Some(why) = stranded.remove(&row.id) {
            row.status = format!("{} ({why})", row.status);
        }
        row.permission_mode = crate::hooks::permission_mode(&ctx.home, &row.id);
    }
    // Remote sessions live: each host once, in parallel, bounded by its timeouts.
    let remote = refresh_remote(ctx)?.cache;
    add_remote_rows(&mut outcome, &remote);
    if args.json {
        out.line(serde_json::to_string_pretty(&outcome.rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    health_table(&outcome, &cost_cells(ctx)?, out);
    for host in &remote.hosts {
        for said in host.error.iter().chain(&host.note) {
            out.line(format!("{}: {said}", host.name));
        }
    }
    Ok(())
}
