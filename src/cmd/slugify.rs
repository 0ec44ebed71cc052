//! `orchestra slugify`: a title becomes a label that is free in this repo.

use crate::cli::SlugifyArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::label;

pub fn run(ctx: &Context, args: &SlugifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let base = label::slug(&args.title.join(" "))?;
    // Outside a repository there is nothing to collide with; the slug is still useful.
    let repo = match open_repo(args.repo.repo.as_deref()) {
        Ok(repo) => Some(repo),
        Err(_) if args.repo.repo.is_none() => None,
        Err(e) => return Err(e),
    };
    let chosen = match repo {
        None => base,
        Some(repo) => {
            let store = ctx.store()?;
            let repo_id = repo.id();
            let mut used: Vec<String> = store
                .sessions(Some(&repo_id), false)?
                .into_iter()
                .map(|s| s.label)
                .collect();
            used.extend(
                repo.branches_with_prefix("session/")?
                    .into_iter()
                    .filter_map(|b| b.strip_prefix("session/").map(str::to_string)),
            );
            label::first_free(&base, |candidate| used.iter().any(|u| u == candidate))
        }
    };
    out.line(chosen);
    Ok(())
}
