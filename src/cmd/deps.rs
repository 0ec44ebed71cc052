//! `orchestra deps`: who waits for what.

use std::collections::HashMap;
use std::path::Path;

use crate::cli::{DepsArgs, DepsCommand};
use crate::cmd::{find_session, open_repo, Context, Output};
use crate::error::Error;
use crate::git::Repo;
use crate::state::{EdgeRefusal, Session, Status, Store};

pub fn run(ctx: &Context, args: &DepsArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let mut store = ctx.store()?;
    match &args.command {
        DepsCommand::Add {
            dependent,
            upstream,
            artifact,
        } => {
            let d = find_session(&store, &repo, dependent)?;
            let u = find_session(&store, &repo, upstream)?;
            crate::artifact::validate(artifact)?;
            match store.add_dependency(&d.id, &u, artifact)? {
                Ok(()) => {
                    out.line(format!("{dependent} waits for {upstream}: {artifact}"));
                    if d.status != Status::Blocked {
                        // An edge blocks nothing that already runs: say so.
                        out.line(format!(
                            "note: {dependent} is already {}: its agent is not paused or told; the edge shows in `deps graph` and `deps pending` (brief it yourself if it should wait)",
                            d.status
                        ));
                    }
                    Ok(())
                }
                Err(EdgeRefusal::SelfEdge) => Err(Error::BadInput(format!(
                    "{dependent} cannot wait for itself"
                ))),
                Err(EdgeRefusal::Duplicate) => Err(Error::BadInput(format!(
                    "{dependent} already waits for {upstream}: {artifact}"
                ))),
                Err(EdgeRefusal::Cycle(ids)) => {
                    let labels = labels_by_id(&store, &repo)?;
                    let names: Vec<&str> = ids
                        .iter()
                        .map(|id| labels.get(id).map_or(id.as_str(), String::as_str))
                        .collect();
                    Err(Error::BadInput(format!(
                        "that would make a cycle: {}",
                        names.join(" → ")
                    )))
                }
            }
        }
        DepsCommand::Check { upstream, artifact } => {
            let u = find_session(&store, &repo, upstream)?;
            crate::artifact::validate(artifact)?;
            if artifact_ready(&repo, &u, artifact)? {
                Ok(())
            } else {
                Err(Error::CheckFailed)
            }
        }
        DepsCommand::Pending { label } => {
            let u = find_session(&store, &repo, label)?;
            let labels = labels_by_id(&store, &repo)?;
            let mut waiting: Vec<&str> = store
                .dependencies(Some(&repo.id()))?
                .iter()
                .filter(|e| e.upstream == u.id && !e.notified)
                .filter_map(|e| labels.get(&e.dependent).map(String::as_str))
                .collect();
            waiting.dedup();
            for l in waiting {
                out.line(l);
            }
            Ok(())
        }
        DepsCommand::Notified {
            dependent,
            upstream,
        } => {
            let d = find_session(&store, &repo, dependent)?;
            let u = find_session(&store, &repo, upstream)?;
            let edges = store.dependencies(Some(&repo.id()))?;
            if !edges
                .iter()
                .any(|e| e.dependent == d.id && e.upstream == u.id)
            {
                return Err(Error::BadInput(format!(
                    "{dependent} does not wait for {upstream}"
                )));
            }
            store.mark_notified(&d.id, &u.id)?;
            Ok(())
        }
        DepsCommand::Graph { json, dot } => {
            let sessions = store.sessions(Some(&repo.id()), true)?;
            let edges = store.dependencies(Some(&repo.id()))?;
            // Merged sessions are history: shown as such, and only where an edge names them.
            let named: std::collections::HashSet<&str> = edges
                .iter()
                .flat_map(|e| [e.dependent.as_str(), e.upstream.as_str()])
                .collect();
            let labels: HashMap<String, String> = sessions
                .iter()
                .map(|s| {
                    let label = match s.status {
                        Status::Merged => format!("{} (merged)", s.label),
                        _ => s.label.clone(),
                    };
                    (s.id.clone(), label)
                })
                .collect();
            let gone: HashMap<&str, String> = edges
                .iter()
                .filter(|e| e.upstream_gone)
                .map(|e| {
                    (
                        e.upstream.as_str(),
                        format!("{} (killed)", e.upstream_label),
                    )
                })
                .collect();
            let name = |id: &str| {
                labels
                    .get(id)
                    .or_else(|| gone.get(id))
                    .cloned()
                    .unwrap_or_else(|| id.to_string())
            };
            let mut nodes: Vec<String> = sessions
                .iter()
                .filter(|s| s.status != Status::Merged || named.contains(s.id.as_str()))
                .map(|s| name(&s.id))
                .chain(gone.values().cloned())
                .collect();
            nodes.sort();
            nodes.dedup();
            if *json {
                let edges: Vec<serde_json::Value> = edges
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "dependent": name(&e.dependent),
                            "upstream": name(&e.upstream),
                            "artifact": e.artifact,
                            "notified": e.notified,
                        })
                    })
                    .collect();
                out.line(serde_json::json!({ "nodes": nodes, "edges": edges }).to_string());
            } else if *dot {
                out.line("digraph orchestra {");
                for n in &nodes {
                    out.line(format!("  {n:?};"));
                }
                for e in &edges {
                    out.line(format!(
                        "  {:?} -> {:?} [label={:?}{}];",
                        name(&e.dependent),
                        name(&e.upstream),
                        e.artifact,
                        if e.notified { ", style=dashed" } else { "" }
                    ));
                }
                out.line("}");
            } else {
                for e in &edges {
                    out.line(format!(
                        "{} waits for {}: {}{}",
                        name(&e.dependent),
                        name(&e.upstream),
                        e.artifact,
                        if e.notified { " (told)" } else { "" }
                    ));
                }
            }
            Ok(())
        }
    }
}

