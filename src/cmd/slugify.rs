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
        Some(repo) => free_label(ctx, &repo, &base)?,
    };
    out.line(chosen);
    Ok(())
}

/// `base`, or `base-2`, `base-3`…: the first that no live session of `repo` and no
/// `session/*` branch uses.
pub fn free_label(ctx: &Context, repo: &crate::git::Repo, base: &str) -> Result<String, Error> {
    let store = ctx.store()?;
    let mut used: Vec<String> = store
        .sessions(Some(&repo.id()), false)?
        .into_iter()
        .map(|s| s.label)
        .collect();
    used.extend(
        repo.branches_with_prefix("session/")?
            .into_iter()
            .filter_map(|b| b.strip_prefix("session/").map(str::to_string)),
    );
    Ok(label::first_free(base, |candidate| {
        used.iter().any(|u| u == candidate)
    }))
}
