//! The radar as commands use it: a pass over one repo now, the status line's part (the
//! pass itself runs detached), and the record's pairs as rows with labels.

use std::collections::HashMap;

use serde::Serialize;

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::radar::{self, Scan};
use crate::state::{Conflict, Session, Store};

/// One conflicting pair as `conflicts --json`, `list --json` and the tables show it.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The session's label.
    pub session: String,
    pub session_id: String,
    /// The other session's label, or the target branch.
    pub with: String,
    /// The other session's id; `None` for the target branch.
    pub with_id: Option<String>,
    /// Whether `with` is the session's target branch.
    pub target: bool,
    pub paths: Vec<String>,
    /// Whether uncommitted changes take part.
    pub uncommitted: bool,
    /// When the pair began to conflict (seconds since the epoch).
    pub since: i64,
}

/// The record's pairs as rows, labels resolved through `sessions`.
pub fn rows(conflicts: &[Conflict], sessions: &[Session]) -> Vec<Row> {
    let by_id: HashMap<&str, &Session> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    conflicts
        .iter()
        .filter_map(|c| {
            let session = by_id.get(c.session.as_str())?;
            Some(Row {
                session: session.label.clone(),
                session_id: c.session.clone(),
                with: c.other_name(&by_id),
                with_id: (!c.target).then(|| c.other.clone()),
                target: c.target,
                paths: c.paths.clone(),
                uncommitted: c.uncommitted,
                since: c.since,
            })
        })
        .collect()
}

/// The pairs `id` is in, each seen from its side: `with` is the other one.
pub fn rows_of(rows: &[Row], id: &str) -> Vec<Row> {
    rows.iter()
        .filter_map(|r| {
            if r.session_id == id {
                Some(r.clone())
            } else if r.with_id.as_deref() == Some(id) {
                Some(Row {
                    session: r.with.clone(),
                    session_id: id.to_string(),
                    with: r.session.clone(),
                    with_id: Some(r.session_id.clone()),
                    ..r.clone()
                })
            } else {
                None
            }
        })
        .collect()
}

/// A pass over `repo` now — after the one under way, if any — then its badges,
/// notifications and the status line's file.
pub fn scan_repo(ctx: &Context, store: &Store, repo: &Repo) -> Result<Scan, Error> {
    let _lock = crate::lock::exclusive(&radar::lock_path(&ctx.home))
        .map_err(Error::io("taking the radar lock"))?;
    let sessions = store.sessions(Some(&repo.id()), false)?;
    let mut reader = radar::Reader::full(&ctx.home);
    let scan = radar::scan(store, repo, &sessions, &mut reader)?;
    reader.save(&ctx.home);
    radar::show(&ctx.home, store, &scan.new)?;
    Ok(scan)
}

/// The radar's part of the status line (`⚠2`: conflicting pairs), from the file the last
/// pass wrote; a pass that is due (older than `every_secs`) starts in a detached process
/// unless one runs. Nothing when the radar is off (`every_secs` 0).
pub fn status_part(ctx: &Context, every_secs: i64) -> String {
    if every_secs <= 0 {
        return String::new();
    }
    let status = radar::load_status(&ctx.home);
    let now_ms = crate::state::now_micros() / 1000;
    let due = status
        .as_ref()
        .is_none_or(|s| now_ms - s.computed_ms >= every_secs * 1000);
    if due && !crate::lock::is_held(&radar::lock_path(&ctx.home)) {
        crate::notify::spawn_self_detached(
            &["radar".to_string(), "--background".to_string()],
            &[("ORCHESTRA_HOME", &ctx.home)],
        );
    }
    status.map(|s| s.segment()).unwrap_or_default()
}
