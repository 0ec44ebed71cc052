//! Sessions: finding one, reaching its tmux server and pane, and its life from dispatch
//! (or `up`) to kill, merge (or `down`). Commands parse and render; this is where the
//! work is done.

use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::manifest::Manifest;
use crate::remote::HostSpec;
use crate::report::Report;
use crate::state::{Session, Store};
use crate::tmux::{OwnedPane, Server, Tmux, TmuxError};

pub mod answer;
pub mod brief;
pub mod create;
pub mod done;
pub mod fork;
pub mod launch;
pub mod manifest;
pub mod merge;
pub mod notified;
pub mod prepare;
pub mod remove;
pub mod restart;
pub mod sandbox;
pub mod view;

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
        transport: host.transport,
        ssh_config: host
            .ssh_config
            .as_deref()
            .map(|c| crate::remote::config::expand_home(c, &home)),
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

/// Closes the session's window if it is still ours; a gone window or server is fine.
pub fn close_window(session: &Session, out: &mut dyn Report) {
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

/// What [`settle_branch`] did with a session's branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// There was no branch to settle.
    Gone,
    /// Deleted: its work is in the target, found there as said.
    Deleted(crate::git::Landed),
    /// Renamed `archive/<label>-<time>`: it had work the target lacks.
    Archived,
}

impl Settled {
    /// Whether the session counts as merged though no `orchestra merge` merged it: its
    /// work was squashed or rebased into its target (by hand, or by a forge).
    pub fn merged_elsewhere(self) -> Option<crate::git::Landed> {
        match self {
            Settled::Deleted(how) if how != crate::git::Landed::Ancestor => Some(how),
            _ => None,
        }
    }
}

/// Whether the work of `branch` is in `into` ([`crate::git::Repo::landed`]); a branch
/// or target that does not exist has not landed.
pub fn landed(
    repo: &Repo,
    branch: &str,
    into: Option<&str>,
) -> Result<Option<crate::git::Landed>, Error> {
    match into {
        Some(into) if repo.branch_exists(branch) && repo.branch_exists(into) => {
            Ok(repo.landed(branch, into)?)
        }
        _ => Ok(None),
    }
}

/// Whether `session`'s pull request was merged on its forge with the branch's tip as its
/// head (a commit made after is work the forge never saw: not merged).
pub fn merged_upstream(
    repo: &Repo,
    session: &Session,
    pull: Option<&crate::state::PullRequest>,
) -> Option<crate::git::Landed> {
    let pull = pull.filter(|p| p.merged())?;
    let tip = repo.branch_tip(&session.branch).ok()?.to_string();
    (pull.head_sha.as_deref() == Some(tip.as_str()))
        .then_some(crate::git::Landed::PullRequest(pull.number))
}

/// The live sessions among `sessions` whose work is in their target though no
/// `orchestra merge` merged it (squashed or rebased in: [`crate::git::Repo::landed`]),
/// by id, each with how that was recognised ("squashed into main"): what `list` shows and
/// `kill` will find. A session with uncommitted changes is not among them (its worktree
/// holds work the target lacks), nor one whose repo or branch cannot be read.
pub fn merged_elsewhere(
    sessions: &[Session],
    pulls: &std::collections::HashMap<String, crate::state::PullRequest>,
) -> std::collections::HashMap<String, String> {
    let mut repos: std::collections::HashMap<&str, Option<Repo>> = Default::default();
    let mut found = std::collections::HashMap::new();
    for s in sessions {
        if s.host.is_some() || s.is_manifest() || s.status == crate::state::Status::Merged {
            continue;
        }
        let Some(repo) = repos
            .entry(s.repo.as_str())
            .or_insert_with(|| Repo::discover(Path::new(&s.repo)).ok())
        else {
            continue;
        };
        let Some(into) = s.base_branch.clone().or_else(|| repo.current_branch()) else {
            continue;
        };
        let how = match landed(repo, &s.branch, Some(&into)) {
            Ok(Some(how)) if how != crate::git::Landed::Ancestor => how,
            _ => match merged_upstream(repo, s, pulls.get(&s.id)) {
                Some(how) => how,
                None => continue,
            },
        };
        let worktree = Path::new(&s.worktree);
        if worktree.exists()
            && crate::git::uncommitted_paths(worktree).map_or(true, |dirty| !dirty.is_empty())
        {
            continue;
        }
        found.insert(s.id.clone(), how.describe(&into));
    }
    found
}

/// Deletes the session's branch when its work is in `into` (its commits, or their change
/// after a squash or rebase merge: [`crate::git::Repo::landed`]), saying how that was
/// recognised; otherwise renames it to `archive/<label>-<time>` so the label is free and
/// the work stays.
pub fn settle_branch(
    repo: &Repo,
    session: &Session,
    into: Option<&str>,
    pull: Option<&crate::state::PullRequest>,
    out: &mut dyn Report,
) -> Result<Settled, Error> {
    if !repo.branch_exists(&session.branch) {
        return Ok(Settled::Gone);
    }
    let found = match landed(repo, &session.branch, into)? {
        Some(how) => Some(how),
        None => merged_upstream(repo, session, pull),
    };
    if let Some(how) = found {
        repo.delete_branch(&session.branch)?;
        let into = into.unwrap_or_default();
        let why = match how {
            crate::git::Landed::Ancestor => how.describe(into),
            crate::git::Landed::Rebased => format!(
                "{}: the change of each of its commits is there",
                how.describe(into)
            ),
            crate::git::Landed::Squashed => {
                format!("{}: its change is there", how.describe(into))
            }
            crate::git::Landed::PullRequest(_) => {
                format!("{}: GitHub merged this very commit", how.describe(into))
            }
        };
        out.line(format!("deleted branch {} ({why})", session.branch));
        return Ok(Settled::Deleted(how));
    }
    let archive = repo.free_archive_name(&session.label);
    repo.rename_branch(&session.branch, &archive)?;
    out.line(format!(
        "branch {} has unmerged work: kept as {archive}",
        session.branch
    ));
    Ok(Settled::Archived)
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

pub use crate::state::{Branch, New};

/// `base`, or `base-2`, `base-3`…: the first that no live session of `repo` and no
/// `session/*` branch uses.
pub fn free_label(ctx: &Context, repo: &crate::git::Repo, base: &str) -> Result<String, Error> {
    let store = ctx.store()?;
    let mut used: Vec<String> = store
        .sessions(Some(&repo.id()), false)?
        .into_iter()
        .map(|s| s.label)
        .collect();
    used.extend(
        repo.branches_with_prefix("session/")?
            .into_iter()
            .filter_map(|b| b.strip_prefix("session/").map(str::to_string)),
    );
    Ok(crate::label::first_free(base, |candidate| {
        used.iter().any(|u| u == candidate)
    }))
}
