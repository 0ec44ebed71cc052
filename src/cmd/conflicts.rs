//! `orchestra conflicts` and `orchestra radar`: the conflict radar run and shown, and its
//! part of the status line (read from a file; the pass itself runs detached).

use std::collections::HashMap;

use serde::Serialize;

use crate::cli::{ConflictsArgs, RadarArgs};
use crate::cmd::{open_repo, render_table, Context, Output};
use crate::duration;
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
                with: radar::other_name(c, &by_id),
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

/// SESSION WITH PATHS SINCE.
pub fn table(rows: &[Row], out: &mut Output<'_>) {
    let now = crate::state::now();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.session.clone(),
                if r.target {
                    format!("{} (target)", r.with)
                } else {
                    r.with.clone()
                },
                format!(
                    "{}{}",
                    crate::paths::short_list(&r.paths),
                    if r.uncommitted { " (uncommitted)" } else { "" }
                ),
                duration::age(now - r.since),
            ]
        })
        .collect();
    for line in render_table(&["SESSION", "WITH", "PATHS", "SINCE"], &cells) {
        out.line(line);
    }
}

pub fn run(ctx: &Context, args: &ConflictsArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let scan = scan_repo(ctx, &store, &repo)?;
    let sessions = store.sessions(Some(&repo.id()), false)?;
    let rows = rows(&store.conflicts(Some(&repo.id()))?, &sessions);
    if args.json {
        out.line(serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    if rows.is_empty() {
        out.line(format!(
            "no conflicts among {} live session(s) and their target branches",
            scan.sessions
        ));
        return Ok(());
    }
    table(&rows, out);
    Ok(())
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

/// `orchestra radar`: a pass over every repo. With `--background` (the status line's
/// way) only when no pass runs, reading only the worktrees that may have changed, and
/// silent unless `--json`.
pub fn radar(ctx: &Context, args: &RadarArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let lock_path = radar::lock_path(&ctx.home);
    let lock = if args.background {
        crate::lock::try_exclusive(&lock_path)
    } else {
        crate::lock::exclusive(&lock_path).map(Some)
    }
    .map_err(Error::io("taking the radar lock"))?;
    if lock.is_none() {
        return Ok(());
    }
    let store = ctx.store()?;
    // In the background only what may have changed is read; asked by a person, all.
    let mut reader = if args.background {
        radar::Reader::hinted(&ctx.home)
    } else {
        radar::Reader::full(&ctx.home)
    };
    let passed = radar::scan_all(&store, &mut reader)
        .map_err(Error::from)
        .and_then(|pass| {
            reader.save(&ctx.home);
            let new: Vec<Conflict> = pass.0.iter().flat_map(|s| s.new.iter().cloned()).collect();
            radar::show(&ctx.home, &store, &new)?;
            Ok(pass)
        });
    let (scans, problems) = match passed {
        Ok(pass) => pass,
        Err(e) => {
            // Not due again at once: a failing pass must not be restarted on every tick.
            radar::touch_status(&ctx.home);
            return Err(e);
        }
    };
    if args.json {
        let json = serde_json::json!({ "repos": scans, "problems": problems });
        out.line(serde_json::to_string_pretty(&json).unwrap_or_default());
    } else if !args.background {
        if scans.is_empty() && problems.is_empty() {
            out.line("no live session to watch");
        }
        for s in &scans {
            out.line(format!(
                "{}: {} session(s) ({} read), {} pair(s): {} checked now, {} merged, {} conflicting",
                s.repo,
                s.sessions,
                s.read,
                s.pairs,
                s.checked,
                s.merged,
                s.conflicts.len()
            ));
        }
    }
    if !problems.is_empty() {
        return Err(Error::Refused(format!(
            "the radar could not read {}",
            problems.join("; ")
        )));
    }
    Ok(())
}

/// The radar's part of the status line (`⚠2`: conflicting pairs), from the file the last
/// pass wrote; a pass that is due (older than `every_secs`) starts in a detached process
/// unless one runs. Nothing when the radar is off (`every_secs` 0).
pub fn status_part(ctx: &Context, every_secs: i64) -> String {
    if every_secs <= 0 {
        return String::new();
    }
    let status = radar::load_status(&ctx.home);
    let now_ms = crate::health::now_micros() / 1000;
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
