//! `orchestra status`, `tail`, `attach` and `collect`: every session, dispatched or from
//! the manifest, local or on a remote host, seen the same way.

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::{AttachArgs, CollectArgs, StatusArgs, TailArgs};
use crate::cmd::{open_repo, render_table, Context, Output};
use crate::error::Error;
use crate::session::{find_session, load_manifest, session_tmux};
use crate::state::Status;
use crate::tmux::{Placement, WindowSpec};

#[derive(Debug, Serialize)]
struct StatusRow {
    label: String,
    /// "local" or the host's name.
    host: String,
    /// "manifest" or "dispatched".
    kind: &'static str,
    state: String,
    status: String,
    reachable: bool,
    /// An openssh host with no live master (`orchestra connect HOST`).
    not_connected: bool,
    /// What went wrong reaching the host.
    error: Option<String>,
    /// The folder it works in.
    path: String,
}

pub fn status(ctx: &Context, args: &StatusArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let manifest = load_manifest(&repo, args.manifest.config.as_deref(), false)?;
    // Fresh states first: this machine's windows, then each remote host (in parallel,
    // each bounded by its timeouts).
    if let Err(e) = crate::health::tick::refresh_once(ctx) {
        out.note(format!("could not refresh this machine's windows: {e}"));
    }
    let crate::health::remote::RemoteRefresh { cache: remote, ran } =
        crate::health::remote::refresh_remote(ctx)?;
    // Local `when`s (the remote ones were looked for by the refresh above, within each
    // host's deadline).
    let store = ctx.store()?;
    let manifest_only = crate::deps::Wake {
        manifest: true,
        ..Default::default()
    };
    let local = crate::deps::wake(ctx, &store, manifest_only)?.ran?;
    for line in ran.into_iter().chain(local) {
        out.note(format!("ran {line}"));
    }
    let sessions = store.sessions(Some(&repo.id()), false)?;
    let mut rows = Vec::new();
    for s in &sessions {
        let host = remote
            .hosts
            .iter()
            .find(|h| Some(&h.name) == s.host.as_ref());
        let row = host.and_then(|h| h.rows.iter().find(|r| r.id == s.id));
        rows.push(StatusRow {
            label: s.label.clone(),
            host: s.host.clone().unwrap_or_else(|| "local".into()),
            kind: if s.is_manifest() {
                "manifest"
            } else {
                "dispatched"
            },
            state: row.map_or_else(|| s.state.to_string(), |r| r.state.clone()),
            status: row.map_or_else(|| s.status.to_string(), |r| r.status.clone()),
            reachable: host.is_none_or(|h| h.reachable && h.error.is_none()),
            not_connected: host.is_some_and(|h| h.not_connected),
            error: host.and_then(|h| h.error.clone()),
            path: s.worktree.clone(),
        });
    }
    if let Some((_, manifest)) = &manifest {
        for (name, spec) in &manifest.sessions {
            if sessions.iter().any(|s| &s.label == name) {
                continue;
            }
            rows.push(StatusRow {
                label: name.clone(),
                host: spec.host.clone().unwrap_or_else(|| "local".into()),
                kind: "manifest",
                state: "-".into(),
                status: "down".into(),
                reachable: true,
                not_connected: false,
                error: None,
                path: spec.path.clone(),
            });
        }
    }
    if args.json {
        out.line(serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into()));
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
    for host in &remote.hosts {
        match &host.error {
            Some(e) => out.line(format!("{}: {e}", host.name)),
            None => out.line(format!("{}: answered in {} ms", host.name, host.latency_ms)),
        }
        if let Some(note) = &host.note {
            out.line(format!("{}: {note}", host.name));
        }
    }
    Ok(())
}

pub fn tail(ctx: &Context, args: &TailArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let _ = ctx;
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
    let store = ctx.store()?;
    let session = find_session(&store, &repo, &args.label)?;
    let pane = session
        .pane
        .as_ref()
        .ok_or_else(|| Error::Refused(format!("session {} has no pane", session.label)))?;
    let tmux = session_tmux(&session)?;
    let screen = tmux.capture_pane(pane, lines)?;
    let all: Vec<&str> = screen.trim_end_matches('\n').lines().collect();
    // The screen's empty bottom rows are not output.
    let end = all
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    for line in &all[end.saturating_sub(lines)..end] {
        out.line(line);
    }
    Ok(())
}

pub fn attach(ctx: &Context, args: &AttachArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let store = ctx.store()?;
    let session = find_session(&store, &repo, &args.label)?;
    let (Some(tmux_session), Some(window)) = (&session.tmux_session, &session.window) else {
        return Err(Error::Refused(format!(
            "session {} has no window",
            session.label
        )));
    };
    let tmux = session_tmux(&session)?;
    let local_here = session.host.is_none()
        && ctx.server.inside
        && session.tmux_socket.as_deref().map(std::path::Path::new) == ctx.server.socket.as_deref();
    if local_here {
        tmux.switch_client_to(None, tmux_session, window)?;
        return Ok(());
    }
    let target = format!("={tmux_session}:{window}");
    if session.host.is_some() && ctx.server.inside {
        // Inside tmux: the remote session opens in a window of its own here.
        let argv = tmux.attach_argv(&target);
        let here = ctx.tmux();
        let made = here.new_window(
            &WindowSpec {
                name: &format!(
                    "{}@{}",
                    session.label,
                    session.host.as_deref().unwrap_or("")
                ),
                cwd: &std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
                argv: &argv,
                env: &[],
                placement: Placement::Current,
            },
            &[],
        )?;
        here.run_commands(&[vec![
            "select-window".into(),
            "-t".into(),
            made.window.to_string(),
        ]])?;
        out.line(format!(
            "opened {} in window {}",
            session.label, made.window
        ));
        return Ok(());
    }
    Err(tmux.exec_attach(&target).into())
}

pub fn collect(ctx: &Context, args: &CollectArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let store = ctx.store()?;
    let sessions: Vec<_> = store
        .sessions(Some(&repo.id()), false)?
        .into_iter()
        .filter(|s| s.pane.is_some() && s.status != Status::Dead)
        .collect();
    if sessions.is_empty() {
        out.line("no live sessions to collect");
        return Ok(());
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => ctx
            .home
            .join("collect")
            .join(chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()),
    };
    crate::paths::private_dir(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let mut failed = 0;
    for s in &sessions {
        let captured = session_tmux(s).and_then(|tmux| match &s.pane {
            Some(pane) => Ok(tmux.capture_history(pane)?),
            None => Err(Error::Refused(format!("session {} has no pane", s.label))),
        });
        match captured {
            Ok(text) => {
                let path = dir.join(format!("{}.txt", s.label));
                crate::paths::write_private(&path, text)
                    .map_err(Error::io(format!("writing {}", path.display())))?;
                out.line(path.display().to_string());
            }
            Err(e) => {
                failed += 1;
                out.note(format!("{}: {e}", s.label));
            }
        }
    }
    if failed > 0 {
        return Err(Error::Refused(format!(
            "{failed} of {} session(s) could not be captured",
            sessions.len()
        )));
    }
    Ok(())
}
