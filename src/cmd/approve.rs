//! `orchestra approve` / `deny`: answer the menu or question on a session's screen, by the
//! label of the answer.

use crate::agent::menu::Answer;
use crate::cli::{ApproveArgs, DenyArgs};
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::session::answer::answer_named;
use crate::session::find_session;

pub fn approve(ctx: &Context, args: &ApproveArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let answer = if args.always {
        Answer::Always
    } else {
        Answer::Yes
    };
    let expect = args.expect.as_deref();
    if expect.is_some_and(|e| e.trim().is_empty()) {
        return Err(Error::BadInput(
            "--expect needs the question to approve (\"npm test\" or \"run: npm test\")".into(),
        ));
    }
    answer_menu(
        ctx,
        &args.label,
        args.repo.repo.as_deref(),
        answer,
        expect,
        out,
    )
}

pub fn deny(ctx: &Context, args: &DenyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    answer_menu(
        ctx,
        &args.label,
        args.repo.repo.as_deref(),
        Answer::No,
        None,
        out,
    )
}

fn answer_menu(
    ctx: &Context,
    label: &str,
    repo_dir: Option<&std::path::Path>,
    answer: Answer,
    expect: Option<&str>,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let repo = open_repo(repo_dir)?;
    let store = ctx.store()?;
    let session = find_session(&store, &repo, label)?;
    let chosen = answer_named(ctx, &session, answer, expect)?;
    out.line(format!("{label}: chose {chosen:?}"));
    Ok(())
}
