//! `orchestra deps`: who waits for what.

use std::collections::HashMap;

use crate::cli::{DepsArgs, DepsCommand};
use crate::cmd::{open_repo, Context, Output};
use crate::deps::artifact_ready;
use crate::error::Error;
use crate::git::Repo;
use crate::session::find_session;
use crate::state::{EdgeRefusal, Status, Store};

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

fn labels_by_id(store: &Store, repo: &Repo) -> Result<HashMap<String, String>, Error> {
    Ok(store
        .sessions(Some(&repo.id()), true)?
        .into_iter()
        .map(|s| (s.id, s.label))
        .collect())
}
