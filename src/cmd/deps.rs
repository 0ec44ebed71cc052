//! `orchestra deps`: who waits for what.

use std::collections::HashMap;
use std::path::Path;

use crate::cli::{DepsArgs, DepsCommand};
use crate::cmd::{find_session, open_repo, Context, Output};
use crate::error::Error;
use crate::git::{artifact_kind, Repo};
use crate::state::{EdgeRefusal, Session, Store};

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
            validate_artifact(artifact)?;
            match store.add_dependency(&d.id, &u.id, artifact)? {
                Ok(()) => {
                    out.line(format!("{dependent} waits for {upstream}: {artifact}"));
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
            validate_artifact(artifact)?;
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
            let labels = labels_by_id(&store, &repo)?;
            let name = |id: &str| labels.get(id).cloned().unwrap_or_else(|| id.to_string());
            let edges = store.dependencies(Some(&repo.id()))?;
            let mut nodes: Vec<String> = labels.values().cloned().collect();
            nodes.sort();
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

/// An artifact locator must stay inside the upstream's worktree.
pub fn validate_artifact(artifact: &str) -> Result<(), Error> {
    let (_, name) = artifact_kind(artifact);
    if name.is_empty() {
        return Err(Error::BadInput("the artifact is empty".into()));
    }
    if Path::new(name)
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(Error::BadInput(format!(
            "artifact {artifact:?} leaves the session's worktree"
        )));
    }
    Ok(())
}

/// Whether `artifact` of the `upstream` session exists now.
pub fn artifact_ready(repo: &Repo, upstream: &Session, artifact: &str) -> Result<bool, Error> {
    let target = upstream
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    Ok(repo
        .find_artifact(
            artifact,
            Path::new(&upstream.worktree),
            &upstream.branch,
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
