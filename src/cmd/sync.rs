//! insights, dream, sync: parse the flags, find the repository and its manifest, and render
//! what the sync engine (`crate::sync`) does: progress notes on stderr, the files written
//! on stdout, and exit 1 at the end when a session or a synthesis failed.

use std::time::Duration;

use crate::cli::SyncArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
pub use crate::sync::Kind;
use crate::sync::{Deadline, Progress, Request, SyncError};

pub fn run(ctx: &Context, args: &SyncArgs, kind: Kind, out: &mut Output<'_>) -> Result<(), Error> {
    let limit = crate::duration::parse_timeout(&args.timeout).ok_or_else(|| {
        Error::BadInput(format!(
            "--timeout {:?} is not a duration such as \"90s\" or \"10m\"",
            args.timeout
        ))
    })?;
    if args.jobs == 0 {
        return Err(Error::BadInput("--jobs must be at least 1".into()));
    }
    let repo = crate::cmd::open_repo(args.manifest.repo.as_deref())?;
    let (manifest_path, manifest) =
        crate::session::load_manifest(&repo, args.manifest.config.as_deref(), true)?.ok_or_else(
            || Error::BadInput("no manifest (write orchestra.toml, or pass --config FILE)".into()),
        )?;
    let hosts = manifest
        .hosts
        .keys()
        .map(|name| Ok((name.clone(), crate::session::host_spec(&manifest, name)?)))
        .collect::<Result<_, Error>>()?;
    let plan = crate::sync::plan(Request {
        home: &ctx.home,
        root: repo.main_worktree().to_path_buf(),
        manifest_path: &manifest_path,
        manifest: &manifest,
        hosts,
        name: args.name.as_deref(),
        kind,
        deadline: Deadline {
            limit,
            shown: crate::duration::spell(limit),
        },
        jobs: args.jobs,
    })
    .map_err(error)?;
    if args.if_due {
        if let Some(age) =
            crate::sync::last_run_age(&ctx.home, kind).filter(|a| *a < plan.interval_secs)
        {
            out.line(format!(
                "{}: not due (last run {} ago; sync_interval {})",
                kind.command(),
                crate::duration::age(age),
                crate::duration::age(plan.interval_secs)
            ));
            return Ok(());
        }
    }
    let run_dir = crate::sync::start_run(&ctx.home, kind).map_err(error)?;
    out.note(format!(
        "{}: asking {} session(s), {} at a time, each at most {}; reports in {}",
        kind.command(),
        plan.targets.len(),
        plan.jobs,
        args.timeout.trim(),
        run_dir.display()
    ));

    let summary = crate::sync::run(&plan, &run_dir, |progress| {
        out.note(progress_line(progress));
    });
    for path in &summary.written {
        out.line(path.display().to_string());
    }
    if summary.failed.is_empty() {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "{} of {} failed: {}",
        summary.failed.len(),
        summary.runs,
        crate::paths::short_list(&summary.failed)
    )))
}

fn progress_line(progress: Progress<'_>) -> String {
    let ended = |what: &str, result: Result<(), String>, elapsed: Duration| match result {
        Ok(()) => format!("{what}: done in {}", crate::duration::spell(elapsed)),
        Err(reason) => format!("{what}: failed: {reason}"),
    };
    match progress {
        Progress::Asking { part, target } => format!(
            "{} {}: running in {}",
            part.name(),
            target.name,
            target.path_text()
        ),
        Progress::Asked {
            done,
            total,
            part,
            target,
            elapsed,
            result,
        } => ended(
            &format!("[{done}/{total}] {} {}", part.name(), target.name),
            result,
            elapsed,
        ),
        Progress::NothingToSynthesize(part) => format!(
            "{}: no session gave a report; nothing to synthesize",
            part.name()
        ),
        Progress::Synthesizing { part, reports, dir } => format!(
            "{}: synthesizing {reports} report(s) in {}",
            part.name(),
            dir.display()
        ),
        Progress::Synthesized {
            part,
            elapsed,
            result,
        } => ended(&format!("synthesis of {}", part.name()), result, elapsed),
        Progress::ContextFailed { path, error } => {
            format!("could not write {}: {error}", path.display())
        }
    }
}

/// The request's faults are bad input (exit 2); a missing prompt or a folder that cannot
/// be made is a refusal or a failure (exit 1).
fn error(e: SyncError) -> Error {
    match e {
        SyncError::Request(message) => Error::BadInput(message),
        e @ SyncError::PromptMissing(_) => Error::Refused(e.to_string()),
        SyncError::Io { context, source } => Error::Io { context, source },
    }
}
