//! The dependency engine: sessions that wait for others. Two kinds of edge, one engine:
//! a dispatched session's `--after UPSTREAM:ARTIFACT` (it is blocked until every artifact
//! exists, then started) and a manifest's `[[dependencies]]` (a `then` command run once
//! its `when` comes true). There is no daemon: whoever notices a change first — a hook
//! event, a status tick, `done`, `status`, a remote refresh — calls [`wake`].

pub mod edges;

use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::manifest::Condition;
use crate::report::Report;
use crate::session::launch::{agent_env, waiting_placeholder, window_argv, START_PROMPT};
use crate::session::{agent_pane, record_if_gone};
use crate::state::{Session, Status, Store};

/// What may have changed, so what to look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wake<'a> {
    /// Blocked `--after` sessions: their artifacts may exist now.
    pub edges: bool,
    /// `[[dependencies]]`: a `when` may have come true. A `has` on a remote host counts
    /// only when `remote_found` lists its file (what a remote refresh saw).
    pub manifest: bool,
    pub remote_found: &'a [RemoteArtifact],
}

impl Wake<'_> {
    /// Both kinds of edge, no remote file seen: after `done`, which may satisfy either.
    pub fn all() -> Wake<'static> {
        Wake {
            edges: true,
            manifest: true,
            remote_found: &[],
        }
    }
}

/// A blocked session the engine started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub label: String,
    /// "ARTIFACT (from UPSTREAM)", each artifact it waited for.
    pub ready: Vec<String>,
}

impl std::fmt::Display for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "started {}: {} ready", self.label, self.ready.join(", "))
    }
}

/// What the engine did.
#[derive(Debug)]
pub struct Woken {
    pub started: Vec<Started>,
    /// The `then` lines run. A failure here is the manifest half's own: a status tick
    /// shrugs it off, `done` and `status` report it.
    pub ran: Result<Vec<String>, Error>,
}

/// THE entry point, for every caller after a change: starts the blocked sessions whose
/// artifacts all exist now, then runs the `[[dependencies]]` whose `when` came true.
/// An error starting a session stops the pass (the manifest half does not run).
pub fn wake(ctx: &Context, store: &Store, what: Wake<'_>) -> Result<Woken, Error> {
    let started = if what.edges {
        start_ready(ctx, store)?
    } else {
        Vec::new()
    };
    let ran = if what.manifest {
        run_ready_dependencies(ctx, store, what.remote_found)
    } else {
        Ok(Vec::new())
    };
    Ok(Woken { started, ran })
}

/// [`wake`] after `upstream`'s state changed (a hook said so): an upstream's events are
/// when its blocked dependents notice its artifacts. Without one still waiting on it,
/// nothing is looked at.
pub fn upstream_changed(ctx: &Context, store: &Store, upstream: &Session) -> Result<(), Error> {
    let waited_on = store
        .dependencies(Some(&upstream.repo))?
        .iter()
        .any(|e| e.upstream == upstream.id && !e.notified);
    if waited_on {
        let edges = Wake {
            edges: true,
            ..Default::default()
        };
        wake(ctx, store, edges)?;
    }
    Ok(())
}

/// Whether `artifact` of the `upstream` session exists now.
pub fn artifact_ready(repo: &Repo, upstream: &Session, artifact: &str) -> Result<bool, Error> {
    let target = upstream
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    // A merged upstream's branch and worktree are gone: what it made is where it merged.
    // Its own branch, asked for by name, is there too (deleted once its work landed, by
    // `merge` or by a kill that found it squashed or rebased in).
    if upstream.status == Status::Merged
        && crate::git::artifact_kind(artifact)
            == (
                Some(crate::git::ArtifactKind::Branch),
                upstream.branch.as_str(),
            )
    {
        return Ok(true);
    }
    let branch = match (upstream.status, &target) {
        (Status::Merged, Some(target)) => target.as_str(),
        _ => upstream.branch.as_str(),
    };
    Ok(repo
        .find_artifact(
            artifact,
            Path::new(&upstream.worktree),
            branch,
            target.as_deref(),
        )?
        .is_some())
}

