//! `orchestra watch`: the health table redrawn in place, with the radar's pairs under it.

use crate::cmd::{conflict_table, cost_cells, health_table, Context, Output};
use crate::error::Error;
use crate::health;
use crate::health::remote::add_remote_rows;
use crate::health::tick::refresh_once;

/// Redraws the health table in place: cursor home, the table, clear what is left below.
pub fn watch(ctx: &Context, interval: u64, count: u64, out: &mut Output<'_>) -> Result<(), Error> {
    let mut drawn = 0;
    loop {
        let mut frame = Vec::new();
        {
            let mut sink = std::io::sink();
            let mut buffer = Output {
                out: &mut frame,
                err: &mut sink,
            };
            let mut outcome = refresh_once(ctx)?;
            // The dashboard never waits for a host or a radar pass: it shows what the
            // last one found, and starts the next when it is due.
            let _ = health::remote::status_part(ctx);
            let _ = crate::radar::run::status_part(ctx, outcome.radar_every);
            let _ = crate::pr::refresh::status_part(ctx, outcome.pr_every);
            let mut pulls = crate::cmd::pull_cells(ctx)?;
            for row in &mut outcome.rows {
                row.pull_request = pulls.remove(&row.id);
            }
            let remote = health::load_remote_cache(&ctx.home).unwrap_or_default();
            add_remote_rows(&mut outcome, &remote);
            health_table(&outcome, &cost_cells(ctx)?, &mut buffer);
            // A host's rows show what was recorded; why it was not read is said under them
            // (`not connected — orchestra connect gpu`).
            for host in &remote.hosts {
                if let Some(error) = &host.error {
                    buffer.line(format!("{}: {}", host.name, crate::inert::line(error)));
                }
            }
            groups_lines(ctx, &mut buffer)?;
            conflicts_table(ctx, &mut buffer)?;
        }
        let now = chrono::Local::now().format("%H:%M:%S");
        let _ = write!(
            out.out,
            "\x1b[H\x1b[2Korchestra · {now} · Ctrl-C to leave\n\x1b[2K\n"
        );
        for line in String::from_utf8_lossy(&frame).lines() {
            let _ = writeln!(out.out, "\x1b[2K{line}");
        }
        let _ = write!(out.out, "\x1b[J");
        let _ = out.out.flush();
        drawn += 1;
        if count > 0 && drawn >= count {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs(interval.max(1)));
    }
}

/// The groups' candidates together, under the health table: `api: api-1 busy, api-2 idle`.
fn groups_lines(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    let store = ctx.store()?;
    let sessions = store.sessions(None, false)?;
    let mut lines = Vec::new();
    for g in store.groups(None)? {
        let members: Vec<String> = sessions
            .iter()
            .filter(|s| g.members.contains(&s.id))
            .map(|s| format!("{} {}", s.label, s.badge()))
            .collect();
        if !members.is_empty() {
            lines.push(format!("{}: {}", g.label, members.join(", ")));
        }
    }
    if !lines.is_empty() {
        out.line("");
        out.line("groups:");
        for line in lines {
            out.line(format!("  {line}"));
        }
    }
    Ok(())
}

/// The pairs the conflict radar last found, under the health table; nothing without any.
fn conflicts_table(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    let store = ctx.store()?;
    let rows = crate::radar::run::rows(&store.conflicts(None)?, &store.sessions(None, false)?);
    if !rows.is_empty() {
        out.line("");
        out.line("conflicts (if merged):");
        conflict_table(&rows, out);
    }
    Ok(())
}
