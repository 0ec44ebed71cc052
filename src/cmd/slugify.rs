//! `orchestra slugify`: a title becomes a label that is free in this repo.

use crate::cli::SlugifyArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::label;
use crate::session::free_label;

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