/// Starts every blocked session whose artifacts all exist now: its agent gets its task plus
/// a line naming them, it becomes running, its edges are marked notified, and a
/// notification says so. Returns the sessions started. Cheap when nothing is blocked.
fn start_ready(ctx: &Context, store: &Store) -> Result<Vec<Started>, Error> {
    let blocked: Vec<Session> = store
        .sessions(None, false)?
        .into_iter()
        .filter(|s| s.status == crate::state::Status::Blocked && s.host.is_none())
        .collect();
    let mut started = Vec::new();
    for session in blocked {
        let Ok(repo) = Repo::discover(Path::new(&session.repo)) else {
            continue;
        };
        let edges: Vec<_> = store
            .dependencies(Some(&session.repo))?
            .into_iter()
            .filter(|e| e.dependent == session.id)
            .collect();
        let mut ready = Vec::new();
        for edge in &edges {
            // A killed upstream never makes its artifact: the dependent stays blocked
            // (`upstream_removed` told the person).
            let Some(upstream) = store.session_by_id(&edge.upstream)? else {
                break;
            };
            if !artifact_ready(&repo, &upstream, &edge.artifact)? {
                break;
            }
            ready.push((upstream, edge.artifact.clone()));
        }
        if ready.len() != edges.len() {
            continue;
        }
        // A setup command (or an orchestra.toml that no longer reads: the window says why,
        // as a failed setup) runs before the agent.
        let setup = match crate::worktree::table(repo.main_worktree()) {
            Ok(table) => table.is_some_and(|(_, t)| t.setup_argv().is_some()),
            Err(_) => true,
        };
        let next = if setup {
            Status::Setup
        } else {
            Status::Running
        };
        if !store.claim_blocked(&session, next, "its artifacts are ready")? {
            continue;
        }
        let names: Vec<String> = ready
            .iter()
            .map(|(u, a)| format!("{a} (from {})", u.label))
            .collect();
        let prompt = format!(
            "{}\n\nReady for you now: {}.",
            session.prompt.clone().unwrap_or_default(),
            names.join(", ")
        );
        start_unblocked(ctx, &session, prompt.trim_start())?;
        for (upstream, _) in &ready {
            store.mark_notified(&session.id, &upstream.id)?;
        }
        crate::tell::started(&session, &names);
        started.push(Started {
            label: session.label.clone(),
            ready: names,
        });
    }
    Ok(started)
}

/// Starts a session unblocked just now: its window runs `prepare`, which moves the branch
/// onto the work it waited for, runs the setup (if any), then becomes the agent with
/// `prompt`.
fn start_unblocked(ctx: &Context, session: &Session, prompt: &str) -> Result<(), Error> {
    let file = crate::paths::session_dir(&ctx.home, &session.id).join(START_PROMPT);
    crate::paths::write_private(&file, prompt)
        .map_err(Error::io(format!("writing {}", file.display())))?;
    let result = agent_pane(session).and_then(|(tmux, pane)| {
        let env = agent_env(ctx, session);
        let argv = window_argv(&session.id, true)?;
        Ok(tmux.respawn(&pane, Path::new(&session.worktree), &env, &argv)?)
    });
    record_if_gone(ctx, session, result)
}

/// After `upstream` was killed: every session still blocked on it stays blocked, says why
/// in its window, and a notification tells the person. Returns the labels left waiting.
pub fn upstream_removed(
    ctx: &Context,
    store: &Store,
    upstream: &Session,
    out: &mut dyn Report,
) -> Result<Vec<String>, Error> {
    let mut stranded = Vec::new();
    let edges: Vec<_> = store
        .dependencies(Some(&upstream.repo))?
        .into_iter()
        .filter(|e| e.upstream == upstream.id && !e.notified)
        .collect();
    for edge in edges {
        let Some(dependent) = store.session_by_id(&edge.dependent)? else {
            continue;
        };
        if dependent.status != Status::Blocked || stranded.contains(&dependent.label) {
            continue;
        }
        let why = format!(
            "{} waits for {}: {}, but {} was killed: it stays blocked (`orchestra kill {}` closes it)",
            dependent.label, upstream.label, edge.artifact, upstream.label, dependent.label
        );
        let shown = agent_pane(&dependent).and_then(|(tmux, pane)| {
            let argv = waiting_placeholder(&format!("orchestra: {why}"));
            Ok(tmux.respawn(&pane, Path::new(&dependent.worktree), &[], &argv)?)
        });
        if let Err(e) = record_if_gone(ctx, &dependent, shown) {
            out.note(format!(
                "could not show it in {}'s window: {e}",
                dependent.label
            ));
        }
        store.record_event(&dependent, "upstream-killed", "", "blocked", &why)?;
        crate::tell::stays_blocked(&dependent, &why);
        out.line(why);
        stranded.push(dependent.label.clone());
    }
    Ok(stranded)
}

/// A file a remote `has` dependency waits for: `path` in the folder of session
/// `session_id` on `host`. Only a remote refresh looks for these (in its host's thread,
/// within that host's deadline): never the status line, `done` or a local tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteArtifact {
    pub session_id: String,
    pub host: String,
    pub path: String,
}

/// A manifest dependency whose upstream session is up and whose `then` has not run.
struct Pending<'a> {
    manifest: &'a str,
    dependency: crate::manifest::Dependency,
    upstream: &'a Session,
    /// The file in the upstream's folder a `has` waits for (None: `done`).
    file: Option<String>,
    marker: PathBuf,
}

