//! `orchestra status`, `tail`, `attach` and `collect`: every session, dispatched or from
//! the manifest, local or on a remote host, seen the same way (`session::view` looks).

use crate::cli::{AttachArgs, CollectArgs, StatusArgs, TailArgs};
use crate::cmd::{open_repo, render_table, Context, Output};
use crate::error::Error;
use crate::session::{find_session, load_manifest, view};

pub fn status(ctx: &Context, args: &StatusArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let manifest = load_manifest(&repo, args.manifest.config.as_deref(), false)?;
    let overview = view::overview(ctx, &repo, manifest.as_ref().map(|(_, m)| m), out)?;
    let rows = &overview.rows;
    if args.json {
        out.line(serde_json::to_string_pretty(rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    if rows.is_empty() {
        out.line(
            "no sessions (dispatch one, or describe them in orchestra.toml and run `orchestra up`)",
        );
        return Ok(());
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.host.clone(),
                r.state.clone(),
                r.status.clone(),
                match (&r.error, r.reachable) {
                    (None, true) if r.host == "local" => "-".into(),
                    (None, true) => "reachable".into(),
                    (_, false) if r.not_connected => "NOT CONNECTED".into(),
                    (_, false) => "UNREACHABLE".into(),
                    (Some(_), true) => "ERROR".into(),
                },
                r.path.clone(),
            ]
        })
        .collect();
    for line in render_table(
        &["LABEL", "HOST", "STATE", "STATUS", "HOST OK", "PATH"],
        &table,
    ) {
        out.line(line);
    }
    // What a host says of itself is its own text: one line each.
    for host in &overview.hosts {
        match &host.error {
            Some(e) => out.line(format!("{}: {}", host.name, crate::inert::line(e))),
            None => out.line(format!("{}: answered in {} ms", host.name, host.latency_ms)),
        }
        if let Some(note) = &host.note {
            out.line(format!("{}: {}", host.name, crate::inert::line(note)));
        }
    }
    Ok(())
}

pub fn tail(ctx: &Context, args: &TailArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let lines = match args.lines {
        Some(0) => {
            return Err(Error::BadInput(
                "the number of lines must be 1 or more".into(),
            ))
        }
        Some(n) => n,
        None => load_manifest(&repo, args.manifest.config.as_deref(), false)?
            .map_or(50, |(_, m)| m.orchestrator.capture_lines.max(1)),
    };
    let session = find_session(&ctx.store()?, &repo, &args.label)?;
    for line in view::last_lines(&session, lines)? {
        out.line(line);
    }
    Ok(())
}

pub fn attach(ctx: &Context, args: &AttachArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let session = find_session(&ctx.store()?, &repo, &args.label)?;
    if let Some(window) = view::attach(ctx, &session)? {
        out.line(format!("opened {} in window {window}", session.label));
    }
    Ok(())
}

pub fn collect(ctx: &Context, args: &CollectArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    if !view::collect(ctx, &repo, args.dir.as_deref(), out)? {
        out.line("no live sessions to collect");
    }
    Ok(())
}
