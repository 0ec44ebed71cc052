//! `orchestra deps`: who waits for what (the edges' work is `deps::edges`).

use crate::cli::{DepsArgs, DepsCommand};
use crate::cmd::{open_repo, Context, Output};
use crate::deps::{artifact_ready, edges};
use crate::error::Error;
use crate::session::find_session;
use crate::state::Status;

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
            edges::add(&mut store, &repo, &d, &u, artifact)?;
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
            for waiting in edges::pending(&store, &repo, &u)? {
                out.line(waiting);
            }
            Ok(())
        }
        DepsCommand::Notified {
            dependent,
            upstream,
        } => {
            let d = find_session(&store, &repo, dependent)?;
            let u = find_session(&store, &repo, upstream)?;
            edges::mark_told(&store, &repo, &d, &u)
        }
        DepsCommand::Graph { json, dot } => {
            let graph = edges::graph(&store, &repo)?;
            if *json {
                let edges: Vec<serde_json::Value> = graph
                    .edges
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "dependent": e.dependent,
                            "upstream": e.upstream,
                            "artifact": e.artifact,
                            "notified": e.notified,
                        })
                    })
                    .collect();
                out.line(serde_json::json!({ "nodes": graph.nodes, "edges": edges }).to_string());
            } else if *dot {
                out.line("digraph orchestra {");
                for n in &graph.nodes {
                    out.line(format!("  {n:?};"));
                }
                for e in &graph.edges {
                    out.line(format!(
                        "  {:?} -> {:?} [label={:?}{}];",
                        e.dependent,
                        e.upstream,
                        e.artifact,
                        if e.notified { ", style=dashed" } else { "" }
                    ));
                }
                out.line("}");
            } else {
                for e in &graph.edges {
                    out.line(format!(
                        "{} waits for {}: {}{}",
                        e.dependent,
                        e.upstream,
                        e.artifact,
                        if e.notified { " (told)" } else { "" }
                    ));
                }
            }
            Ok(())
        }
    }
}