fn pending_dependencies<'a>(ctx: &Context, sessions: &'a [Session]) -> Vec<Pending<'a>> {
    let mut manifests: Vec<&str> = sessions
        .iter()
        .filter_map(|s| s.manifest.as_deref())
        .collect();
    manifests.sort();
    manifests.dedup();
    let mut pending = Vec::new();
    for path in manifests {
        // A manifest edited into an error since `up` fires nothing until it is mended.
        let Ok(manifest) = crate::manifest::load(Path::new(path)) else {
            continue;
        };
        for dependency in manifest.dependencies {
            let (name, file) = match dependency.condition() {
                Some(Condition::Done { upstream }) => (upstream.to_string(), None),
                Some(Condition::Has { upstream, artifact }) => {
                    // Validated when the manifest loaded; `file:` is the only kind here.
                    let Ok(locator) = crate::artifact::parse(&artifact) else {
                        continue;
                    };
                    (upstream.to_string(), Some(locator.name.to_string()))
                }
                None => continue,
            };
            let Some(upstream) = sessions
                .iter()
                .find(|s| s.label == name && s.manifest.as_deref() == Some(path))
            else {
                continue;
            };
            let marker = ctx
                .home
                .join("dependencies")
                .join(crate::paths::stable_hash(&format!(
                    "{path}\n{}\n{}\n{}",
                    upstream.id, dependency.when, dependency.then
                )));
            if marker.exists() {
                continue;
            }
            pending.push(Pending {
                manifest: path,
                dependency,
                upstream,
                file,
                marker,
            });
        }
    }
    pending
}

/// The files pending remote `has` dependencies wait for, for a remote refresh to look for.
pub fn remote_artifacts(ctx: &Context, sessions: &[Session]) -> Vec<RemoteArtifact> {
    pending_dependencies(ctx, sessions)
        .into_iter()
        .filter_map(|p| {
            Some(RemoteArtifact {
                session_id: p.upstream.id.clone(),
                host: p.upstream.host.clone()?,
                path: artifact_path(p.upstream, p.file.as_deref()?),
            })
        })
        .collect()
}

fn artifact_path(session: &Session, file: &str) -> String {
    Path::new(&session.worktree)
        .join(file)
        .to_string_lossy()
        .into_owned()
}

/// Runs the `then` of each `[[dependencies]]` entry whose `when` has come true, once per
/// upstream session (a marker file, created exclusively, decides who runs it). `then` is
/// an orchestra command line, run as argv in the manifest's folder, its output in
/// `$ORCHESTRA_HOME/logs/dependencies.log`. A `has` on a remote host counts only when
/// `remote_found` lists its file (what a remote refresh saw): nothing here waits on a
/// host. Returns the lines run.
fn run_ready_dependencies(
    ctx: &Context,
    store: &Store,
    remote_found: &[RemoteArtifact],
) -> Result<Vec<String>, Error> {
    let sessions = store.sessions(None, false)?;
    let mut ran = Vec::new();
    for p in pending_dependencies(ctx, &sessions) {
        let upstream = p.upstream;
        let ready = match (&p.file, &upstream.host) {
            (None, _) => upstream.status == Status::Done,
            (Some(file), None) => Path::new(&artifact_path(upstream, file)).exists(),
            (Some(file), Some(host)) => remote_found.contains(&RemoteArtifact {
                session_id: upstream.id.clone(),
                host: host.clone(),
                path: artifact_path(upstream, file),
            }),
        };
        if !ready {
            continue;
        }
        if let Some(dir) = p.marker.parent() {
            crate::paths::private_dir(dir)
                .map_err(Error::io(format!("creating {}", dir.display())))?;
        }
        if crate::paths::open_private(
            &p.marker,
            std::fs::OpenOptions::new().write(true).create_new(true),
        )
        .is_err()
        {
            continue;
        }
        let Ok(args) = shell_words::split(&p.dependency.then) else {
            continue;
        };
        let folder = Path::new(p.manifest).parent().unwrap_or(Path::new("/"));
        crate::notify::spawn_self_logged(
            &args,
            &[("ORCHESTRA_HOME", &ctx.home)],
            Some(folder),
            Some(&ctx.home.join("logs").join("dependencies.log")),
        );
        store.record_event(
            upstream,
            "dependency",
            "",
            &p.dependency.when,
            &p.dependency.then,
        )?;
        ran.push(format!(
            "{} → orchestra {}",
            p.dependency.when, p.dependency.then
        ));
    }
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Branch, New};

    fn upstream(status: Status) -> Session {
        let new = New {
            id: "id-api".into(),
            repo: "/work/shop".into(),
            label: "api".into(),
            worktree: "/nowhere/api".into(),
            kind: crate::agent::AgentKind::parse("claude").unwrap(),
            argv: vec!["claude".into()],
            agent_uuid: String::new(),
            status,
        };
        let branch = Branch {
            name: "session/api".into(),
            base_commit: "0".repeat(40),
            base_branch: Some("main".into()),
        };
        Session::dispatched(new, branch, 0, None)
    }

    /// Its branch deleted once its work landed, a merged upstream's `branch:` artifact
    /// naming that branch is still satisfied; a live one's, or another branch, is not.
    #[test]
    fn a_merged_upstreams_own_branch_is_satisfied_once_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let repo = crate::git::init_repository(dir.path()).unwrap();
        let ready = |s: &Session, artifact: &str| artifact_ready(&repo, s, artifact).unwrap();
        assert!(ready(&upstream(Status::Merged), "branch:session/api"));
        assert!(!ready(&upstream(Status::Running), "branch:session/api"));
        assert!(!ready(&upstream(Status::Merged), "branch:session/other"));
        assert!(ready(&upstream(Status::Merged), "branch:main"));
    }
}
