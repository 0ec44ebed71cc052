//! `orchestra kill`: close a session without losing work. Its window (only ours) and
//! worktree go; its branch is deleted only if merged, else archived under a new name.

use crate::cli::KillArgs;
use crate::cmd::{
    close_window, find_branch_session, open_repo, settle_branch, short_list, Context, Output,
};
use crate::error::Error;
use crate::git;

pub fn run(ctx: &Context, args: &KillArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let session = find_branch_session(&store, &repo, &args.label, "kill")?;
    let worktree = std::path::Path::new(&session.worktree);
    let has_worktree = worktree.exists();

    if has_worktree && !args.force {
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() {
            return Err(Error::Refused(format!(
                "session {} has uncommitted changes ({}): commit them, or run `orchestra kill {} --force` to save them as a WIP commit on {}",
                session.label,
                short_list(&dirty),
                session.label,
                session.branch
            )));
        }
    }

    close_window(&session, out);

    if has_worktree {
        // Checked again now that the agent is stopped: whatever it wrote meanwhile is kept.
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() {
            let oid = git::commit_all(
                worktree,
                &format!(
                    "WIP: uncommitted work of session {}\n\nSaved by `orchestra kill` so that nothing is lost.",
                    session.label
                ),
            )?;
            out.line(format!(
                "saved {} uncommitted path(s) as WIP commit {} on {}",
                dirty.len(),
                &oid.to_string()[..10],
                session.branch
            ));
        }
        repo.remove_worktree(worktree)?;
        // The shared `<repo>.worktrees` folder goes with its last worktree.
        if let Some(root) = worktree.parent() {
            let _ = std::fs::remove_dir(root);
        }
    } else {
        repo.prune_worktrees()?;
    }

    let into = session
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    settle_branch(&repo, &session, into.as_deref(), out)?;
    store.delete_session(&session, "killed")?;
    crate::cmd::deps::upstream_removed(ctx, &store, &session, out)?;
    let _ = std::fs::remove_dir_all(crate::paths::session_dir(&ctx.home, &session.id));
    out.line(format!("killed {}", session.label));
    Ok(())
}
