//! `orchestra events`: the newest state and status changes, from the event log.

use crate::cli::EventsArgs;
use crate::cmd::{open_repo, render_table, Context, Output};
use crate::error::Error;

pub fn run(ctx: &Context, args: &EventsArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if let Some(label) = &args.label {
        crate::label::validate(label)?;
    }
    let repo = if args.all {
        None
    } else {
        Some(open_repo(args.repo.repo.as_deref())?.id())
    };
    let store = ctx.store()?;
    let events = store.events(repo.as_deref(), args.label.as_deref(), args.limit)?;
    if args.json {
        out.line(serde_json::to_string_pretty(&events).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let when = crate::duration::local_time(e.at.saturating_mul(1_000_000));
            vec![
                when,
                e.label.clone().unwrap_or_default(),
                e.kind.clone(),
                format!(
                    "{} → {}",
                    e.old.clone().unwrap_or_default(),
                    e.new.clone().unwrap_or_default()
                ),
                e.detail.clone().unwrap_or_default(),
            ]
        })
        .collect();
    for line in render_table(&["TIME", "LABEL", "KIND", "CHANGE", "DETAIL"], &rows) {
        out.line(line);
    }
    Ok(())
}
