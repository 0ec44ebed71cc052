//! Dependencies between sessions: edges "dependent waits for upstream's artifact".
//! Cycles are refused on insert, inside the same write transaction that inserts.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, TransactionBehavior};
use serde::Serialize;

use super::{now, Session, StateError, Store};

#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    pub dependent: String,
    pub upstream: String,
    /// The upstream's label when the edge was made: still known after it is killed.
    pub upstream_label: String,
    pub artifact: String,
    pub notified: bool,
    /// Whether the upstream's row is gone (killed): the edge can never come true.
    pub upstream_gone: bool,
}

/// Why an edge was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeRefusal {
    SelfEdge,
    Duplicate,
    /// The cycle the edge would close, as session ids: dependent → … → dependent.
    Cycle(Vec<String>),
}

impl Store {
    /// Adds "`dependent` waits for `upstream`'s `artifact`" unless it is a self edge, a
    /// duplicate, or closes a cycle.
    pub fn add_dependency(
        &mut self,
        dependent: &str,
        upstream: &Session,
        artifact: &str,
    ) -> Result<Result<(), EdgeRefusal>, StateError> {
        let upstream_label = upstream.label.as_str();
        let upstream = upstream.id.as_str();
        if dependent == upstream {
            return Ok(Err(EdgeRefusal::SelfEdge));
        }
        let path = self.path.clone();
        let sqlite = |source| StateError::Sqlite {
            path: path.clone(),
            source,
        };
        // IMMEDIATE: the cycle check and the insert see and write the same graph.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        let mut graph: HashMap<String, Vec<String>> = HashMap::new();
        let mut duplicate = false;
        {
            let mut stmt = tx
                .prepare("SELECT dependent, upstream, artifact FROM dependencies")
                .map_err(sqlite)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .map_err(sqlite)?;
            for row in rows {
                let (d, u, a) = row.map_err(sqlite)?;
                duplicate |= d == dependent && u == upstream && a == artifact;
                graph.entry(d).or_default().push(u);
            }
        }
        if duplicate {
            return Ok(Err(EdgeRefusal::Duplicate));
        }
        // The new edge dependent → upstream closes a cycle iff upstream already reaches
        // dependent.
        if let Some(mut cycle) = find_path(&graph, upstream, dependent) {
            cycle.insert(0, dependent.to_string());
            return Ok(Err(EdgeRefusal::Cycle(cycle)));
        }
        tx.execute(
            "INSERT INTO dependencies (dependent, upstream, upstream_label, artifact) VALUES (?1, ?2, ?3, ?4)",
            params![dependent, upstream, upstream_label, artifact],
        )
        .map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
        Ok(Ok(()))
    }

    /// Every edge whose two ends are sessions of `repo` (all repos when `None`).
    pub fn dependencies(&self, repo: Option<&str>) -> Result<Vec<Edge>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT d.dependent, d.upstream, d.upstream_label, d.artifact, \
                 d.notified_at IS NOT NULL, u.id IS NULL \
                 FROM dependencies d JOIN sessions s ON s.id = d.dependent \
                 LEFT JOIN sessions u ON u.id = d.upstream \
                 WHERE ?1 IS NULL OR s.repo = ?1 ORDER BY d.rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![repo], |r| {
                Ok(Edge {
                    dependent: r.get(0)?,
                    upstream: r.get(1)?,
                    upstream_label: r.get(2)?,
                    artifact: r.get(3)?,
                    notified: r.get(4)?,
                    upstream_gone: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// For each session of `repo` (every repo when `None`) still waiting on an upstream
    /// that was killed: "api killed" (list and health show it beside the status).
    pub fn stranded_reasons(
        &self,
        repo: Option<&str>,
    ) -> Result<HashMap<String, String>, StateError> {
        let mut reasons: HashMap<String, String> = HashMap::new();
        for e in self.dependencies(repo)? {
            if e.upstream_gone && !e.notified {
                let text = format!("{} killed", e.upstream_label);
                reasons
                    .entry(e.dependent)
                    .and_modify(|r| {
                        r.push_str(", ");
                        r.push_str(&text);
                    })
                    .or_insert(text);
            }
        }
        Ok(reasons)
    }

    /// Records that `dependent` was told about `upstream`; true the first time only.
    pub fn mark_notified(&self, dependent: &str, upstream: &str) -> Result<bool, StateError> {
        let changed = self
            .conn
            .execute(
                "UPDATE dependencies SET notified_at = ?3 WHERE dependent = ?1 AND upstream = ?2 AND notified_at IS NULL",
                params![dependent, upstream, now()],
            )
            .map_err(|e| self.err(e))?;
        Ok(changed > 0)
    }
}

/// A path from `from` to `to` along the edges of `graph`, if any (both ends included).
fn find_path(graph: &HashMap<String, Vec<String>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut seen = HashSet::new();
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    while let Some((node, path)) = stack.pop() {
        if node == to {
            return Some(path);
        }
        if !seen.insert(node.clone()) {
            continue;
        }
        for next in graph.get(&node).into_iter().flatten() {
            let mut p = path.clone();
            p.push(next.clone());
            stack.push((next.clone(), p));
        }
    }
    None
}
