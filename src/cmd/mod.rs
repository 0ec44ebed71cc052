//! One file per subcommand: each validates its input, calls the modules that do the work,
//! and renders the result to the writers it is given.

pub mod approve;
pub mod brief;
pub mod classify;
pub mod conflicts;
pub mod deps;
pub mod dispatch;
pub mod docs;
pub mod doctor;
pub mod done;
pub mod event;
pub mod events;
pub mod hosts;
pub mod kill;
pub mod launch;
pub mod list;
pub mod merge;
pub mod prepare;
pub mod refresh;
pub mod restart;
pub mod review;
pub mod slugify;
pub mod status;
pub mod sync;
pub mod tasks;
pub mod tmux_cmd;
pub mod up;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::git::Repo;
use crate::manifest::Manifest;
use crate::paths::orchestra_home;
pub use crate::paths::short_list;
use crate::remote::HostSpec;
use crate::state::{Session, Store};
use crate::tmux::{OwnedPane, Server, Tmux, TmuxError};

/// What every command may need from its environment.
pub struct Context {
    pub home: PathBuf,
    pub server: Server,
}

impl Context {
    /// Refuses (bad input) when there is no home to be had or the event retention is not
    /// a duration; an existing home that others may read is made private first.
    pub fn from_env(socket: Option<PathBuf>) -> Result<Context, Error> {
        let home = orchestra_home().map_err(|e| Error::BadInput(e.to_string()))?;
        crate::state::events_retention().map_err(|e| Error::BadInput(e.to_string()))?;
        crate::paths::secure_home(&home);
        Ok(Context {
            home,
            server: Server::resolve(socket.as_deref()),
        })
    }

    pub fn store(&self) -> Result<Store, Error> {
        Ok(Store::open(&self.home)?)
    }

    pub fn tmux(&self) -> Tmux {
        Tmux::new(&self.server)
    }

    /// The screen rules: built-in, with `$ORCHESTRA_HOME/agents.toml` laid over them.
    pub fn rules(&self) -> Result<crate::agent::rules::Rules, Error> {
        crate::agent::rules::Rules::load(&self.home).map_err(|e| Error::BadInput(e.to_string()))
    }
}

/// Where a command writes: results to `out`, notes and warnings to `err`.
pub struct Output<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

/// Runs `f` with an Output that discards everything: work done on someone else's behalf
/// (a hook, a status tick, a tmux `run-shell` whose output would open in the pane).
pub fn quietly<T>(f: impl FnOnce(&mut Output<'_>) -> T) -> T {
    let (mut out, mut err) = (std::io::sink(), std::io::sink());
    f(&mut Output {
        out: &mut out,
        err: &mut err,
    })
}

impl Output<'_> {
    /// A line of results. A closed stdout (e.g. `| head`) is not the command's failure.
    pub fn line(&mut self, text: impl AsRef<str>) {
        let _ = writeln!(self.out, "{}", text.as_ref());
    }

    pub fn note(&mut self, text: impl AsRef<str>) {
        let _ = writeln!(self.err, "orchestra: {}", text.as_ref());
    }
}

/// The repository named by `--repo`, else the one containing the current folder.
pub fn open_repo(dir: Option<&Path>) -> Result<Repo, Error> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(Error::io("reading the current folder"))?,
    };
    Ok(Repo::discover(&dir)?)
}

/// The live session `label` of `repo`, or bad input naming what exists.
pub fn find_session(store: &Store, repo: &Repo, label: &str) -> Result<Session, Error> {
    crate::label::validate(label)?;
    store.session_by_label(&repo.id(), label)?.ok_or_else(|| {
        Error::BadInput(format!(
            "no session labelled {label:?} in {} (see `orchestra list`)",
            repo.main_worktree().display()
        ))
    })
}

/// Like [`find_session`], for commands about a session's branch (review, merge, kill):
/// a manifest session has none, and is stopped with `down`.
pub fn find_branch_session(
    store: &Store,
    repo: &Repo,
    label: &str,
    verb: &str,
) -> Result<Session, Error> {
    let session = find_session(store, repo, label)?;
    if session.is_manifest() {
        return Err(Error::BadInput(format!(
            "{label} comes from {}: it works in a plain folder with no branch to {verb} (`orchestra down {label}` stops it)",
            session.manifest.as_deref().unwrap_or("orchestra.toml")
        )));
    }
    Ok(session)
}

