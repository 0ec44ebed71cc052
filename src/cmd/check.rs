//! `orchestra check`: the repo's `[worktree] check` run in a session's worktree, or in each
//! live candidate's of a group, its result recorded on the session.

use serde::Serialize;

use crate::cli::CheckArgs;
use crate::cmd::{open_repo, render_table, Context, Output};
use crate::error::Error;
use crate::group;
use crate::state::{CheckResult, Status};

#[derive(Serialize)]
struct Checked<'a> {
    label: &'a str,
    #[serde(flatten)]
    result: &'a CheckResult,
}

pub fn run(ctx: &Context, args: &CheckArgs, out: &mut Output<'_>) -> Result<(), Error> {
    crate::label::validate(&args.target)?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let (_, members) = group::members(&store, &repo, &args.target)?;
    group::refuse_remote(&members, "the check runs in")?;
    let live: Vec<_> = members
        .into_iter()
        .filter(|s| s.status != Status::Merged && !s.is_manifest())
        .collect();
    if live.is_empty() {
        return Err(Error::Refused(format!(
            "{} has no live session to check",
            args.target
        )));
    }
    let mut results = Vec::new();
    for s in &live {
        results.push((s.label.as_str(), group::check(&ctx.home, &store, &repo, s)?));
    }
    if args.json {
        let rows: Vec<Checked<'_>> = results
            .iter()
            .map(|(label, result)| Checked { label, result })
            .collect();
        out.line(serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into()));
    } else {
        let rows: Vec<Vec<String>> = results
            .iter()
            .map(|(label, r)| {
                vec![
                    label.to_string(),
                    if r.passed { "pass" } else { "FAIL" }.to_string(),
                    crate::duration::spell(std::time::Duration::from_millis(r.duration_ms)),
                    r.ended.clone(),
                    r.tail.lines().last().unwrap_or_default().to_string(),
                ]
            })
            .collect();
        for line in render_table(&["LABEL", "CHECK", "TIME", "ENDED", "LAST LINE"], &rows) {
            out.line(line);
        }
    }
    let failed: Vec<String> = results
        .iter()
        .filter(|(_, r)| !r.passed)
        .map(|(label, r)| format!("{label} ({})", r.ended))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "the check failed on {}: `orchestra list --json` keeps the end of its output",
            failed.join(", ")
        )))
    }
}
