//! `orchestra health`: every session's state now, here and on remote hosts, as a table.

use std::collections::BTreeMap;

use crate::cli::HealthArgs;
use crate::cmd::{cost_cells, health_table, Context, Output};
use crate::error::Error;
use crate::health::releases;
use crate::health::remote::{add_remote_rows, refresh_remote};
use crate::health::tick::refresh_once;

pub fn health(ctx: &Context, args: &HealthArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let mut outcome = refresh_once(ctx)?;
    let store = ctx.store()?;
    let mut stranded = store.stranded_reasons(None)?;
    let mut pulls = crate::cmd::pull_cells(ctx)?;
    // Releases whose screens the rules were not proven on: said once each, with the
    // sessions that run them.
    let mut unproven: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in &mut outcome.rows {
        if let Some(why) = stranded.remove(&row.id) {
            row.status = format!("{} ({why})", row.status);
        }
        row.permission_mode = crate::hooks::permission_mode(&ctx.home, &row.id);
        row.pull_request = pulls.remove(&row.id);
        let Some(session) = store.session_by_id(&row.id)? else {
            continue;
        };
        let Some(release) = releases::learn(&ctx.home, &session) else {
            continue;
        };
        let note = releases::unproven_note(session.agent_kind, &release);
        row.rules_proven = Some(note.is_none());
        row.agent_release = Some(release);
        if let Some(note) = note {
            unproven.entry(note).or_default().push(row.label.clone());
        }
    }
    // Remote sessions live: each host once, in parallel, bounded by its timeouts.
    let remote = refresh_remote(ctx)?.cache;
    add_remote_rows(&mut outcome, &remote);
    for row in outcome.rows.iter().filter(|r| r.host.is_some()) {
        let (Some(release), Some(session)) = (&row.agent_release, store.session_by_id(&row.id)?)
        else {
            continue;
        };
        if let Some(note) = releases::unproven_note(session.agent_kind, release) {
            unproven.entry(note).or_default().push(row.label.clone());
        }
    }
    if args.json {
        out.line(serde_json::to_string_pretty(&outcome.rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    health_table(&outcome, &cost_cells(ctx)?, out);
    for (note, labels) in &unproven {
        out.line(crate::inert::line(&format!(
            "{note} ({})",
            labels.join(", ")
        )));
    }
    for host in &remote.hosts {
        for said in host.error.iter().chain(&host.note) {
            out.line(format!("{}: {said}", host.name));
        }
    }
    Ok(())
}