/// The tmux server a recorded session lives on: a local one by its socket, or its host's
/// over SSH (the host as the session's orchestra.toml names it now).
pub fn session_tmux(session: &Session) -> Result<Tmux, Error> {
    let Some(host) = &session.host else {
        return Ok(Tmux::new(&Server::at(session.tmux_socket.as_deref())));
    };
    let manifest_path = session.manifest.as_deref().ok_or_else(|| {
        Error::Refused(format!(
            "session {} is on host {host} but names no orchestra.toml",
            session.label
        ))
    })?;
    let manifest = crate::manifest::load(Path::new(manifest_path))?;
    remote_tmux(&host_spec(&manifest, host)?)
}

/// The session's agent pane on its tmux server. Commands act on a pane only through the
/// [`OwnedPane`] this returns (tmux checks it is still the session's in the same call).
pub fn agent_pane(session: &Session) -> Result<(Tmux, OwnedPane), Error> {
    let pane = session
        .pane
        .as_ref()
        .ok_or_else(|| Error::Refused(format!("session {} has no pane", session.label)))?;
    let owned = OwnedPane::new(pane, &session.id)?;
    Ok((session_tmux(session)?, owned))
}

/// Passes `result` on; when it says the session's pane is gone or no longer ours (ids
/// are reused after a tmux restart), first records the session dead, so that nothing
/// acts on that pane again, and says so.
pub fn record_if_gone<T>(
    ctx: &Context,
    session: &Session,
    result: Result<T, Error>,
) -> Result<T, Error> {
    let Err(Error::Tmux(TmuxError::NotOurs { pane }, _)) = &result else {
        return result;
    };
    let why = format!("its pane {pane} is gone or no longer its own (tmux restarted?)");
    if let Ok(store) = ctx.store() {
        let now = crate::health::now_micros();
        let _ = store.apply_state(
            &session.id,
            crate::state::AgentState::Exited,
            now,
            crate::state::StateSource::Tmux,
            &why,
        );
        let _ = store.change_status(session, gone_status(session), &why);
    }
    Err(Error::Refused(format!(
        "{}: {why}: nothing was sent; recorded {} (`orchestra restart {}` starts it again)",
        session.label,
        gone_status(session),
        session.label
    )))
}

/// What a session whose pane is gone becomes: dead, or, when its agent never started,
/// setup-failed (its restart runs the setup again).
fn gone_status(session: &Session) -> crate::state::Status {
    if session.status.in_setup() {
        crate::state::Status::SetupFailed
    } else {
        crate::state::Status::Dead
    }
}

/// Shows a recorded state change at once: the window's badge and, where the change needs
/// a person, a notification (ONE tmux call for the badge and the notify command).
pub fn announce(transition: &crate::state::Transition) -> Result<(), Error> {
    let Some(window) = &transition.session.window else {
        return Ok(());
    };
    let tmux = session_tmux(&transition.session)?;
    let notify_cmd = tmux
        .set_badge(
            window,
            transition.session.state.as_str(),
            "@orchestra-notify-cmd",
        )
        .ok()
        .flatten();
    crate::health::notify_transition(
        transition,
        &crate::notify::Fallback {
            command: notify_cmd,
            tmux_socket: transition.session.tmux_socket.clone(),
        },
    );
    Ok(())
}

/// The manifest: `config`, else orchestra.toml at the root of `repo`. With `required`
/// false a missing default file is no manifest at all.
pub fn load_manifest(
    repo: &Repo,
    config: Option<&Path>,
    required: bool,
) -> Result<Option<(PathBuf, Manifest)>, Error> {
    let path = match config {
        Some(p) => std::path::absolute(p).map_err(Error::io("reading the current folder"))?,
        None => crate::manifest::default_path(repo.main_worktree()),
    };
    if !path.exists() {
        if required || config.is_some() {
            return Err(Error::BadInput(format!(
                "no manifest at {} (write one, or pass --config FILE)",
                path.display()
            )));
        }
        return Ok(None);
    }
    let manifest = crate::manifest::load(&path)?;
    Ok(Some((path, manifest)))
}

/// The connection settings of host `name` in `manifest`.
pub fn host_spec(manifest: &Manifest, name: &str) -> Result<HostSpec, Error> {
    let host = manifest.hosts.get(name).ok_or_else(|| {
        Error::BadInput(format!(
            "host {name:?} is not a [hosts.*] entry of the manifest"
        ))
    })?;
    let home = PathBuf::from(crate::paths::non_empty_env("HOME").unwrap_or_else(|| "/".into()));
    Ok(HostSpec {
        name: name.to_string(),
        address: host.address.clone(),
        identity: host
            .identity
            .as_deref()
            .map(|i| crate::remote::config::expand_home(i, &home)),
        connect_timeout: host.connect_timeout(),
        command_timeout: host.command_timeout(),
    })
}

/// tmux on a remote host, over an SSH connection made now.
pub fn remote_tmux(spec: &HostSpec) -> Result<Tmux, Error> {
    let conn = crate::remote::connect(spec)?;
    Ok(Tmux::with_transport(
        Box::new(crate::remote::RemoteTmux::new(conn, spec.identity.clone())),
        false,
    ))
}

