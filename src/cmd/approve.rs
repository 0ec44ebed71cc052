//! `orchestra approve` / `deny`: answer the menu or question on a session's screen, by the
//! label of the answer.

use crate::agent::menu::Answer;
use crate::cli::{ApproveArgs, DenyArgs};
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::session::answer::answer_session;
use crate::session::find_session;

pub fn approve(ctx: &Context, args: &ApproveArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let answer = if args.always {
        Answer::Always
    } else {
        Answer::Yes
    };
    answer_menu(ctx, &args.label, args.repo.repo.as_deref(), answer, out)
}

pub fn deny(ctx: &Context, args: &DenyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    answer_menu(ctx, &args.label, args.repo.repo.as_deref(), Answer::No, out)
}

fn answer_menu(
    ctx: &Context,
    label: &str,
    repo_dir: Option<&std::path::Path>,
    answer: Answer,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let repo = open_repo(repo_dir)?;
    let store = ctx.store()?;
    let session = find_session(&store, &repo, label)?;
    let chosen = answer_session(ctx, &session, answer)?;
    out.line(format!("{label}: chose {chosen:?}"));
    Ok(())
}
