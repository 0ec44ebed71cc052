//! Looking at sessions: every session of a repo seen the same way — dispatched or from
//! the manifest, local or on a remote host — after a fresh look; a pane's last lines; a
//! session's window brought up here; every live session's history saved to files.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::session_tmux;
use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::health::HostSeen;
use crate::manifest::Manifest;
use crate::report::Report;
use crate::state::{Session, Status};
use crate::tmux::{Placement, WindowId, WindowSpec};

/// One session as the overview shows it.
#[derive(Debug, Serialize)]
pub struct Row {
    pub label: String,
    /// "local" or the host's name.
    pub host: String,
    /// "manifest" or "dispatched".
    pub kind: &'static str,
    pub state: String,
    pub status: String,
    pub reachable: bool,
    /// An openssh host with no live master (`orchestra connect HOST`).
    pub not_connected: bool,
    /// What went wrong reaching the host.
    pub error: Option<String>,
    /// The folder it works in.
    pub path: String,
}

/// Every session of a repo and what each remote host answered.
pub struct Overview {
    pub rows: Vec<Row>,
    pub hosts: Vec<HostSeen>,
}

/// Every session of `repo` after a fresh look: this machine's windows refreshed, each
/// remote host's (in parallel, each bounded by its timeouts), the manifest's local
/// `when`s run; then the manifest's sessions that are down. What could not be refreshed
/// and what ran are said to `report` as notes.
pub fn overview(
    ctx: &Context,
    repo: &Repo,
    manifest: Option<&Manifest>,
    report: &mut dyn Report,
) -> Result<Overview, Error> {
    if let Err(e) = crate::health::tick::refresh_once(ctx) {
        report.note(format!("could not refresh this machine's windows: {e}"));
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
        report.note(format!("ran {line}"));
    }
    let sessions = store.sessions(Some(&repo.id()), false)?;
    let mut rows = Vec::new();
    for s in &sessions {
        let host = remote
            .hosts
            .iter()
            .find(|h| Some(&h.name) == s.host.as_ref());
        let row = host.and_then(|h| h.rows.iter().find(|r| r.id == s.id));
        rows.push(Row {
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
    for (name, spec) in manifest.iter().flat_map(|m| &m.sessions) {
        if sessions.iter().any(|s| &s.label == name) {
            continue;
        }
        rows.push(Row {
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
    Ok(Overview {
        rows,
        hosts: remote.hosts,
    })
}

/// The last `lines` lines `session`'s pane shows, its empty bottom rows left out.
pub fn last_lines(session: &Session, lines: usize) -> Result<Vec<String>, Error> {
    let pane = session
        .pane
        .as_ref()
        .ok_or_else(|| Error::Refused(format!("session {} has no pane", session.label)))?;
    let screen = session_tmux(session)?.capture_pane(pane, lines)?;
    let all: Vec<&str> = screen.trim_end_matches('\n').lines().collect();
    // The screen's empty bottom rows are not output.
    let end = all
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    Ok(all[end.saturating_sub(lines)..end]
        .iter()
        .map(std::string::ToString::to_string)
        .collect())
}

/// Brings `session`'s window up: this client switched to it when it is on this tmux
/// server (`None`), else, inside tmux, a window of its own here attached to it (that
/// window), else this process becomes the attaching client (it returns only on failure).
pub fn attach(ctx: &Context, session: &Session) -> Result<Option<WindowId>, Error> {
    let (Some(tmux_session), Some(window)) = (&session.tmux_session, &session.window) else {
        return Err(Error::Refused(format!(
            "session {} has no window",
            session.label
        )));
    };
    let tmux = session_tmux(session)?;
    let local_here = session.host.is_none()
        && ctx.server.inside
        && session.tmux_socket.as_deref().map(Path::new) == ctx.server.socket.as_deref();
    if local_here {
        tmux.switch_client_to(None, tmux_session, window)?;
        return Ok(None);
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
        return Ok(Some(made.window));
    }
    Err(tmux.exec_attach(&target).into())
}

/// Saves the whole history of every live session of `repo` to `<dir>/<label>.txt`
/// (`dir` by default a new folder under the home's collect/), each file said to `report`
/// as it is written and each session that could not be captured as a note. `false` when
/// there was no live session; a refusal when any could not be captured.
pub fn collect(
    ctx: &Context,
    repo: &Repo,
    dir: Option<&Path>,
    report: &mut dyn Report,
) -> Result<bool, Error> {
    let store = ctx.store()?;
    let sessions: Vec<_> = store
        .sessions(Some(&repo.id()), false)?
        .into_iter()
        .filter(|s| s.pane.is_some() && s.status != Status::Dead)
        .collect();
    if sessions.is_empty() {
        return Ok(false);
    }
    let dir = match dir {
        Some(d) => d.to_path_buf(),
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
                report.line(path.display().to_string());
            }
            Err(e) => {
                failed += 1;
                report.note(format!("{}: {e}", s.label));
            }
        }
    }
    if failed > 0 {
        return Err(Error::Refused(format!(
            "{failed} of {} session(s) could not be captured",
            sessions.len()
        )));
    }
    Ok(true)
}
