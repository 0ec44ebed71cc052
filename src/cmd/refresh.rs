//! `orchestra refresh`, `status-line` and `health`: the status path.

use crate::cli::{HealthArgs, RefreshArgs};
use crate::cmd::{human_age, render_table, Context, Output};
use crate::error::Error;
use crate::health::{self, Outcome};

pub fn refresh_once(ctx: &Context) -> Result<Outcome, Error> {
    let key = health::server_key(ctx.server.socket.as_deref());
    let rules = || crate::agent::rules::Rules::load(&ctx.home);
    let outcome = health::refresh(&ctx.home, &key, &ctx.tmux(), rules)?;
    // Status ticks are where blocked sessions notice their inputs, without a daemon.
    if outcome.blocked > 0 {
        let store = ctx.store()?;
        crate::cmd::quietly(|quiet| crate::cmd::deps::start_ready(ctx, &store, quiet))?;
    }
    Ok(outcome)
}

pub fn run(ctx: &Context, args: &RefreshArgs, out: &mut Output<'_>) -> Result<(), Error> {
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

pub fn status_line(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    let key = health::server_key(ctx.server.socket.as_deref());
    let summary = health::status_line(&ctx.home, &key, || {
        refresh_once(ctx).map_err(|e| match e {
            Error::Health(h) => h,
            Error::State(s) => health::HealthError::State(s),
            Error::Tmux(t) => health::HealthError::Tmux(t),
            other => health::HealthError::Other(other.to_string()),
        })
    })?;
    out.line(summary);
    Ok(())
}

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
            table(ctx, &refresh_once(ctx)?, &mut buffer);
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

pub fn health(ctx: &Context, args: &HealthArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let outcome = refresh_once(ctx)?;
    if args.json {
        out.line(serde_json::to_string_pretty(&outcome.rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    table(ctx, &outcome, out);
    Ok(())
}

fn table(_ctx: &Context, outcome: &Outcome, out: &mut Output<'_>) {
    if outcome.rows.is_empty() {
        out.line("no orchestra windows on this tmux server");
        return;
    }
    let rows: Vec<Vec<String>> = outcome
        .rows
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.state.clone(),
                r.status.clone(),
                if r.source.is_empty() {
                    "-".into()
                } else {
                    r.source.clone()
                },
                human_age(r.state_age),
                human_age(r.idle_for),
                match (&r.screen, &r.rule) {
                    (Some(s), Some(rule)) => format!("{s} ({rule})"),
                    (Some(s), None) => s.clone(),
                    _ => "-".into(),
                },
                r.window.clone(),
                r.pane.clone(),
            ]
        })
        .collect();
    for line in render_table(
        &[
            "LABEL", "STATE", "STATUS", "SAID BY", "SINCE", "QUIET", "SCREEN", "WINDOW", "PANE",
        ],
        &rows,
    ) {
        out.line(line);
    }
}
