//! `orchestra conflicts` and `orchestra radar`: the conflict radar run and shown, and its
//! part of the status line (read from a file; the pass itself runs detached).

use crate::cli::{ConflictsArgs, RadarArgs};
use crate::cmd::{conflict_table, open_repo, Context, Output};
use crate::error::Error;
use crate::radar::{self, run::rows, run::scan_repo};
use crate::state::Conflict;

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
    conflict_table(&rows, out);
    Ok(())
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
