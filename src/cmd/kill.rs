//! `orchestra kill`: close a session without losing work. Its window (only ours) and
//! worktree go; its branch is deleted only if merged, else archived under a new name.

use std::path::Path;

use crate::cli::KillArgs;
use crate::cmd::{open_repo, short_list, Context, Output};
use crate::error::Error;
use crate::fault;
use crate::git::{self, Repo};
use crate::session::remove::{
    check_own_worktree, check_submodules, forget, remove_worktree_keeping_work, Teardown,
};
use crate::session::{close_window, find_branch_session};

pub fn run(ctx: &Context, args: &KillArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    let store = ctx.store()?;
    let session = find_branch_session(&store, &repo, &args.label, "kill")?;
    let worktree = Path::new(&session.worktree);

    check_own_worktree(&repo, worktree, &session.label, &session.branch)?;
    if worktree.exists() && !args.force {
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() {
            let on =
                Repo::checked_out_branch(worktree)?.unwrap_or_else(|| "its detached HEAD".into());
            return Err(Error::Refused(format!(
                "session {} has uncommitted changes ({}): commit them, or run `orchestra kill {} --force` to save them as a WIP commit on {on}",
                session.label,
                short_list(&dirty),
                session.label,
            )));
        }
    }
    let keep_it = format!("run `orchestra kill {} --force`", session.label);
    check_submodules(
        worktree,
        &session.label,
        (!args.force).then_some(keep_it.as_str()),
    )?;

    fault::point("kill");
    // Until the row is gone, the gone window is no agent that exited.
    let _closing = crate::lock::closing(&ctx.home, &session.id)
        .map_err(Error::io("taking the session's closing lock"))?;
    close_window(&session, out);
    fault::point("kill");
    // Checked again now that the agent is stopped: whatever it wrote meanwhile is kept.
    remove_worktree_keeping_work(
        &repo,
        worktree,
        &session.label,
        &session.branch,
        &format!(
            "WIP: uncommitted work of session {}\n\nSaved by `orchestra kill` so that nothing is lost.",
            session.label
        ),
        "kill",
        Some(Teardown {
            home: &ctx.home,
            session: &session,
        }),
        out,
    )?;
    let settled = forget(ctx, &repo, &store, &session, "killed", "kill", out)?;
    match settled.merged_elsewhere() {
        Some(how) => {
            let into = session
                .base_branch
                .clone()
                .or_else(|| repo.current_branch())
                .unwrap_or_default();
            out.line(format!(
                "killed {} (merged: {})",
                session.label,
                how.describe(&into)
            ));
        }
        None => out.line(format!("killed {}", session.label)),
    }
    Ok(())
}
