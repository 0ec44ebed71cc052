//! The `--after` edges as a person reads and edits them by label: one added (refusals
//! named), who still waits for an upstream, an edge marked told, and the graph of a repo.

use std::collections::{HashMap, HashSet};

use crate::error::Error;
use crate::git::Repo;
use crate::state::{EdgeRefusal, Session, Status, Store};

/// Records "`dependent` waits for `upstream`'s `artifact`" (a checked artifact name);
/// a self edge, a duplicate or a cycle (named by label) is bad input.
pub fn add(
    store: &mut Store,
    repo: &Repo,
    dependent: &Session,
    upstream: &Session,
    artifact: &str,
) -> Result<(), Error> {
    crate::artifact::validate(artifact)?;
    let (d, u) = (&dependent.label, &upstream.label);
    match store.add_dependency(&dependent.id, upstream, artifact)? {
        Ok(()) => Ok(()),
        Err(EdgeRefusal::SelfEdge) => Err(Error::BadInput(format!("{d} cannot wait for itself"))),
        Err(EdgeRefusal::Duplicate) => Err(Error::BadInput(format!(
            "{d} already waits for {u}: {artifact}"
        ))),
        Err(EdgeRefusal::Cycle(ids)) => {
            let labels = labels_by_id(store, repo)?;
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

/// The labels of the sessions of `repo` still waiting for `upstream` (not yet told).
pub fn pending(store: &Store, repo: &Repo, upstream: &Session) -> Result<Vec<String>, Error> {
    let labels = labels_by_id(store, repo)?;
    let mut waiting: Vec<String> = store
        .dependencies(Some(&repo.id()))?
        .iter()
        .filter(|e| e.upstream == upstream.id && !e.notified)
        .filter_map(|e| labels.get(&e.dependent).cloned())
        .collect();
    waiting.dedup();
    Ok(waiting)
}

/// Marks `dependent`'s edges to `upstream` told; bad input when there is none.
pub fn mark_told(
    store: &Store,
    repo: &Repo,
    dependent: &Session,
    upstream: &Session,
) -> Result<(), Error> {
    let edges = store.dependencies(Some(&repo.id()))?;
    if !edges
        .iter()
        .any(|e| e.dependent == dependent.id && e.upstream == upstream.id)
    {
        return Err(Error::BadInput(format!(
            "{} does not wait for {}",
            dependent.label, upstream.label
        )));
    }
    store.mark_notified(&dependent.id, &upstream.id)?;
    Ok(())
}

/// One edge of the graph, its sessions by name.
pub struct GraphEdge {
    pub dependent: String,
    pub upstream: String,
    pub artifact: String,
    pub notified: bool,
}

/// Who waits for what in a repo: every node by name (sorted), every edge.
pub struct Graph {
    pub nodes: Vec<String>,
    pub edges: Vec<GraphEdge>,
}

/// The graph of `repo`: live sessions by label; merged ones are history, shown as
/// `LABEL (merged)` and only where an edge names them; a killed upstream as
/// `LABEL (killed)`.
pub fn graph(store: &Store, repo: &Repo) -> Result<Graph, Error> {
    let sessions = store.sessions(Some(&repo.id()), true)?;
    let edges = store.dependencies(Some(&repo.id()))?;
    let named: HashSet<&str> = edges
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
    let edges = edges
        .iter()
        .map(|e| GraphEdge {
            dependent: name(&e.dependent),
            upstream: name(&e.upstream),
            artifact: e.artifact.clone(),
            notified: e.notified,
        })
        .collect();
    Ok(Graph { nodes, edges })
}

fn labels_by_id(store: &Store, repo: &Repo) -> Result<HashMap<String, String>, Error> {
    Ok(store
        .sessions(Some(&repo.id()), true)?
        .into_iter()
        .map(|s| (s.id, s.label))
        .collect())
}