/// Left-aligned columns separated by two spaces.
pub fn render_table(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.trim_end().to_string()
    };
    let mut out = vec![line(header.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out
}

/// Closes the session's window if it is still ours; a gone window or server is fine.
pub fn close_window(session: &Session, out: &mut Output<'_>) {
    let Some(window) = &session.window else {
        return;
    };
    let tmux = match session_tmux(session) {
        Ok(tmux) => tmux,
        Err(e) => return out.note(format!("could not close window {window}: {e}")),
    };
    match tmux.kill_window_if_ours(window, &session.id) {
        Ok(_) => {}
        Err(TmuxError::Failed { .. }) => {}
        Err(e) => out.note(format!("could not close window {window}: {e}")),
    }
}

/// Deletes the session's branch when its work is in `into`; otherwise renames it to
/// `archive/<label>-<time>` so the label is free and the work stays.
pub fn settle_branch(
    repo: &Repo,
    session: &Session,
    into: Option<&str>,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    if !repo.branch_exists(&session.branch) {
        return Ok(());
    }
    let merged = match into {
        Some(into) if repo.branch_exists(into) => repo.is_merged(&session.branch, into)?,
        _ => false,
    };
    if merged {
        repo.delete_branch(&session.branch)?;
        out.line(format!(
            "deleted branch {} (merged into {})",
            session.branch,
            into.unwrap_or_default()
        ));
        return Ok(());
    }
    let archive = repo.free_archive_name(&session.label);
    repo.rename_branch(&session.branch, &archive)?;
    out.line(format!(
        "branch {} has unmerged work: kept as {archive}",
        session.branch
    ));
    Ok(())
}

/// The branch a session's work goes into: `--into`, else the branch it started from,
/// else the main worktree's branch. It must exist, and so must the session's branch.
pub fn target_branch(repo: &Repo, session: &Session, into: Option<&str>) -> Result<String, Error> {
    if !repo.branch_exists(&session.branch) {
        return Err(Error::Refused(format!("branch {} is gone", session.branch)));
    }
    let target = into
        .map(str::to_string)
        .or_else(|| session.base_branch.clone())
        .or_else(|| repo.current_branch())
        .ok_or_else(|| Error::BadInput("no target branch: pass --into BRANCH".into()))?;
    if !repo.branch_exists(&target) {
        return Err(Error::BadInput(format!("branch {target:?} does not exist")));
    }
    Ok(target)
}

/// Re-runs this very command in a tmux popup on `client` (else the most recently active
/// client): the same arguments minus `--popup`, the same ORCHESTRA_HOME and tmux server.
pub fn run_in_popup(
    ctx: &Context,
    client: Option<&str>,
    cwd: &Path,
    title: &str,
) -> Result<(), Error> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--popup")
        .collect();
    popup_orchestra(ctx, client, cwd, title, &args)
}

/// Runs this orchestra with `args` in a tmux popup on `client` (else the most recently
/// active client), with this process's ORCHESTRA_HOME and tmux server. The command is
/// shell words: display-popup hands it to the shell unexpanded, and no tmux parser reads it.
pub fn popup_orchestra(
    ctx: &Context,
    client: Option<&str>,
    cwd: &Path,
    title: &str,
    args: &[impl AsRef<str>],
) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let client = resolve_client(&tmux, client)?;
    let exe = std::env::current_exe().map_err(Error::io("finding the orchestra binary"))?;
    let mut words = vec![
        "env".to_string(),
        format!("ORCHESTRA_HOME={}", ctx.home.display()),
    ];
    if let Some(socket) = &ctx.server.socket {
        words.push(format!("ORCHESTRA_TMUX_SOCKET={}", socket.display()));
    }
    words.push(exe.to_string_lossy().into_owned());
    words.extend(args.iter().map(|a| a.as_ref().to_string()));
    let command = shell_words::join(&words);
    // display-popup takes a title from tmux 3.3 on.
    let titled = tmux
        .check_version()
        .map(|v| crate::tmux::parse_version(&v).is_none_or(|v| v >= (3, 3)))
        .unwrap_or(true);
    tmux.popup(&client, cwd, if titled { title } else { "" }, &command)?;
    Ok(())
}

/// `client`, else the attached client that was active most recently.
pub fn resolve_client(tmux: &Tmux, client: Option<&str>) -> Result<String, Error> {
    match client {
        Some(c) => Ok(c.to_string()),
        None => tmux
            .most_recent_client()?
            .ok_or_else(|| Error::Refused("no tmux client is attached to show it on".into())),
    }
}