/// Whether `artifact` of the `upstream` session exists now.
pub fn artifact_ready(repo: &Repo, upstream: &Session, artifact: &str) -> Result<bool, Error> {
    let target = upstream
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    // A merged upstream's branch and worktree are gone: what it made is where it merged.
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

fn labels_by_id(store: &Store, repo: &Repo) -> Result<HashMap<String, String>, Error> {
    Ok(store
        .sessions(Some(&repo.id()), true)?
        .into_iter()
        .map(|s| (s.id, s.label))
        .collect())
}

/// Starts every blocked session whose artifacts all exist now: its agent gets its task plus
/// a line naming them, it becomes running, its edges are marked notified, and a
/// notification says so. Returns the labels started. Cheap when nothing is blocked.
pub fn start_ready(
    ctx: &Context,
    store: &Store,
    out: &mut Output<'_>,
) -> Result<Vec<String>, Error> {
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
        crate::notify::spawn(
            &crate::notify::Note {
                title: format!("orchestra: {} started", session.label),
                body: format!("{} started: {} ready", session.label, names.join(", ")),
            },
            &crate::notify::Fallback {
                command: None,
                tmux_socket: session.tmux_socket.clone(),
            },
        );
        out.line(format!(
            "started {}: {} ready",
            session.label,
            names.join(", ")
        ));
        started.push(session.label.clone());
    }
    Ok(started)
}

/// Starts a session unblocked just now: its window runs `prepare`, which moves the branch
/// onto the work it waited for, runs the setup (if any), then becomes the agent with
/// `prompt`.
fn start_unblocked(ctx: &Context, session: &Session, prompt: &str) -> Result<(), Error> {
    let file =
        crate::paths::session_dir(&ctx.home, &session.id).join(crate::cmd::prepare::START_PROMPT);
    crate::paths::write_private(&file, prompt)
        .map_err(Error::io(format!("writing {}", file.display())))?;
    let result = crate::cmd::agent_pane(session).and_then(|(tmux, pane)| {
        let env = crate::cmd::dispatch::agent_env(ctx, session);
        let argv = crate::cmd::prepare::window_argv(&session.id, true)?;
        Ok(tmux.respawn(&pane, Path::new(&session.worktree), &env, &argv)?)
    });
    crate::cmd::record_if_gone(ctx, session, result)
}

/// After `upstream` was killed: every session still blocked on it stays blocked, says why
/// in its window, and a notification tells the person. Returns the labels left waiting.
pub fn upstream_removed(
    ctx: &Context,
    store: &Store,
    upstream: &Session,
    out: &mut Output<'_>,
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
        let shown = crate::cmd::agent_pane(&dependent).and_then(|(tmux, pane)| {
            let argv = crate::cmd::dispatch::waiting_placeholder(&format!("orchestra: {why}"));
            Ok(tmux.respawn(&pane, Path::new(&dependent.worktree), &[], &argv)?)
        });
        if let Err(e) = crate::cmd::record_if_gone(ctx, &dependent, shown) {
            out.note(format!(
                "could not show it in {}'s window: {e}",
                dependent.label
            ));
        }
        store.record_event(&dependent, "upstream-killed", "", "blocked", &why)?;
        crate::notify::spawn(
            &crate::notify::Note {
                title: format!("orchestra: {} stays blocked", dependent.label),
                body: why.clone(),
            },
            &crate::notify::Fallback {
                command: None,
                tmux_socket: dependent.tmux_socket.clone(),
            },
        );
        out.line(why);
        stranded.push(dependent.label.clone());
    }
    Ok(stranded)
}
